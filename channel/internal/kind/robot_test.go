package kind_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/wecom"
	"github.com/deskkit/deskkit/internal/notify"
)

// decode parses a request body as JSON, for comparison.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", b, err)
	}
	return v
}

type robotView struct {
	Method, Path, RawQuery, ContentType string
	Body                                any
}

func viewOf(t *testing.T, r request) robotView {
	return robotView{Method: r.Method, Path: r.Path, RawQuery: r.RawQuery, ContentType: r.Header.Get("Content-Type"), Body: decode(t, r.Body)}
}

func TestWeComRequest(t *testing.T) {
	far := startFarEnd(t, answer(200, `{"errcode":0,"errmsg":"ok"}`))
	err := newSender(t).Send(context.Background(),
		dest{Kind: kindWeCom, Name: "ops", Address: far.URL + "/cgi-bin/webhook/send?key=693a91f6-7xxx"}, message())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := robotView{
		Method: "POST", Path: "/cgi-bin/webhook/send", RawQuery: "key=693a91f6-7xxx", ContentType: "application/json",
		Body: map[string]any{"msgtype": "markdown", "markdown": map[string]any{
			"content": "**Test message**\n\nThis is a **test** from <deskkit> & friends.",
		}},
	}
	if diff := cmp.Diff(want, viewOf(t, far.only(t))); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// TestWeComCut sends texts around WeCom's limit: the content is cut to
// MaxWeComBytes on a character boundary, and only when it must be.
func TestWeComCut(t *testing.T) {
	const heading = "**Test message**\n\n"
	fits := heading + strings.Repeat("a", wecom.MaxBytes-len(heading))
	tests := []struct {
		name, text string
		want       func(content string) bool
	}{
		{"exactly the limit", strings.Repeat("a", wecom.MaxBytes-len(heading)), func(c string) bool { return c == fits }},
		{"one byte over", strings.Repeat("a", wecom.MaxBytes-len(heading)+1), func(c string) bool {
			return c == fits[:wecom.MaxBytes-len("…")]+"…"
		}},
		{"three-byte characters", strings.Repeat("验", 2000), func(c string) bool {
			// 18 + 3*1359 + 3 = 4098 > 4096, so 1358 fit before "…".
			return c == heading+strings.Repeat("验", 1358)+"…"
		}},
		{"no text", "", func(c string) bool { return c == "**Test message**" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := startFarEnd(t, answer(200, `{"errcode":0}`))
			m := message()
			m.Text = tt.text
			if err := newSender(t).Send(context.Background(), dest{Kind: kindWeCom, Address: far.URL + "/cgi-bin/webhook/send?key=K"}, m); err != nil {
				t.Fatal(err)
			}
			var body struct {
				Markdown struct{ Content string } `json:"markdown"`
			}
			if err := json.Unmarshal(far.only(t).Body, &body); err != nil {
				t.Fatal(err)
			}
			c := body.Markdown.Content
			if len(c) > wecom.MaxBytes || !utf8.ValidString(c) || !tt.want(c) {
				t.Errorf("content of %d bytes (valid UTF-8: %v) is not as wanted; ends %q", len(c), utf8.ValidString(c), c[max(0, len(c)-12):])
			}
		})
	}
}

// dingTalkSign is DingTalk's signature, computed here as its documentation
// says, independently of the package.
func dingTalkSign(ts, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestDingTalkRequest(t *testing.T) {
	ts := strconv.FormatInt(fixedNow.UnixMilli(), 10)
	// A secret whose signature holds characters that must be escaped in a
	// query, so that the escaping is proven.
	var secret string
	for i := 0; secret == ""; i++ {
		s := "SEC" + strconv.Itoa(i) + "f0e1d2c3b4a5"
		if sig := dingTalkSign(ts, s); strings.ContainsAny(sig, "+/") {
			secret = s
		}
	}
	wantBody := map[string]any{"msgtype": "markdown", "markdown": map[string]any{
		"title": "[ops alerts] Test message",
		"text":  "#### [ops alerts] Test message\n\nThis is a **test** from <deskkit> & friends.",
	}}
	tests := []struct {
		name, secret, wantQuery string
	}{
		{"unsigned", "", "access_token=TOKEN"},
		{"signed", secret, "access_token=TOKEN&timestamp=" + ts + "&sign=" + url.QueryEscape(dingTalkSign(ts, secret))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := startFarEnd(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				// Check as DingTalk does: recompute the sign from the
				// timestamp the request carries.
				q := r.URL.Query()
				if tt.secret != "" && q.Get("sign") != dingTalkSign(q.Get("timestamp"), tt.secret) {
					_, _ = w.Write([]byte(`{"errcode":310000,"errmsg":"sign not match"}`))
					return
				}
				_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
			})
			err := newSender(t).Send(context.Background(),
				dest{Kind: kindDingTalk, Name: "ops alerts", Address: far.URL + "/robot/send?access_token=TOKEN", Secret: tt.secret}, message())
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			want := robotView{Method: "POST", Path: "/robot/send", RawQuery: tt.wantQuery, ContentType: "application/json", Body: wantBody}
			if diff := cmp.Diff(want, viewOf(t, far.only(t))); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("signed with another secret", func(t *testing.T) {
		far := startFarEnd(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
			q := r.URL.Query()
			if q.Get("sign") != dingTalkSign(q.Get("timestamp"), "SECthe-robots-own") {
				_, _ = w.Write([]byte(`{"errcode":310000,"errmsg":"sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"}`))
				return
			}
			_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
		})
		err := newSender(t).Send(context.Background(),
			dest{Kind: kindDingTalk, Name: "ops", Address: far.URL + "/robot/send?access_token=T", Secret: "SECsomething-else"}, message())
		f := asFailure(t, err)
		if f == nil || f.Errcode != 310000 || f.Retryable {
			t.Errorf("Send = %#v, want errcode 310000, not retryable", f)
		}
	})
}

func TestRobotErrcodes(t *testing.T) {
	hostile := "line1\nline2\x1b[31mred\u202eevil\t" + strings.Repeat("é", 500)
	hostileJSON, _ := json.Marshal(map[string]any{"errcode": 40001, "errmsg": hostile})
	cleaned := "line1 line2 [31mred evil " + strings.Repeat("é", 175) + "…"
	tests := []struct {
		name  string
		kind  kind.Kind
		reply string
		want  *notify.Failure
	}{{
		name: "WeCom ok", kind: kindWeCom, reply: `{"errcode":0,"errmsg":"ok"}`,
	}, {
		name: "WeCom 93000", kind: kindWeCom,
		reply: `{"errcode":93000,"errmsg":"invalid webhook url, hint: [1714552215_7_abc], from ip: 203.0.113.9"}`,
		want: &notify.Failure{Status: 200, Errcode: 93000, Errmsg: "invalid webhook url, hint: [1714552215_7_abc], from ip: 203.0.113.9",
			Reason: deskkit.Plain("WeCom answered errcode 93000: invalid webhook url, hint: [1714552215_7_abc], from ip: 203.0.113.9")},
	}, {
		name: "WeCom 45009 rate limit", kind: kindWeCom, reply: `{"errcode":45009,"errmsg":"api freq out of limit"}`,
		want: &notify.Failure{Status: 200, Errcode: 45009, Errmsg: "api freq out of limit", Retryable: true, RetryAfter: time.Minute,
			Reason: deskkit.Plain("WeCom refused the message: a robot may send at most 20 messages a minute (errcode 45009: api freq out of limit)")},
	}, {
		name: "WeCom busy", kind: kindWeCom, reply: `{"errcode":-1,"errmsg":"system busy"}`,
		want: &notify.Failure{Status: 200, Errcode: -1, Errmsg: "system busy", Retryable: true, Reason: deskkit.Plain("WeCom is busy (errcode -1: system busy)")},
	}, {
		name: "WeCom errcode without errmsg", kind: kindWeCom, reply: `{"errcode":40008}`,
		want: &notify.Failure{Status: 200, Errcode: 40008, Reason: deskkit.Plain("WeCom answered errcode 40008")},
	}, {
		name: "WeCom hostile errmsg", kind: kindWeCom, reply: string(hostileJSON),
		want: &notify.Failure{Status: 200, Errcode: 40001, Errmsg: cleaned, Reason: deskkit.Plain("WeCom answered errcode 40001: " + cleaned)},
	}, {
		name: "WeCom HTML page", kind: kindWeCom, reply: `<html><body>Welcome</body></html>`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "WeCom JSON without errcode", kind: kindWeCom, reply: `{"ok":true}`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "WeCom errcode as a string", kind: kindWeCom, reply: `{"errcode":"0"}`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "WeCom empty reply", kind: kindWeCom, reply: ``,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "DingTalk ok", kind: kindDingTalk, reply: `{"errcode":0,"errmsg":"ok"}`,
	}, {
		name: "DingTalk 310000", kind: kindDingTalk, reply: `{"errcode":310000,"errmsg":"keywords not in content"}`,
		want: &notify.Failure{Status: 200, Errcode: 310000, Errmsg: "keywords not in content",
			Reason: deskkit.Plain("DingTalk refused the message (errcode 310000: keywords not in content): the robot's security settings " +
				"want a keyword the message lacks, a signature with another secret, or a clock closer to DingTalk's")},
	}, {
		name: "DingTalk 130101", kind: kindDingTalk, reply: `{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}`,
		want: &notify.Failure{Status: 200, Errcode: 130101, Errmsg: "send too fast, exceed 20 times per minute", Retryable: true, RetryAfter: time.Minute,
			Reason: deskkit.Plain("DingTalk refused the message: a robot may send at most 20 messages a minute (errcode 130101: send too fast, exceed 20 times per minute)")},
	}, {
		name: "DingTalk 300001", kind: kindDingTalk, reply: `{"errcode":300001,"errmsg":"token is not exist"}`,
		want: &notify.Failure{Status: 200, Errcode: 300001, Errmsg: "token is not exist", Reason: deskkit.Plain("DingTalk answered errcode 300001: token is not exist")},
	}, {
		name: "DingTalk busy", kind: kindDingTalk, reply: `{"errcode":-1,"errmsg":"系统繁忙"}`,
		want: &notify.Failure{Status: 200, Errcode: -1, Errmsg: "系统繁忙", Retryable: true, Reason: deskkit.Plain("DingTalk is busy (errcode -1: 系统繁忙)")},
	}, {
		name: "DingTalk HTML page", kind: kindDingTalk, reply: `<!doctype html><title>404</title>`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("DingTalk answered 200 OK but not with a robot's JSON errcode: is the address a DingTalk robot?")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := startFarEnd(t, answer(200, tt.reply))
			path := "/cgi-bin/webhook/send?key=K"
			if tt.kind == kindDingTalk {
				path = "/robot/send?access_token=T"
			}
			err := newSender(t).Send(context.Background(), dest{Kind: tt.kind, Name: "ops", Address: far.URL + path}, message())
			if diff := cmp.Diff(tt.want, asFailure(t, err), ignoreErr); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			if err != nil && (!errors.Is(err, notify.ErrFailed) || errors.Is(err, notify.ErrBlocked)) {
				t.Errorf("Send = %v, want it to match ErrFailed only", err)
			}
		})
	}
}
