package channel

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// channel.disabled states its cause in the reader's language; the far
// end's error stays as recorded.
func TestDisabledEventTexts(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	ann := &deskkit.Actor{ID: 3, Name: "Ann"}
	for _, tc := range []struct {
		cause       disableCause
		actor       *deskkit.Actor
		tag         language.Tag
		title, text string
	}{
		{disableCause{cause: causeGone}, nil, language.SimplifiedChinese,
			`通道 "Ops" 已禁用`, "已被 deskkit 自动禁用：Webhook 返回 410 Gone：接收方要求不再推送。管理员重新启用前，该通道不会再收到事件。"},
		{disableCause{cause: causeGone}, nil, language.English,
			`Channel "Ops" was disabled`, "Disabled by deskkit: the webhook answered 410 Gone: the receiver asked for no more deliveries. It gets no events until an admin enables it again."},
		{disableCause{cause: causeFailures, failing: 5 * 24 * time.Hour, attempts: 12, lastError: deskkit.Textf("connection refused")}, nil, language.SimplifiedChinese,
			`通道 "Ops" 已禁用`, "已被 deskkit 自动禁用：推送已连续失败 5 天（尝试 12 次）；最后一次：连接被拒绝。管理员重新启用前，该通道不会再收到事件。"},
		{disableCause{cause: causeFailures, failing: 5 * 24 * time.Hour, attempts: 12, lastError: deskkit.Textf("connection refused")}, nil, language.English,
			`Channel "Ops" was disabled`, "Disabled by deskkit: deliveries failed for 5 days (12 attempts); the last: connection refused. It gets no events until an admin enables it again."},
		{disableCause{cause: causeUser, userID: 3}, ann, language.SimplifiedChinese,
			`通道 "Ops" 已禁用`, "已被 Ann 禁用。管理员重新启用前，该通道不会再收到事件。"},
		{disableCause{cause: causeUser, userID: 3}, ann, language.English,
			`Channel "Ops" was disabled`, "Disabled by Ann. It gets no events until an admin enables it again."},
		{disableCause{cause: causeUser, userID: 3}, &deskkit.Actor{ID: 3}, language.English,
			`Channel "Ops" was disabled`, "Disabled by user 3. It gets no events until an admin enables it again."},
		{disableCause{cause: causeUser, userID: 3}, &deskkit.Actor{ID: 3}, language.SimplifiedChinese,
			`通道 "Ops" 已禁用`, "已被用户 3 禁用。管理员重新启用前，该通道不会再收到事件。"},
	} {
		h, b := disabledTexts("Ops", tc.actor, tc.cause.text())
		ev := deskkit.Event{Type: EventChannelDisabled, Heading: h, Body: b}
		if title, text := ev.Message(msgs, tc.tag); title != tc.title || text != tc.text {
			t.Errorf("%s %v: %q / %q, want %q / %q", tc.cause.cause, tc.tag, title, text, tc.title, tc.text)
		}
	}
}

// TestSecretEventBodies: a reveal's and a rotation's body name the user,
// by name when the directory knows it, in every language.
func TestSecretEventBodies(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	until := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	named, unnamed := &deskkit.Actor{ID: 3, Name: "Ann Lee"}, &deskkit.Actor{ID: 3}
	for _, tc := range []struct {
		body   deskkit.Text
		tag    language.Tag
		prefix string
	}{
		{revealedBody(named), language.English, "Revealed by Ann Lee. Whoever saw it"},
		{revealedBody(unnamed), language.English, "Revealed by user 3. Whoever saw it"},
		{revealedBody(named), language.SimplifiedChinese, "由 Ann Lee 查看。"},
		{rotatedBody(named, nil), language.English, "Rotated by Ann Lee. The old secret stopped signing at once."},
		{rotatedBody(unnamed, &until), language.English, "Rotated by user 3. Until 2026-11-24 10:00 UTC the old secret"},
		{rotatedBody(named, &until), language.SimplifiedChinese, "由 Ann Lee 轮换。2026-11-24 10:00 UTC 之前"},
		{rotatedBody(unnamed, nil), language.SimplifiedChinese, "由用户 3 轮换。"},
	} {
		if got := tc.body.LocalizedMessage(msgs, tc.tag); !strings.HasPrefix(got, tc.prefix) {
			t.Errorf("%v: %q, want it to start %q", tc.tag, got, tc.prefix)
		}
	}
}
