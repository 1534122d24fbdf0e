package i18n_test

import (
	"sync"
	"testing"
	"testing/fstest"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit/internal/i18n"
	"github.com/deskkit/deskkit/internal/i18n/glossary"
)

func TestMatch(t *testing.T) {
	b := i18n.New()
	for _, tc := range []struct {
		choices []string
		want    language.Tag
	}{
		{[]string{"zh"}, i18n.SimplifiedChinese},
		{[]string{"zh-CN"}, i18n.SimplifiedChinese},
		{[]string{"zh-Hans"}, i18n.SimplifiedChinese},
		{[]string{"zh-Hans-CN"}, i18n.SimplifiedChinese},
		{[]string{"en-GB,en;q=0.8"}, i18n.English},
		// Quality values order the header's languages.
		{[]string{"en;q=0.3, zh-CN;q=0.9"}, i18n.SimplifiedChinese},
		{[]string{"fr;q=0.9, zh;q=0.5"}, i18n.SimplifiedChinese},
		// A header that matches nothing gives way to the user's locale,
		// then the tenant's, then the server's default.
		{[]string{"fr", "zh-CN", "en"}, i18n.SimplifiedChinese},
		{[]string{"", "", "zh-CN", "en"}, i18n.SimplifiedChinese},
		{[]string{"de", "", "", "zh"}, i18n.SimplifiedChinese},
		{[]string{"*;q=0", "not a tag!", "ja"}, i18n.English},
		{nil, i18n.English},
	} {
		if got := b.Match(tc.choices...); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.choices, got, tc.want)
		}
	}
}

// TestMatchByScript: a reader's tag names the bundle's language only in
// its script. Traditional Chinese (zh-TW, zh-HK, zh-MO, zh-Hant) is no
// zh-Hans: it goes on down the choices (here to the default, zh-CN or
// nothing), as any tag of a language the bundle lacks does; x/text's
// matcher would settle for zh-Hans at Low confidence.
func TestMatchByScript(t *testing.T) {
	b := i18n.New()
	const none = "none"
	for tag, want := range map[string]string{
		"zh": "zh-Hans", "zh-CN": "zh-Hans", "zh-Hans": "zh-Hans", "zh-SG": "zh-Hans",
		"zh-Hans-CN": "zh-Hans", "zh-Hans-SG": "zh-Hans", "zh-Hans-HK": "zh-Hans", "zh-Hans-TW": "zh-Hans", "ZH-cn": "zh-Hans",
		"zh-CN-u-ca-chinese": "zh-Hans",
		"zh-TW":              none, "zh-HK": none, "zh-MO": none, "zh-Hant": none, "zh-Hant-CN": none, "zh-Hant-TW": none,
		"zh-Hant-HK": none, "yue": none, "yue-HK": none,
		"en": "en", "en-US": "en", "en-GB": "en", "en-AU": "en", "en-IN": "en", "en-Latn-US": "en", "EN-us": "en",
		"fr": none, "de-CH": none, "ja": none, "ko-KR": none, "ru": none, "und": none, "*": none,
		// Lists: the first that names a language of the bundle.
		"zh-TW, zh;q=0.9": "zh-Hans", "zh-TW, en;q=0.5": "en", "zh-HK, zh-TW;q=0.8, fr;q=0.5": none,
		"fr, zh-SG;q=0.1": "zh-Hans",
	} {
		got, ok := b.Matched(tag)
		if want == none {
			if ok {
				t.Errorf("Matched(%q) = %v, want none", tag, got)
			}
		} else if !ok || got.String() != want {
			t.Errorf("Matched(%q) = %v, %v; want %s", tag, got, ok, want)
		}
	}
	// Down the chain: a zh-TW reader with a zh-CN locale reads
	// Simplified Chinese; one without, the default.
	if got := b.Match("zh-TW", "zh-CN", "en"); got != i18n.SimplifiedChinese {
		t.Errorf("zh-TW then zh-CN: %v", got)
	}
	if got := b.Match("zh-TW", "", "en"); got != i18n.English {
		t.Errorf("zh-TW then the default en: %v", got)
	}
}

