package slack_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
)

// hookPath is the path of the fake's one incoming webhook, shaped as
// Slack's: team, bot and token.
const hookPath = "/services/T0123ABCD/B0456EFGH/aBcDeFgHiJkLmNoPqRsTuVwX"

// Slack's limits, as its Block Kit reference gives them, in characters
// (counted here as UTF-16 code units, the stricter count).
const (
	maxSectionText = 3000
	maxHeaderText  = 150
	maxContextText = 3000
	maxContextElem = 10
	maxBlocks      = 50
	maxTopText     = 40000
)

// fakeSlack is a loopback Slack incoming webhook: it checks a request as
// Slack does (its path, a POST of JSON, a text or blocks, block and text
// kinds it knows, its length limits) and answers as Slack does, 200 "ok"
// or a status with an error word in plain text. What Slack takes but
// would read otherwise than meant (an unescaped <, > or &, which it reads
// as a link, a mention or an escape) fails the test.
type fakeSlack struct {
	*kindtest.FarEnd
	// Hook is the webhook's URL.
	Hook string
}

func startSlack(t *testing.T) *fakeSlack {
	t.Helper()
	f := &fakeSlack{}
	f.FarEnd = kindtest.StartFarEnd(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
		status, word := slackCheck(t, r)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, word)
	})
	f.Hook = f.URL + hookPath
	return f
}

// slackMessage is what Slack reads of a webhook's JSON; a field it does
// not know is refused, so that a typo in deskkit's shows.
type slackMessage struct {
	Text   *string           `json:"text"`
	Blocks []json.RawMessage `json:"blocks"`
}

type slackBlock struct {
	Type     string       `json:"type"`
	Text     *slackText   `json:"text"`
	Elements []*slackText `json:"elements"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// slackCheck is Slack's answer to r: its status and body.
func slackCheck(t *testing.T, r *http.Request) (int, string) {
	if r.URL.Path != hookPath || r.URL.RawQuery != "" {
		return http.StatusNotFound, "no_service"
	}
	if r.Method != http.MethodPost {
		return http.StatusBadRequest, "invalid_payload"
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return http.StatusBadRequest, "invalid_payload"
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return http.StatusBadRequest, "invalid_payload"
	}
	var m slackMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return http.StatusBadRequest, "invalid_payload"
	}
	if (m.Text == nil || *m.Text == "") && len(m.Blocks) == 0 {
		return http.StatusBadRequest, "no_text"
	}
	if m.Text != nil {
		if units(*m.Text) > maxTopText {
			return http.StatusBadRequest, "msg_too_long"
		}
		checkEscaped(t, "text", *m.Text)
	}
	if len(m.Blocks) > maxBlocks {
		return http.StatusBadRequest, "invalid_blocks"
	}
	for _, rb := range m.Blocks {
		var b slackBlock
		dec := json.NewDecoder(bytes.NewReader(rb))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return http.StatusBadRequest, "invalid_blocks_format"
		}
		if !blockOK(t, b) {
			return http.StatusBadRequest, "invalid_blocks"
		}
	}
	return http.StatusOK, "ok"
}

// blockOK checks a block as Slack does.
func blockOK(t *testing.T, b slackBlock) bool {
	switch b.Type {
	case "section":
		return b.Elements == nil && textOK(t, b.Text, maxSectionText, "mrkdwn", "plain_text")
	case "header":
		return b.Elements == nil && textOK(t, b.Text, maxHeaderText, "plain_text")
	case "context":
		if b.Text != nil || len(b.Elements) == 0 || len(b.Elements) > maxContextElem {
			return false
		}
		for _, e := range b.Elements {
			if !textOK(t, e, maxContextText, "mrkdwn", "plain_text") {
				return false
			}
		}
		return true
	case "divider":
		return b.Text == nil && b.Elements == nil
	}
	return false
}

// textOK checks a text object: one of the kinds, not empty, at most limit
// characters; a mrkdwn one must be escaped.
func textOK(t *testing.T, x *slackText, limit int, kinds ...string) bool {
	if x == nil || x.Text == "" || units(x.Text) > limit {
		return false
	}
	for _, k := range kinds {
		if x.Type == k {
			if k == "mrkdwn" {
				checkEscaped(t, "a mrkdwn text", x.Text)
			}
			return true
		}
	}
	return false
}

// checkEscaped fails the test when s holds what Slack reads as markup
// deskkit never means: <...> (a link, or a mention such as <!channel>)
// and an & that starts none of the three escapes.
func checkEscaped(t *testing.T, what, s string) {
	t.Helper()
	bad := strings.ContainsAny(s, "<>")
	for i := range s {
		if s[i] == '&' && !strings.HasPrefix(s[i:], "&amp;") && !strings.HasPrefix(s[i:], "&lt;") && !strings.HasPrefix(s[i:], "&gt;") {
			bad = true
		}
	}
	if bad {
		t.Errorf("Slack would read %s %q as markup: <, > and & must be escaped", what, s)
	}
}

// units is the length of s in UTF-16 code units.
func units(s string) int { return len(utf16.Encode([]rune(s))) }
