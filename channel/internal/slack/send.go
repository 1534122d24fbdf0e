package slack

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// Slack's limits, in characters as UTF-16 counts them: MaxText is the
// most a section's text takes (the text, the context's channel name and
// the notification's text are cut to it), MaxTitle the most a header
// takes (the title is cut to it, so that it stays a heading).
const (
	MaxText  = 3000
	MaxTitle = 150
)

// ok is the body of Slack's success.
const ok = "ok"

type body struct {
	Text   string  `json:"text"`
	Blocks []block `json:"blocks"`
}

type block struct {
	Type     string  `json:"type"`
	Text     *text   `json:"text,omitempty"`
	Elements []*text `json:"elements,omitempty"`
}

// text is a Block Kit text object.
type text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func mrkdwn(s string) *text { return &text{Type: "mrkdwn", Text: s} }

// Target is the webhook's URL.
func (Kind) Target(name, address, secret string) notify.Target {
	return notify.Target{Name: name, Address: address, Secret: secret}
}

// Send POSTs m to a Slack incoming webhook as Block Kit JSON: the title in
// bold, the text, and the channel's name in a context block; the top-level
// text is the notification's. Success is 200 with the body "ok".
func (Kind) Send(ctx context.Context, s *notify.Sender, t notify.Target, m notify.Message) (notify.Reply, error) {
	if err := s.CheckHTTP("slack"); err != nil {
		return notify.Reply{}, err
	}
	u, err := notify.ParseURL(t.Address)
	if err != nil {
		return notify.Reply{}, err
	}
	b, err := notify.Marshal(message(t.Name, m))
	if err != nil {
		return notify.Reply{}, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	r, f := s.Post(ctx, deskkit.Textf("Slack"), u, h, b)
	if f != nil {
		explain(f, r)
		return notify.Answered(u, h, b, r), f
	}
	if strings.TrimSpace(string(r.Body)) != ok {
		f := &notify.Failure{Status: r.Status}
		f.Reason = deskkit.Textf("Slack answered %s but not \"ok\": is the address a Slack incoming webhook?", statusText(r.Status))
		return notify.Answered(u, h, b, r), f
	}
	return notify.Answered(u, h, b, r), nil
}

// message is m as the webhook's JSON for the channel named name.
func message(name string, m notify.Message) body {
	title := strings.TrimSpace(m.Title)
	b := body{
		Text:   escapeCut(notify.Join(title, m.Text), MaxText),
		Blocks: []block{{Type: "section", Text: mrkdwn("*" + escapeCut(title, MaxTitle) + "*")}},
	}
	if strings.TrimSpace(m.Text) != "" {
		b.Blocks = append(b.Blocks, block{Type: "section", Text: mrkdwn(escapeCut(m.Text, MaxText))})
	}
	if strings.TrimSpace(name) != "" {
		b.Blocks = append(b.Blocks, block{Type: "context", Elements: []*text{mrkdwn(escapeCut(name, MaxText))}})
	}
	return b
}

// escapes are the characters Slack's text must escape: it reads <...> as
// a link or mention, and & as the start of an escape.
var escapes = map[rune]string{'&': "&amp;", '<': "&lt;", '>': "&gt;"}

// width is how many UTF-16 code units r takes escaped.
func width(r rune) int {
	if e, ok := escapes[r]; ok {
		return len(e)
	}
	if utf16.RuneLen(r) == 2 {
		return 2
	}
	return 1
}

// escapeCut is s escaped, and if that is longer than limit UTF-16 code
// units, its longest prefix that, with "…" after it, is at most limit:
// cut between characters, never inside an escape.
func escapeCut(s string, limit int) string {
	n := 0
	for _, r := range s {
		n += width(r)
	}
	var b strings.Builder
	if n <= limit {
		for _, r := range s {
			write(&b, r)
		}
		return b.String()
	}
	n = 0
	for _, r := range s {
		w := width(r)
		if n+w > limit-1 { // "…" is one unit
			break
		}
		write(&b, r)
		n += w
	}
	b.WriteString("…")
	return b.String()
}

func write(b *strings.Builder, r rune) {
	if e, ok := escapes[r]; ok {
		b.WriteString(e)
		return
	}
	b.WriteRune(r)
}

// explain says in f's reason what Slack's error word in r's body means;
// a redirect's reason, or one without a reply, stays notify's.
func explain(f *notify.Failure, r *safehttp.Reply) {
	if r == nil || r.Status < 400 {
		return
	}
	word := notify.Quote(string(r.Body))
	f.Errmsg = word
	status := statusText(r.Status)
	switch word {
	case "":
		// notify's "Slack answered 500 Internal Server Error" says it all.
	case "invalid_payload", "no_text", "invalid_blocks", "invalid_blocks_format", "too_many_attachments", "user_not_found":
		f.Reason = deskkit.Textf("Slack answered %s (%s): it refused the message as malformed, and will refuse it again", status, word)
	case "action_prohibited":
		f.Reason = deskkit.Textf("Slack answered %s (%s): an admin of the workspace has restricted posting to the webhook's Slack channel", status, word)
	case "posting_to_general_channel_denied":
		f.Reason = deskkit.Textf("Slack answered %s (%s): only some members may post to the workspace's general Slack channel", status, word)
	case "no_service", "no_service_id", "no_team", "team_disabled", "invalid_token":
		f.Reason = deskkit.Textf("Slack answered %s (%s): the incoming webhook was removed, or its URL is wrong", status, word)
	case "channel_not_found":
		f.Reason = deskkit.Textf("Slack answered %s (%s): the webhook's Slack channel was deleted", status, word)
	case "channel_is_archived":
		f.Reason = deskkit.Textf("Slack answered %s (%s): the webhook's Slack channel is archived", status, word)
	default:
		f.Reason = deskkit.Textf("Slack answered %s: %s", status, word)
	}
}

// statusText is "404 Not Found", or the bare number for a status without
// a name.
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return strconv.Itoa(status) + " " + t
	}
	return strconv.Itoa(status)
}