func TestSprintf(t *testing.T) {
	b := i18n.New()
	if got, want := b.Sprintf(i18n.SimplifiedChinese, "must be at most %d characters", 2000), "最多 2000 个字符"; got != want {
		t.Errorf("zh: %q, want %q", got, want)
	}
	// English is the key itself, numbers as fmt writes them.
	if got, want := b.Sprintf(i18n.English, "must be at most %d characters", 2000), "must be at most 2000 characters"; got != want {
		t.Errorf("en: %q, want %q", got, want)
	}
	// A translation may reorder the arguments.
	if err := b.Load(fstest.MapFS{"zh-Hans.json": {Data: []byte(`{"%s must be at most %d bytes": "%[1]s 最多 %[2]d 字节"}`)}}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.Sprintf(i18n.SimplifiedChinese, "%s must be at most %d bytes", "name", 10), "name 最多 10 字节"; got != want {
		t.Errorf("indexed: %q, want %q", got, want)
	}
	// A key without a translation falls back to English.
	if got, want := b.Sprintf(i18n.SimplifiedChinese, "no such key %d", 1), "no such key 1"; got != want {
		t.Errorf("fallback: %q, want %q", got, want)
	}
}

func TestLoad(t *testing.T) {
	b := i18n.New()
	err := b.Load(fstest.MapFS{
		"messages/ja.json":      {Data: []byte(`{"too many requests": "リクエストが多すぎます"}`)},
		"messages/zh-Hans.json": {Data: []byte(`{"too many requests": "请求太多"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Match("ja-JP"); got != language.Japanese {
		t.Errorf("Match(ja-JP) = %v after loading ja", got)
	}
	if got := b.Sprintf(language.Japanese, "too many requests"); got != "リクエストが多すぎます" {
		t.Errorf("ja: %q", got)
	}
	if got := b.Sprintf(i18n.SimplifiedChinese, "too many requests"); got != "请求太多" {
		t.Errorf("override: %q", got)
	}
	if got := b.Sprintf(i18n.SimplifiedChinese, "internal server error"); got != "服务器内部错误" {
		t.Errorf("an override keeps the other messages: %q", got)
	}

	for name, data := range map[string]string{
		"bad tag":     `{}`,
		"verbs":       `{"must be at most %d characters": "最多 %s 个字符"}`,
		"lost verb":   `{"must be at most %d characters": "太长"}`,
		"not an obj":  `["x"]`,
		"extra verbs": `{"too many requests": "%d"}`,
	} {
		file := "zh-Hans.json"
		if name == "bad tag" {
			file = "not a tag.json"
		}
		if err := i18n.New().Load(fstest.MapFS{file: {Data: []byte(data)}}); err == nil {
			t.Errorf("%s: Load accepted %s", name, data)
		}
	}
}

func TestShippedCatalogues(t *testing.T) {
	b := i18n.New()
	tags := b.Tags()
	if len(tags) < 2 || tags[0] != i18n.English || tags[1] != i18n.SimplifiedChinese {
		t.Fatalf("Tags() = %v, want English then Simplified Chinese", tags)
	}
	if !b.Has(i18n.SimplifiedChinese, "Success") {
		t.Error("the shipped zh-Hans catalogue lacks Success")
	}
}

// TestCatalogueKeepsGlossary fails when a translation of the shipped
// Simplified Chinese catalogue uses a term the glossary rules out (渠道 for
// 通道, 投递 for 推送, 你 for 您, ...), shows a machine word such as PENDING
// without its reading, or writes half-width punctuation in Chinese text.
func TestCatalogueKeepsGlossary(t *testing.T) {
	faults, err := glossary.CheckCatalogueFile("messages/zh-Hans.json", 300)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range faults {
		t.Error(f)
	}
}

func TestVerbs(t *testing.T) {
	for format, want := range map[string]string{
		"%d of %s":        "[1d 2s]",
		"%[2]s 的 %[1]d":   "[1d 2s]",
		"100%% %-5d %.2f": "[1d 2f]",
		"none":            "[]",
	} {
		if got := sprint(i18n.Verbs(format)); got != want {
			t.Errorf("Verbs(%q) = %s, want %s", format, got, want)
		}
	}
}

func sprint(v []string) string {
	out := "["
	for i, s := range v {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out + "]"
}

func TestConcurrentLoad(t *testing.T) {
	b := i18n.New()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if i%2 == 0 {
				_ = b.Load(fstest.MapFS{"ja.json": {Data: []byte(`{"too many requests": "多い"}`)}})
				return
			}
			for range 100 {
				b.Sprintf(b.Match("ja, zh;q=0.5"), "too many requests")
			}
		})
	}
	wg.Wait()
	if got := b.Sprintf(language.Japanese, "too many requests"); got != "多い" {
		t.Errorf("after concurrent loads: %q", got)
	}
}
