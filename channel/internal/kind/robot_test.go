package kind_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/notify"
)

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
		name: "WeCom ok", kind: kindtest.KindWeCom, reply: `{"errcode":0,"errmsg":"ok"}`,
	}, {
		name: "WeCom 93000", kind: kindtest.KindWeCom,
		reply: `{"errcode":93000,"errmsg":"invalid webhook url, hint: [1714552215_7_abc], from ip: 203.0.113.9"}`,
		want: &notify.Failure{Status: 200, Errcode: 93000, Errmsg: "invalid webhook url, hint: [1714552215_7_abc], from ip: 203.0.113.9",
			Reason: deskkit.Plain("WeCom answered errcode 93000: invalid webhook url, hint: [1714552215_7_abc], from ip: 203.0.113.9")},
	}, {
		name: "WeCom 45009 rate limit", kind: kindtest.KindWeCom, reply: `{"errcode":45009,"errmsg":"api freq out of limit"}`,
		want: &notify.Failure{Status: 200, Errcode: 45009, Errmsg: "api freq out of limit", Retryable: true, RetryAfter: time.Minute,
			Reason: deskkit.Plain("WeCom refused the message: a robot may send at most 20 messages a minute (errcode 45009: api freq out of limit)")},
	}, {
		name: "WeCom busy", kind: kindtest.KindWeCom, reply: `{"errcode":-1,"errmsg":"system busy"}`,
		want: &notify.Failure{Status: 200, Errcode: -1, Errmsg: "system busy", Retryable: true, Reason: deskkit.Plain("WeCom is busy (errcode -1: system busy)")},
	}, {
		name: "WeCom errcode without errmsg", kind: kindtest.KindWeCom, reply: `{"errcode":40008}`,
		want: &notify.Failure{Status: 200, Errcode: 40008, Reason: deskkit.Plain("WeCom answered errcode 40008")},
	}, {
		name: "WeCom hostile errmsg", kind: kindtest.KindWeCom, reply: string(hostileJSON),
		want: &notify.Failure{Status: 200, Errcode: 40001, Errmsg: cleaned, Reason: deskkit.Plain("WeCom answered errcode 40001: " + cleaned)},
	}, {
		name: "WeCom HTML page", kind: kindtest.KindWeCom, reply: `<html><body>Welcome</body></html>`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "WeCom JSON without errcode", kind: kindtest.KindWeCom, reply: `{"ok":true}`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "WeCom errcode as a string", kind: kindtest.KindWeCom, reply: `{"errcode":"0"}`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "WeCom empty reply", kind: kindtest.KindWeCom, reply: ``,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("WeCom answered 200 OK but not with a robot's JSON errcode: is the address a WeCom robot?")},
	}, {
		name: "DingTalk ok", kind: kindtest.KindDingTalk, reply: `{"errcode":0,"errmsg":"ok"}`,
	}, {
		name: "DingTalk 310000", kind: kindtest.KindDingTalk, reply: `{"errcode":310000,"errmsg":"keywords not in content"}`,
		want: &notify.Failure{Status: 200, Errcode: 310000, Errmsg: "keywords not in content",
			Reason: deskkit.Plain("DingTalk refused the message (errcode 310000: keywords not in content): the robot's security settings " +
				"want a keyword the message lacks, a signature with another secret, or a clock closer to DingTalk's")},
	}, {
		name: "DingTalk 130101", kind: kindtest.KindDingTalk, reply: `{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}`,
		want: &notify.Failure{Status: 200, Errcode: 130101, Errmsg: "send too fast, exceed 20 times per minute", Retryable: true, RetryAfter: time.Minute,
			Reason: deskkit.Plain("DingTalk refused the message: a robot may send at most 20 messages a minute (errcode 130101: send too fast, exceed 20 times per minute)")},
	}, {
		name: "DingTalk 300001", kind: kindtest.KindDingTalk, reply: `{"errcode":300001,"errmsg":"token is not exist"}`,
		want: &notify.Failure{Status: 200, Errcode: 300001, Errmsg: "token is not exist", Reason: deskkit.Plain("DingTalk answered errcode 300001: token is not exist")},
	}, {
		name: "DingTalk busy", kind: kindtest.KindDingTalk, reply: `{"errcode":-1,"errmsg":"系统繁忙"}`,
		want: &notify.Failure{Status: 200, Errcode: -1, Errmsg: "系统繁忙", Retryable: true, Reason: deskkit.Plain("DingTalk is busy (errcode -1: 系统繁忙)")},
	}, {
		name: "DingTalk HTML page", kind: kindtest.KindDingTalk, reply: `<!doctype html><title>404</title>`,
		want: &notify.Failure{Status: 200, Reason: deskkit.Plain("DingTalk answered 200 OK but not with a robot's JSON errcode: is the address a DingTalk robot?")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := kindtest.StartFarEnd(t, kindtest.Answer(200, tt.reply))
			path := "/cgi-bin/webhook/send?key=K"
			if tt.kind == kindtest.KindDingTalk {
				path = "/robot/send?access_token=T"
			}
			err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: tt.kind, Name: "ops", Address: far.URL + path}, kindtest.Message())
			if diff := cmp.Diff(tt.want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			if err != nil && (!errors.Is(err, notify.ErrFailed) || errors.Is(err, notify.ErrBlocked)) {
				t.Errorf("Send = %v, want it to match ErrFailed only", err)
			}
		})
	}
}
