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
