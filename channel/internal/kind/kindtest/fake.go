package kindtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Fake is a kind's far end as its service behaves, for the conformance
// suite (channel/conformance_test.go), which drives every kind that sends
// over HTTP the same way: add, list, replace, test, deliver, a refusal,
// and the hook removed.
type Fake struct {
	// Type is the kind's canonical type.
	Type string
	// Address is the address of a channel whose far end is at base
	// ("http://127.0.0.1:PORT").
	Address func(base string) string
	// Secret is a secret a client gives a channel of the kind; "" for a
	// kind that takes none.
	Secret string
	// Check tells whether the service takes a message: nil, or why not.
	// secret is the channel's signing secret (the one given, or the one
	// deskkit made), now the clock the sender signs with, and want what
	// the message must hold.
	Check func(r *http.Request, body []byte, secret string, now time.Time, want Want) error
	// Accept is the service's answer to a message it takes; Reject its
	// answer to one Check refuses.
	Accept, Reject Reply
	// Gone is the service's answer once the hook was removed, and
	// Disables whether the channel is disabled for it.
	Gone     Reply
	Disables bool
}

// Want is what a message must hold: a chat message its title, a webhook
// its event type.
type Want struct{ Title, Type string }

// Reply is an HTTP answer.
type Reply struct {
	Status int
	Body   string
}

// FakeServer is a Fake running on loopback: a real HTTP server that checks
// each request as the service does.
type FakeServer struct {
	URL string

	fake   Fake
	now    func() time.Time
	mu     sync.Mutex
	secret string
	gone   bool
	taken  int
	faults []error
	want   Want
}

// Start runs f on loopback; now is the clock the sender signs with.
func (f Fake) Start(t *testing.T, now func() time.Time) *FakeServer {
	t.Helper()
	s := &FakeServer{fake: f, now: now}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *FakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	answer := s.fake.Accept
	switch {
	case s.gone:
		answer = s.fake.Gone
	case err != nil:
		s.faults = append(s.faults, err)
		answer = s.fake.Reject
	default:
		if err := s.fake.Check(r, body, s.secret, s.now(), s.want); err != nil {
			s.faults = append(s.faults, err)
			answer = s.fake.Reject
		} else {
			s.taken++
		}
	}
	w.Header().Set("Content-Type", contentType(answer.Body))
	w.WriteHeader(answer.Status)
	_, _ = io.WriteString(w, answer.Body)
}

func contentType(body string) string {
	if strings.HasPrefix(body, "{") {
		return "application/json"
	}
	return "text/plain; charset=utf-8"
}

// Expect sets the channel's signing secret and what the next messages
// must hold.
func (s *FakeServer) Expect(secret string, want Want) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secret, s.want = secret, want
}

// SetGone makes the server answer as the service does for a removed hook.
func (s *FakeServer) SetGone(gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = gone
}

// Taken is how many messages the server took, and why it refused the
// others.
func (s *FakeServer) Taken() (int, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken, append([]error(nil), s.faults...)
}

// Fakes are the far ends of the kinds that send over HTTP, in the
// registry's order; e-mail has its SMTP server (internal/smtptest).
var Fakes = []Fake{WebhookFake, WeComFake, DingTalkFake, FeishuFake, SlackFake}

// WebhookFake is a Standard Webhooks receiver: it checks the signature
// with the official library, and answers 410 once it is gone.
var WebhookFake = Fake{
	Type:    "WEBHOOK",
	Address: func(base string) string { return base + "/hooks/deskkit" },
	Check: func(r *http.Request, body []byte, secret string, now time.Time, want Want) error {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return err
		}
		// The library checks the timestamp against the wall clock; the
		// tests' clock is fixed, so the age is checked here against it.
		ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if err != nil || time.Unix(ts, 0).Sub(now).Abs() > 5*time.Minute {
			return fmt.Errorf("webhook-timestamp %q not within 5 minutes of %v", r.Header.Get("webhook-timestamp"), now)
		}
		if err := wh.VerifyIgnoringTimestamp(body, r.Header); err != nil {
			return fmt.Errorf("signature: %w", err)
		}
		var ev struct{ Type string }
		if err := json.Unmarshal(body, &ev); err != nil || ev.Type != want.Type {
			return fmt.Errorf("the event's type is not %q: %s", want.Type, body)
		}
		return nil
	},
	Accept: Reply{204, ""}, Reject: Reply{400, "bad signature"},
	Gone: Reply{410, ""}, Disables: true,
}

