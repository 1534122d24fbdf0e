package smsprovider

import (
	"strings"
	"testing"

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
)

func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{
		"AZaz09-_.~":        "AZaz09-_.~",
		" a!*'()+/=&":       "%20a%21%2A%27%28%29%2B%2F%3D%26",
		"短信":                "%E7%9F%AD%E4%BF%A1",
		`{"code":"123456"}`: "%7B%22code%22%3A%22123456%22%7D",
	} {
		if got := PercentEncode(in); got != want {
			t.Errorf("PercentEncode(%q) = %q, want %q", in, got, want)
		}
	}
	if got := CanonicalLocale(" ZH_cn "); got != "zh-CN" {
		t.Errorf("CanonicalLocale = %q", got)
	}
	if got := CanonicalLocale("zh-hans-cn"); !strings.EqualFold(got, "zh-Hans-CN") || got != "zh-Hans-CN" {
		t.Errorf("CanonicalLocale = %q", got)
	}
}

// TestSMSTemplateLocale: a provider's template is the locale's, else one
// of the same language in the same script, else the default locale's.
func TestSMSTemplateLocale(t *testing.T) {
	tpl := WithDefaults(sms.Templates{DefaultLocale: "zh-CN",
		Codes:  map[verify.BizKey]map[string]string{sms.AnyBizKey: {"zh-CN": "A", "zh-HK": "B", "en": "E"}},
		Notice: map[string]string{"zh-CN": "N"}})
	for locale, want := range map[string]string{
		"zh-CN": "A", "zh": "A", "zh-SG": "A", "zh-TW": "B", "zh-Hant": "B", "zh-HK": "B",
		"en-GB": "E", "en": "E", "fr": "A", "": "A",
	} {
		if id, _ := Template(tpl, verify.SMS{Locale: locale, Code: "123456", BizKey: "SIGNIN"}); id != want {
			t.Errorf("locale %q: template %q, want %q", locale, id, want)
		}
	}
}
