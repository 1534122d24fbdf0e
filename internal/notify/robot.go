package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// MaxWeComBytes is the most a WeCom robot takes in a markdown message's
// content; longer content is cut to it.
const MaxWeComBytes = 4096

// MaxDingTalkBytes is the most sent in a DingTalk markdown message's text;
// DingTalk refuses longer messages, so longer text is cut to it.
const MaxDingTalkBytes = 20000

// The robots' errcodes that Failure explains or retries.
const (
	errcodeBusy            = -1     // both robots: system busy, try again
	errcodeWeComRate       = 45009  // WeCom: over 20 messages a minute
	errcodeDingTalkRefused = 310000 // DingTalk: keyword, signature or timestamp refused
	errcodeDingTalkRate    = 130101 // DingTalk: over 20 messages a minute
)

// robotRateWindow is the window of both robots' limit of 20 messages: a
// retry before it has passed is refused again.
const robotRateWindow = time.Minute

type weComBody struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Content string `json:"content"`
	} `json:"markdown"`
}

type dingTalkBody struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	} `json:"markdown"`
}

// sendWeCom POSTs m as a WeCom group robot's markdown message. Success is
// a 2xx reply that is JSON with errcode 0: WeCom answers 200 to refusals.
func (s *Sender) sendWeCom(ctx context.Context, t Target, m Message) (Reply, error) {
	if err := s.checkHTTP(t); err != nil {
		return Reply{}, err
	}
	u, err := parseURL(t.Address)
	if err != nil {
		return Reply{}, err
	}
	var b weComBody
	b.MsgType = "markdown"
	b.Markdown.Content = cut(join("**"+m.Title+"**", m.Text), MaxWeComBytes)
	return s.postRobot(ctx, deskkit.Textf("WeCom"), u, b, explainWeCom)
}

// sendDingTalk POSTs m as a DingTalk custom robot's markdown message,
// signed when t.Secret is set. The channel's name leads title and text, so
// that a robot in keyword mode finds the name if it is the keyword.
// Success is errcode 0.
func (s *Sender) sendDingTalk(ctx context.Context, t Target, m Message) (Reply, error) {
	if err := s.checkHTTP(t); err != nil {
		return Reply{}, err
	}
	u, err := parseURL(t.Address)
	if err != nil {
		return Reply{}, err
	}
	if t.Secret != "" {
		if strings.ContainsFunc(t.Secret, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			return Reply{}, deskkit.Invalid("secret", "must be printable ASCII")
		}
		u.RawQuery = dingTalkSign(u.RawQuery, t.Secret, s.now())
	}
	title := "[" + t.Name + "] " + m.Title
	var b dingTalkBody
	b.MsgType = "markdown"
	b.Markdown.Title = title
	b.Markdown.Text = cut(join("#### "+title, m.Text), MaxDingTalkBytes)
	return s.postRobot(ctx, deskkit.Textf("DingTalk"), u, b, explainDingTalk)
}

// dingTalkSign appends DingTalk's signature to the query rawQuery, which
// keeps its own order and spelling: timestamp in Unix milliseconds, and
// sign, the URL-escaped base64 HMAC-SHA256 of timestamp + "\n" + secret
// keyed by the secret. DingTalk refuses a timestamp more than an hour
// off its own clock.
func dingTalkSign(rawQuery, secret string, now time.Time) string {
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	q := "timestamp=" + ts + "&sign=" + url.QueryEscape(sig)
	if rawQuery == "" {
		return q
	}
	return rawQuery + "&" + q
}

// robotReply is both robots' answer.
type robotReply struct {
	Errcode *int   `json:"errcode"`
	Errmsg  string `json:"errmsg"`
}

// explainer fills in the Reason and retry fields of f, a robot's refusal
// with its Errcode and Errmsg set.
type explainer func(f *Failure)

// postRobot sends body to a robot at u and reads its answer.
func (s *Sender) postRobot(ctx context.Context, who deskkit.Text, u *url.URL, body any, explain explainer) (Reply, error) {
	b, err := marshal(body)
	if err != nil {
		return Reply{}, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	r, f := s.post(ctx, who, u, h, b)
	if f != nil {
		return reply(r), f
	}
	return reply(r), robotFailure(who, r, explain)
}

// robotFailure reads a robot's 2xx reply: nil for errcode 0, the failure
// otherwise, also for a reply that is not a robot's JSON (the address is
// some other web page, which answers 200 to anything).
func robotFailure(who deskkit.Text, r *safehttp.Reply, explain explainer) error {
	var rr robotReply
	if r.Truncated || json.Unmarshal(r.Body, &rr) != nil || rr.Errcode == nil {
		f := &Failure{Status: r.Status}
		f.say(deskkit.Textf("%s answered %s but not with a robot's JSON errcode: is the address a %s robot?", who, statusText(r.Status), who))
		return f
	}
	if *rr.Errcode == 0 {
		return nil
	}
	f := &Failure{Status: r.Status, Errcode: *rr.Errcode, Errmsg: clean(rr.Errmsg, maxErrmsgRunes)}
	explain(f)
	return f
}

// errcodeText is "errcode 93000: invalid webhook url".
func errcodeText(f *Failure) string {
	if f.Errmsg == "" {
		return "errcode " + strconv.Itoa(f.Errcode)
	}
	return "errcode " + strconv.Itoa(f.Errcode) + ": " + f.Errmsg
}

func explainWeCom(f *Failure) {
	switch f.Errcode {
	case errcodeWeComRate:
		f.say(deskkit.Textf("WeCom refused the message: a robot may send at most 20 messages a minute (%s)", errcodeText(f)))
		f.Retryable, f.RetryAfter = true, robotRateWindow
	case errcodeBusy:
		f.say(deskkit.Textf("WeCom is busy (%s)", errcodeText(f)))
		f.Retryable = true
	default:
		f.say(deskkit.Textf("WeCom answered %s", errcodeText(f)))
	}
}

func explainDingTalk(f *Failure) {
	switch f.Errcode {
	case errcodeDingTalkRefused:
		f.say(deskkit.Textf("DingTalk refused the message (%s): the robot's security settings "+
			"want a keyword the message lacks, a signature with another secret, or a clock closer to DingTalk's", errcodeText(f)))
	case errcodeDingTalkRate:
		f.say(deskkit.Textf("DingTalk refused the message: a robot may send at most 20 messages a minute (%s)", errcodeText(f)))
		f.Retryable, f.RetryAfter = true, robotRateWindow
	case errcodeBusy:
		f.say(deskkit.Textf("DingTalk is busy (%s)", errcodeText(f)))
		f.Retryable = true
	default:
		f.say(deskkit.Textf("DingTalk answered %s", errcodeText(f)))
	}
}

// join is the heading, and the text after a blank line when there is any.
func join(heading, text string) string {
	if strings.TrimSpace(text) == "" {
		return heading
	}
	return heading + "\n\n" + text
}

// cut returns s if it has at most limit bytes, and otherwise its longest
// prefix that, with "…" after it, has at most limit bytes and ends on a
// rune boundary.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const more = "…"
	n := limit - len(more)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + more
}
