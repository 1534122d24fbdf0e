package deskkit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// A host rewords a Chinese message and adds Japanese, from catalogues of
// its own; the request's language comes from Accept-Language.
func ExampleMessages() {
	msgs, err := deskkit.NewMessages(fstest.MapFS{
		"messages/zh-Hans.json": {Data: []byte(`{"is required": "不能为空"}`)},
		"messages/ja.json":      {Data: []byte(`{"must be at most %d characters": "%d 文字以内にしてください"}`)},
	})
	if err != nil {
		panic(err)
	}
	for _, header := range []string{"zh-CN,zh;q=0.9,en;q=0.8", "ja-JP", "fr"} {
		tag := msgs.Match(header)
		fmt.Println(tag, "|",
			deskkit.Invalid("name", "is required").LocalizedMessage(msgs, tag), "|",
			deskkit.Invalid("name", "must be at most %d characters", 2000).LocalizedMessage(msgs, tag))
	}
	// Output:
	// zh-Hans | name 不能为空 | name 最多 2000 个字符
	// ja | name is required | name 2000 文字以内にしてください
	// en | name is required | name must be at most 2000 characters
}

func TestLocalizedErrors(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := msgs.Match("zh")
	nested := deskkit.Invalid("address", "the %s e-mail address %s", deskkit.Textf("%dnd", 2), deskkit.Invalid("address", "must be valid UTF-8").Rule)
	rl := deskkit.RateLimited(time.Minute, deskkit.Textf("at most %d wrong codes a day", 20))
	for _, tc := range []struct {
		err    deskkit.LocalizedMessager
		en, zh string
	}{
		{deskkit.Invalid("pageSize", "must be an integer between 1 and %d", 2000), "pageSize must be an integer between 1 and 2000", "pageSize 必须是 1 到 2000 之间的整数"},
		{nested, "address the 2nd e-mail address must be valid UTF-8", "address 第 2 个邮箱必须是有效的 UTF-8"},
		{deskkit.NewError(deskkit.ErrInvalid, "x: wrong", "verificationCode is wrong"), "verificationCode is wrong", "verificationCode 错误"},
		{deskkit.NewError(deskkit.ErrInvalid, "x", "100% not a format"), "100% not a format", "100% not a format"},
		{deskkit.NewErrorf(deskkit.ErrForbidden, "x", "sprint %d holds trashed tasks you may not clear", 7), "sprint 7 holds trashed tasks you may not clear", "迭代 7 中有您无权彻底删除的已删除任务"},
		{rl, "at most 20 wrong codes a day", "每天最多输错 20 次验证码"},
		{&deskkit.RateLimitError{Message: deskkit.Plain("too many requests")}, "too many requests", "操作过于频繁"},
		{&deskkit.InputError{Field: "f", Rule: deskkit.Plain("is required")}, "f is required", "f 为必填项"},
	} {
		cm := tc.err.(deskkit.ClientMessager).ClientMessage()
		if cm != tc.en {
			t.Errorf("ClientMessage %q, want %q", cm, tc.en)
		}
		for _, m := range []*deskkit.Messages{msgs, nil} {
			if got := tc.err.LocalizedMessage(m, language.English); got != tc.en {
				t.Errorf("English %q, want %q", got, tc.en)
			}
		}
		if got := tc.err.LocalizedMessage(nil, zh); got != tc.en {
			t.Errorf("nil Messages: %q, want English %q", got, tc.en)
		}
		if got := tc.err.LocalizedMessage(msgs, zh); got != tc.zh {
			t.Errorf("zh %q, want %q", got, tc.zh)
		}
		// zh-CN finds the zh-Hans catalogue too.
		if got := tc.err.LocalizedMessage(msgs, language.MustParse("zh-CN")); got != tc.zh {
			t.Errorf("zh-CN %q, want %q", got, tc.zh)
		}
	}
	if rl.Message.String() != "at most 20 wrong codes a day" || rl.RetryAfter != time.Minute || !errors.Is(rl, deskkit.ErrRateLimited) {
		t.Errorf("RateLimited: %+v", rl)
	}
	// A Text holding an error writes its client message, not its Error.
	wrong := deskkit.NewError(deskkit.ErrInvalid, "verify: wrong code", "verificationCode is wrong")
	if got := deskkit.Textf("%s; 1 attempt is left", wrong).String(); got != "verificationCode is wrong; 1 attempt is left" {
		t.Errorf("nested error: %q", got)
	}
}

