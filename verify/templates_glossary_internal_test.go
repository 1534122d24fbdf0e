package verify

import (
	"testing"

	"github.com/deskkit/deskkit/internal/i18n/glossary"
	"github.com/deskkit/deskkit/verify/texts"
)

// TestChineseTemplatesKeepGlossary fails when a shipped Simplified Chinese
// template of a code or a notice (SMS, e-mail subject, text and HTML) breaks
// the glossary: 你 for 您, a term it rules out, half-width punctuation in
// Chinese text.
func TestChineseTemplatesKeepGlossary(t *testing.T) {
	for name, tpl := range map[string]texts.Template{"code": zhCode, "notice": zhNotice} {
		for part, text := range map[string]string{"SMS": tpl.SMS, "Subject": tpl.Subject, "Text": tpl.Text, "HTML": tpl.HTML} {
			if text == "" {
				t.Errorf("%s %s: empty", name, part)
			}
			for _, f := range glossary.Check(text) {
				t.Errorf("%s %s: %s", name, part, f)
			}
		}
	}
}