// WeComFake is a WeCom group robot: the key in the query, a markdown
// message; it answers errcode 93000 once the robot was removed.
var WeComFake = Fake{
	Type:    "ENTERPRISE_CHAT",
	Address: func(base string) string { return base + "/cgi-bin/webhook/send?key=693a91f6-7xxx" },
	Check: func(r *http.Request, body []byte, _ string, _ time.Time, want Want) error {
		if r.URL.Path != "/cgi-bin/webhook/send" || r.URL.Query().Get("key") == "" {
			return errors.New("no robot at " + r.URL.Path)
		}
		var b struct {
			MsgType  string `json:"msgtype"`
			Markdown struct {
				Content string `json:"content"`
			} `json:"markdown"`
		}
		if err := json.Unmarshal(body, &b); err != nil || b.MsgType != "markdown" || len(b.Markdown.Content) > 4096 {
			return fmt.Errorf("not a markdown message of at most 4096 bytes: %s", body)
		}
		return contains(b.Markdown.Content, want.Title)
	},
	Accept: Reply{200, `{"errcode":0,"errmsg":"ok"}`}, Reject: Reply{200, `{"errcode":40008,"errmsg":"invalid message type"}`},
	Gone: Reply{200, `{"errcode":93000,"errmsg":"invalid webhook url"}`},
}

// DingTalkFake is a DingTalk custom robot with signing on: it checks the
// timestamp is within an hour of its clock and the sign, and answers
// 310000 otherwise; it answers errcode 300001 once the robot was removed.
var DingTalkFake = Fake{
	Type:    "WORKPLACE_CHAT",
	Address: func(base string) string { return base + "/robot/send?access_token=tok3n" },
	Secret:  "SECd1ngta1k0123456789",
	Check: func(r *http.Request, body []byte, secret string, now time.Time, want Want) error {
		q := r.URL.Query()
		if r.URL.Path != "/robot/send" || q.Get("access_token") == "" {
			return errors.New("no robot at " + r.URL.Path)
		}
		ms, err := strconv.ParseInt(q.Get("timestamp"), 10, 64)
		if err != nil || time.UnixMilli(ms).Sub(now).Abs() > time.Hour {
			return fmt.Errorf("timestamp %q not within an hour of %v", q.Get("timestamp"), now)
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(q.Get("timestamp") + "\n" + secret))
		if !hmac.Equal([]byte(q.Get("sign")), []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))) {
			return errors.New("sign not match")
		}
		var b struct {
			MsgType  string `json:"msgtype"`
			Markdown struct{ Title, Text string }
		}
		if err := json.Unmarshal(body, &b); err != nil || b.MsgType != "markdown" || b.Markdown.Title == "" {
			return fmt.Errorf("not a markdown message: %s", body)
		}
		return contains(b.Markdown.Text, want.Title)
	},
	Accept: Reply{200, `{"errcode":0,"errmsg":"ok"}`}, Reject: Reply{200, `{"errcode":310000,"errmsg":"sign not match"}`},
	Gone: Reply{200, `{"errcode":300001,"errmsg":"token is not exist"}`},
}

// FeishuFake is a Feishu custom robot with signing on: it checks the
// timestamp is within an hour of its clock and the sign, as Feishu's open
// platform documents them, and answers 19021 otherwise; it answers 19001
// once the robot was removed.
var FeishuFake = Fake{
	Type:    "FEISHU",
	Address: func(base string) string { return base + "/open-apis/bot/v2/hook/3f1c2b7e-66a0-4d5e-9c1b-0123456789ab" },
	Secret:  "fe1shuSecretAbc123",
	Check:   CheckFeishu,
	Accept:  Reply{200, `{"StatusCode":0,"StatusMessage":"success","code":0,"data":{},"msg":"success"}`},
	Reject:  Reply{200, `{"code":19021,"data":{},"msg":"sign match fail or timestamp is not within one hour from current time"}`},
	Gone:    Reply{200, `{"code":19001,"data":{},"msg":"param invalid: incoming webhook access token invalid"}`},
}