func TestWithLanguage(t *testing.T) {
	if _, ok := deskkit.LanguageOf(context.Background()); ok {
		t.Error("a bare context has a language")
	}
	ctx := deskkit.WithLanguage(context.Background(), language.SimplifiedChinese)
	if tag, ok := deskkit.LanguageOf(ctx); !ok || tag != language.SimplifiedChinese {
		t.Errorf("LanguageOf = %v, %v", tag, ok)
	}
}

func TestNewMessagesRefusesBadCatalogue(t *testing.T) {
	_, err := deskkit.NewMessages(fstest.MapFS{"zh-Hans.json": {Data: []byte(`{"must be at most %d characters": "最多 %s 个字符"}`)}})
	if err == nil {
		t.Error("NewMessages took a translation whose verbs differ")
	}
	m, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	if langs := m.Languages(); len(langs) != 2 || langs[0] != language.English || langs[1] != language.SimplifiedChinese {
		t.Errorf("Languages() = %v", langs)
	}
	if !m.Has(language.SimplifiedChinese, "Success") || m.Has(language.SimplifiedChinese, "no such message") || !m.Has(language.English, "anything") {
		t.Error("Has")
	}
}

// Issue 28, fault 8: a setting that names a language (the server's
// default) must name one of the catalogues exactly: same language, same
// script. Match settles for the closest, so zh-TW passed as zh-Hans.
func TestMessagesLanguage(t *testing.T) {
	msgs, err := deskkit.NewMessages(fstest.MapFS{"ja.json": {Data: []byte(`{"Success": "成功しました"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[string]string{
		"en": "en", "EN": "en", "en-US": "en", "en-GB": "en", "en-Latn": "en",
		"zh": "zh-Hans", "zh-CN": "zh-Hans", "zh-cn": "zh-Hans", "zh-Hans": "zh-Hans", "zh-Hans-CN": "zh-Hans", "zh-SG": "zh-Hans", "zh-Hans-TW": "zh-Hans",
		"ja": "ja", "ja-JP": "ja",
		// Not exactly a catalogue's language, or no tag at all.
		"zh-TW": "", "zh-HK": "", "zh-Hant": "", "zh-Hant-CN": "", "yue": "", "tlh": "", "i-klingon": "", "klingon": "",
		"fr": "", "und": "", "und-Hans": "", "Hans": "", "en-Cyrl": "", "": "", "zh_CN": "", "not a tag": "",
	} {
		got, ok := msgs.Language(tag)
		if ok != (want != "") || (ok && got.String() != want) {
			t.Errorf("Language(%q) = %v, %v; want %q", tag, got, ok, want)
		}
	}
	// A nil *Messages has English alone.
	var none *deskkit.Messages
	if got, ok := none.Language("en-US"); !ok || got.String() != "en" {
		t.Errorf("nil Language(en-US) = %v, %v", got, ok)
	}
	if _, ok := none.Language("zh-CN"); ok {
		t.Error("nil Messages have zh-CN")
	}
}

// MapStrings rewrites a message's string arguments, nested messages'
// too, and leaves its formats and other arguments: what it masks is masked
// in every language.
func TestMapStrings(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := msgs.Match("zh")
	who := deskkit.Textf("the webhook")
	orig := deskkit.Textf("deliveries failed for %s (%d attempts); the last: %s", deskkit.DurationText(2*time.Hour), 5,
		deskkit.Textf("%s answered %s", who, "403 key=s3cr3t"))
	masked := orig.MapStrings(func(s string) string { return strings.ReplaceAll(s, "s3cr3t", "***") })
	if got, want := masked.String(), "deliveries failed for 2 hours (5 attempts); the last: the webhook answered 403 key=***"; got != want {
		t.Errorf("English %q, want %q", got, want)
	}
	if got := masked.LocalizedMessage(msgs, zh); strings.Contains(got, "s3cr3t") || !strings.Contains(got, "key=***") || !strings.Contains(got, "推送") {
		t.Errorf("Chinese %q", got)
	}
	if strings.Contains(orig.String(), "***") {
		t.Errorf("the original changed: %q", orig)
	}
}
