package feishu_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/feishu"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/notify"
)

const hook = "/open-apis/bot/v2/hook/3f1c2b7e-66a0-4d5e-9c1b-0123456789ab"

// farEnd is a Feishu robot that checks each message as Feishu does
// (kindtest.CheckFeishu: the path, the size, the signature within its
// hour) and answers code 0, or 19021 when the check fails.
func farEnd(t *testing.T, secret string) *kindtest.FarEnd {
	var far atomic.Pointer[kindtest.FarEnd]
	far.Store(kindtest.StartFarEnd(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
		reqs := far.Load().Requests() // the far end read and kept the body
		if err := kindtest.CheckFeishu(r, reqs[len(reqs)-1].Body, secret, kindtest.FixedNow, kindtest.Want{Title: "[ops] "}); err != nil {
			_, _ = w.Write([]byte(`{"code":19021,"data":{},"msg":"sign match fail or timestamp is not within one hour from current time"}`))
			return
		}
		_, _ = w.Write([]byte(`{"StatusCode":0,"StatusMessage":"success","code":0,"data":{},"msg":"success"}`))
	}))
	return far.Load()
}

func event() notify.Message {
	m := kindtest.Message()
	m.Type = "task.trashed"
	m.Title = "Task 7 was trashed"
	m.Text = "by **Ann** <ann@example.com> & co."
	return m
}

func TestFeishuRequest(t *testing.T) {
	ts := strconv.FormatInt(kindtest.FixedNow.Unix(), 10)
	const secret = "fe1shuSecretAbc123"
	card := map[string]any{
		"config":   map[string]any{"wide_screen_mode": true},
		"header":   map[string]any{"title": map[string]any{"tag": "plain_text", "content": "[ops] Task 7 was trashed"}, "template": "blue"},
		"elements": []any{map[string]any{"tag": "markdown", "content": "by **Ann** <ann@example.com> & co."}},
	}
	tests := []struct {
		name, secret string
		m            notify.Message
		want         map[string]any
	}{
		{"a test message, unsigned", "", kindtest.Message(), map[string]any{
			"msg_type": "text", "content": map[string]any{"text": "[ops] Test message\n\nThis is a **test** from <deskkit> & friends."}}},
		{"an event, signed", secret, event(), map[string]any{
			"timestamp": ts, "sign": kindtest.FeishuSign(ts, secret), "msg_type": "interactive", "card": card}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := farEnd(t, tt.secret)
			err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindFeishu, Name: "ops", Address: far.URL + hook, Secret: tt.secret}, tt.m)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			want := kindtest.RobotView{Method: "POST", Path: hook, ContentType: "application/json", Body: tt.want}
			if diff := cmp.Diff(want, kindtest.ViewOf(t, far.Only(t))); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

// A message signed with another secret, or with a clock more than an hour
// from Feishu's, is refused with 19021, which the failure explains.
func TestFeishuRefusesTheSignature(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret string
		clock  time.Time
	}{
		{"another secret", "some-other-secret", kindtest.FixedNow},
		{"a clock an hour and a second off", "fe1shuSecretAbc123", kindtest.FixedNow.Add(time.Hour + time.Second)},
	} {
		t.Run(c.name, func(t *testing.T) {
			far := farEnd(t, "fe1shuSecretAbc123")
			s := kindtest.NewSender(t)
			s.Now = func() time.Time { return c.clock }
			err := s.Send(context.Background(), kindtest.Dest{Kind: kindtest.KindFeishu, Name: "ops", Address: far.URL + hook, Secret: c.secret}, event())
			f := kindtest.AsFailure(t, err)
			if f == nil || f.Errcode != 19021 || f.Retryable || !strings.Contains(f.Reason.String(), "Feishu refused the signature (code 19021") {
				t.Errorf("Send = %#v, want code 19021 explained, not retried", f)
			}
		})
	}
}

// Feishu's answers: code 0 is success whatever else the answer holds; a
// non-zero code is a failure explained, the rate limits retried after a
// minute; an answer that is not Feishu's JSON says so.
func TestFeishuAnswers(t *testing.T) {
	tests := []struct {
		status    int
		body      string
		ok        bool
		code      int
		retryable bool
		after     time.Duration
		reason    string
	}{
		{200, `{"StatusCode":0,"StatusMessage":"success","code":0,"data":{},"msg":"success"}`, true, 0, false, 0, ""},
		{200, `{"code":0}`, true, 0, false, 0, ""},
		{200, `{"code":9499,"data":{},"msg":"too many request"}`, false, 9499, true, time.Minute,
			"Feishu refused the message: a robot may send at most 100 messages a minute and 5 a second (code 9499: too many request)"},
		{200, `{"code":11232,"msg":"frequency limited"}`, false, 11232, true, time.Minute,
			"Feishu refused the message: a robot may send at most 100 messages a minute and 5 a second (code 11232: frequency limited)"},
		{200, `{"code":19024,"msg":"Key Words Not Found"}`, false, 19024, false, 0,
			"Feishu refused the message (code 19024: Key Words Not Found): the robot's security settings want a keyword the message lacks"},
		{200, `{"code":19022,"msg":"Ip Not Allowed"}`, false, 19022, false, 0,
			"Feishu refused the message (code 19022: Ip Not Allowed): the robot's IP allowlist lacks this server's address"},
		{200, `{"code":19001,"msg":"param invalid: incoming webhook access token invalid"}`, false, 19001, false, 0,
			"Feishu answered code 19001: param invalid: incoming webhook access token invalid"},
		{200, `{"errcode":0,"errmsg":"ok"}`, false, 0, false, 0, "Feishu answered 200 OK but not with a robot's JSON errcode: is the address a Feishu robot?"},
		{200, `<html>ok</html>`, false, 0, false, 0, "Feishu answered 200 OK but not with a robot's JSON errcode: is the address a Feishu robot?"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			far := kindtest.StartFarEnd(t, kindtest.Answer(tt.status, tt.body))
			err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindFeishu, Name: "ops", Address: far.URL + hook}, event())
			if tt.ok {
				if err != nil {
					t.Fatalf("Send = %v, want success", err)
				}
				return
			}
			f := kindtest.AsFailure(t, err)
			if f == nil || f.Errcode != tt.code || f.Retryable != tt.retryable || f.RetryAfter != tt.after || f.Reason.String() != tt.reason {
				t.Errorf("Send = %#v (%q), want code %d, retryable %v after %v: %q", f, f.Reason.String(), tt.code, tt.retryable, tt.after, tt.reason)
			}
			if v := (feishu.Kind{}).Classify(f); v != 0 {
				t.Errorf("Classify = %v, want Retry: the channel is never disabled for one answer", v)
			}
		})
	}
}