// SlackFake is a Slack incoming webhook: the three parts of its path are
// the credential; it takes a POST of Block Kit JSON that holds the title
// and answers "ok", refuses another with 400 invalid_blocks, and answers
// 404 no_service once the webhook was removed, which disables the
// channel.
var SlackFake = Fake{
	Type:    "SLACK",
	Address: func(base string) string { return base + "/services/T0CONFORM/B0CONFORM/c0nf0rmanceT0ken" },
	Check:   CheckSlack,
	Accept:  Reply{200, "ok"}, Reject: Reply{400, "invalid_blocks"},
	Gone: Reply{404, "no_service"}, Disables: true,
}

// CheckSlack checks a Slack incoming-webhook message as Slack does: a
// POST of JSON to /services/T/B/X, a text or blocks, blocks of the kinds
// deskkit sends with mrkdwn text within Slack's limit of 3000 characters,
// and the title in a section.
func CheckSlack(r *http.Request, body []byte, _ string, _ time.Time, want Want) error {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/services/"), "/")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/services/") || len(parts) != 3 || slices.Contains(parts, "") || r.URL.RawQuery != "" {
		return errors.New("no webhook at " + r.URL.String())
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fmt.Errorf("content type %q, not JSON", r.Header.Get("Content-Type"))
	}
	var b struct {
		Text   string
		Blocks []struct {
			Type     string
			Text     *struct{ Type, Text string }
			Elements []struct{ Type, Text string }
		}
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if b.Text == "" && len(b.Blocks) == 0 {
		return errors.New("no_text")
	}
	var texts []string
	for _, bl := range b.Blocks {
		switch {
		case bl.Type == "section" && bl.Text != nil && bl.Text.Type == "mrkdwn":
			texts = append(texts, bl.Text.Text)
		case bl.Type == "context" && len(bl.Elements) > 0:
			for _, e := range bl.Elements {
				texts = append(texts, e.Text)
			}
		default:
			return fmt.Errorf("invalid_blocks: a %q block: %s", bl.Type, body)
		}
	}
	for _, t := range texts {
		if t == "" || len(utf16.Encode([]rune(t))) > 3000 {
			return fmt.Errorf("invalid_blocks: a text of %d characters", len([]rune(t)))
		}
	}
	return contains(strings.Join(texts, "\n"), want.Title)
}

// FeishuSign is Feishu's signature, computed as its open platform
// documents it, apart from the package that sends it.
func FeishuSign(timestamp, secret string) string {
	mac := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// CheckFeishu checks a Feishu robot message as Feishu does: its path, a
// JSON body of at most 20 KB, the signature when the robot has a secret
// (a timestamp in seconds within an hour of now), and a text or card
// message that holds the title.
func CheckFeishu(r *http.Request, body []byte, secret string, now time.Time, want Want) error {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/open-apis/bot/v2/hook/") || r.URL.RawQuery != "" {
		return errors.New("no robot at " + r.URL.String())
	}
	if len(body) > 20<<10 {
		return fmt.Errorf("the body has %d bytes, more than 20 KB", len(body))
	}
	var b struct {
		Timestamp, Sign string
		MsgType         string `json:"msg_type"`
		Content         struct{ Text string }
		Card            struct {
			Header struct {
				Title struct{ Tag, Content string }
			}
			Elements []struct{ Tag, Content string }
		}
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if secret != "" {
		ts, err := strconv.ParseInt(b.Timestamp, 10, 64)
		if err != nil || time.Unix(ts, 0).Sub(now).Abs() > time.Hour {
			return fmt.Errorf("timestamp %q not within an hour of %v", b.Timestamp, now)
		}
		if !hmac.Equal([]byte(b.Sign), []byte(FeishuSign(b.Timestamp, secret))) {
			return errors.New("sign match fail")
		}
	}
	switch b.MsgType {
	case "text":
		return contains(b.Content.Text, want.Title)
	case "interactive":
		if b.Card.Header.Title.Tag != "plain_text" {
			return fmt.Errorf("a card's title must be plain_text: %s", body)
		}
		for _, e := range b.Card.Elements {
			if e.Tag != "markdown" && e.Tag != "div" && e.Tag != "hr" {
				return fmt.Errorf("a card element of tag %q", e.Tag)
			}
		}
		return contains(b.Card.Header.Title.Content, want.Title)
	}
	return fmt.Errorf("msg_type %q is none Feishu knows here", b.MsgType)
}

func contains(text, want string) error {
	if !strings.Contains(text, want) {
		return fmt.Errorf("the message does not hold %q: %s", want, text)
	}
	return nil
}
