package deskkit_test

import (
	"testing"
	"time"

	"github.com/deskkit/deskkit"
)

// TestDurationText: durations in words in English and Chinese, never Go's
// syntax.
func TestDurationText(t *testing.T) {
	m, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := m.Match("zh-CN")
	for _, tc := range []struct {
		d      time.Duration
		en, zh string
	}{
		{0, "0 seconds", "0 秒"},
		{400 * time.Millisecond, "0 seconds", "0 秒"},
		{time.Second, "1 second", "1 秒"},
		{30 * time.Second, "30 seconds", "30 秒"},
		{time.Minute, "1 minute", "1 分钟"},
		{90 * time.Second, "1 minute 30 seconds", "1 分钟 30 秒"},
		{5 * time.Minute, "5 minutes", "5 分钟"},
		{time.Hour + 59*time.Second, "1 hour", "1 小时"},
		{2*time.Hour + 20*time.Minute, "2 hours 20 minutes", "2 小时 20 分钟"},
		{24 * time.Hour, "1 day", "1 天"},
		{27 * time.Hour, "1 day 3 hours", "1 天 3 小时"},
		{36 * time.Hour, "1 day 12 hours", "1 天 12 小时"},
		{30 * 24 * time.Hour, "30 days", "30 天"},
	} {
		got := deskkit.DurationText(tc.d)
		if got.String() != tc.en {
			t.Errorf("%v in English: %q, want %q", tc.d, got.String(), tc.en)
		}
		if s := got.LocalizedMessage(m, zh); s != tc.zh {
			t.Errorf("%v in Chinese: %q, want %q", tc.d, s, tc.zh)
		}
	}
	// As another Text's argument, it takes that Text's language.
	if s := deskkit.Textf("a code for %s was sent to this address less than %s ago", "SIGNIN", deskkit.DurationText(time.Minute)).LocalizedMessage(m, zh); s != "SIGNIN 的验证码在不到 1 分钟前已发送到此地址" {
		t.Errorf("in a Chinese sentence: %q", s)
	}
}