// A long text is cut so that the body stays within Feishu's 20 KB, on a
// character boundary, with the signature and escaping counted.
func TestFeishuCut(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("验", 10000),
		strings.Repeat("\"\n", 12000), // each byte escaped to two
		strings.Repeat("a", feishu.MaxBodyBytes),
	} {
		for _, typ := range []string{"channel.test", "task.trashed"} {
			far := farEnd(t, "fe1shuSecretAbc123")
			m := event()
			m.Type, m.Text = typ, text
			if err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindFeishu, Name: "ops", Address: far.URL + hook, Secret: "fe1shuSecretAbc123"}, m); err != nil {
				t.Fatalf("%s of %d bytes: %v", typ, len(text), err)
			}
			body := far.Only(t).Body
			if len(body) > feishu.MaxBodyBytes || !utf8.Valid(body) || len(body) < feishu.MaxBodyBytes-200 {
				t.Errorf("%s of %d bytes: a body of %d bytes, want at most %d and not far below", typ, len(text), len(body), feishu.MaxBodyBytes)
			}
		}
	}
}

func TestFeishuAddress(t *testing.T) {
	k := feishu.Kind{}
	c := kindtest.NewSender(t).HTTP
	for _, a := range []string{
		"https://open.feishu.cn/open-apis/bot/v2/hook/3f1c2b7e-66a0-4d5e-9c1b-0123456789ab",
		"https://open.larksuite.com/open-apis/bot/v2/hook/abc",
	} {
		if got, err := k.Address(c, a); err != nil || got != a {
			t.Errorf("Address(%q) = %q, %v; want it as sent", a, got, err)
		}
	}
	for _, a := range []string{
		"https://open.feishu.cn/open-apis/bot/v2/hook/",
		"https://open.feishu.cn/open-apis/bot/v2/hook/a/b",
		"https://open.feishu.cn/open-apis/bot/v2/hook/abc?x=1",
		"https://open.feishu.cn/open-apis/bot/v2/hook/abc?",
		"https://open.feishu.cn/robot/send?access_token=abc",
		"ftp://open.feishu.cn/open-apis/bot/v2/hook/abc",
	} {
		_, err := k.Address(c, a)
		var ie *deskkit.InputError
		if !errAs(err, &ie) || ie.Field != "address" {
			t.Errorf("Address(%q) = %v, want an InputError for address", a, err)
		}
	}
	if got := k.Mask("https://open.feishu.cn/open-apis/bot/v2/hook/3f1c2b7e"); got != "https://open.feishu.cn/open-apis/bot/v2/hook/***" {
		t.Errorf("Mask = %q", got)
	}
	if got := k.Hidden("https://open.feishu.cn/open-apis/bot/v2/hook/3f1c%2D2b"); !cmp.Equal(got, []string{"3f1c%2D2b", "3f1c-2b"}) {
		t.Errorf("Hidden = %q", got)
	}
	for s, ok := range map[string]bool{"": true, "fe1shuSecretAbc123": true, "with space": false, "中文": false} {
		if _, err := k.Secret(s); (err == nil) != ok {
			t.Errorf("Secret(%q) = %v, want accepted: %v", s, err, ok)
		}
	}
}

func errAs(err error, target **deskkit.InputError) bool {
	ie, ok := err.(*deskkit.InputError)
	*target = ie
	return ok
}

// FuzzAddress: whatever it is given, Address never panics, and an address
// it takes masks to the hook path with its token hidden.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{"https://open.feishu.cn/open-apis/bot/v2/hook/abc", "https://h/open-apis/bot/v2/hook/%zz", "https://h/open-apis/bot/v2/hook/a%2Fb", "http://[::1]/open-apis/bot/v2/hook/x"} {
		f.Add(s)
	}
	k := feishu.Kind{}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := k.Address(kindtest.NewSender(t).HTTP, s)
		if err != nil {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("Address took %q, which does not parse: %v", got, err)
		}
		if m := k.Mask(got); m != u.Scheme+"://"+u.Host+"/open-apis/bot/v2/hook/***" {
			t.Errorf("Address took %q, which masks to %q", got, m)
		}
		if h := k.Hidden(got); len(h) == 0 || h[0] == "" || !strings.HasSuffix(u.EscapedPath(), "/"+h[0]) {
			t.Errorf("Address took %q, whose hidden parts are %q", got, h)
		}
	})
}
