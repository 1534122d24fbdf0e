package verify

import (
	"testing"

	"golang.org/x/text/language"
)

// TestTemplatesMatchByScript: a reader gets the templates of their
// language in their script, else English's: a Traditional Chinese
// reader (a host with a zh-Hant catalogue) gets zh-TW's when the host
// wrote them, and English's rather than zh-CN's when it did not.
func TestTemplatesMatchByScript(t *testing.T) {
	withTW, err := newTemplates(nil, nil, map[string]LocaleTemplates{"zh-TW": {}})
	if err != nil {
		t.Fatal(err)
	}
	without, err := newTemplates(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ts   templates
		tag  string
		want string
	}{
		{withTW, "zh-Hans", "zh-CN"},
		{withTW, "zh-Hant", "zh-TW"},
		{withTW, "zh-HK", "zh-TW"},
		{withTW, "en", "en"},
		{without, "zh-Hans", "zh-CN"},
		{without, "zh-Hant", "en"},
		{without, "fr", "en"},
	} {
		if got := tc.ts.match(language.MustParse(tc.tag)).locale; got != tc.want {
			t.Errorf("%s reader: %q's templates, want %q's", tc.tag, got, tc.want)
		}
	}
}

// TestSMSTemplateLocale: a provider's template is the locale's, else one
// of the same language in the same script, else the default locale's.
func TestSMSTemplateLocale(t *testing.T) {
	tpl := SMSTemplates{DefaultLocale: "zh-CN",
		Codes:  map[BizKey]map[string]string{AnyBizKey: {"zh-CN": "A", "zh-HK": "B", "en": "E"}},
		Notice: map[string]string{"zh-CN": "N"}}.withDefaults()
	for locale, want := range map[string]string{
		"zh-CN": "A", "zh": "A", "zh-SG": "A", "zh-TW": "B", "zh-Hant": "B", "zh-HK": "B",
		"en-GB": "E", "en": "E", "fr": "A", "": "A",
	} {
		if id, _ := tpl.template(SMS{Locale: locale, Code: "123456", BizKey: "SIGNIN"}); id != want {
			t.Errorf("locale %q: template %q, want %q", locale, id, want)
		}
	}
}
