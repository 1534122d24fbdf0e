package dingtalk_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
)

// dingTalkSign is DingTalk's signature, computed here as its documentation
// says, independently of the package.
func dingTalkSign(ts, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestDingTalkRequest(t *testing.T) {
	ts := strconv.FormatInt(kindtest.FixedNow.UnixMilli(), 10)
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
			far := kindtest.StartFarEnd(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				// Check as DingTalk does: recompute the sign from the
				// timestamp the request carries.
				q := r.URL.Query()
				if tt.secret != "" && q.Get("sign") != dingTalkSign(q.Get("timestamp"), tt.secret) {
					_, _ = w.Write([]byte(`{"errcode":310000,"errmsg":"sign not match"}`))
					return
				}
				_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
			})
			err := kindtest.NewSender(t).Send(context.Background(),
				kindtest.Dest{Kind: kindtest.KindDingTalk, Name: "ops alerts", Address: far.URL + "/robot/send?access_token=TOKEN", Secret: tt.secret}, kindtest.Message())
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			want := kindtest.RobotView{Method: "POST", Path: "/robot/send", RawQuery: tt.wantQuery, ContentType: "application/json", Body: wantBody}
			if diff := cmp.Diff(want, kindtest.ViewOf(t, far.Only(t))); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("signed with another secret", func(t *testing.T) {
		far := kindtest.StartFarEnd(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
			q := r.URL.Query()
			if q.Get("sign") != dingTalkSign(q.Get("timestamp"), "SECthe-robots-own") {
				_, _ = w.Write([]byte(`{"errcode":310000,"errmsg":"sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"}`))
				return
			}
			_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
		})
		err := kindtest.NewSender(t).Send(context.Background(),
			kindtest.Dest{Kind: kindtest.KindDingTalk, Name: "ops", Address: far.URL + "/robot/send?access_token=T", Secret: "SECsomething-else"}, kindtest.Message())
		f := kindtest.AsFailure(t, err)
		if f == nil || f.Errcode != 310000 || f.Retryable {
			t.Errorf("Send = %#v, want errcode 310000, not retryable", f)
		}
	})
}
