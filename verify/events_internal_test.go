package verify

import (
	"testing"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// The contact events' heading and body are written in Chinese, and in
// English as published.
func TestEventRender(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	old := "+86*******8000"
	for _, tc := range []struct {
		typ         string
		name        any
		old         *string
		address     string
		tag         language.Tag
		title, text string
	}{
		{EventMobileChanged, "Ann Lee", &old, "+86*******7000", language.SimplifiedChinese,
			"Ann Lee 修改了手机号", "Ann Lee 将手机号从 +86*******8000 修改为 +86*******7000。"},
		{EventEmailChanged, deskkit.Textf("User %d", 7), nil, "a***@example.org", language.SimplifiedChinese,
			"用户 7 绑定了邮箱", "用户 7 绑定了邮箱 a***@example.org。"},
		{EventEmailChanged, "Ann Lee", nil, "a***@example.org", language.English,
			"Ann Lee added a e-mail address", "Ann Lee added the e-mail address a***@example.org."},
	} {
		h, b := contactTexts(tc.typ, tc.name, tc.old, tc.address)
		ev := deskkit.Event{Type: tc.typ, Heading: h, Body: b}
		if title, text := ev.Message(msgs, tc.tag); title != tc.title || text != tc.text {
			t.Errorf("%s %v: %q / %q, want %q / %q", tc.typ, tc.tag, title, text, tc.title, tc.text)
		}
	}
}
