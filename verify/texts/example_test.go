package texts_test

import (
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/texts"
)

// Config takes the templates: English ones by bizKey, and those of other
// languages by tag. Fields left empty keep the shipped texts.
func ExampleTemplate() {
	cfg := &verify.Config{
		Templates: map[verify.BizKey]texts.Template{
			verify.PasswordUpdate: {SMS: `{{.Code}} resets your {{.AppName}} password. Valid {{.Minutes}} minutes.`},
		},
		Locales: map[string]verify.LocaleTemplates{
			"zh-CN": {Code: texts.Template{SMS: `【{{.AppName}}】验证码 {{.Code}}，{{.Minutes}} 分钟内有效。`}},
		},
	}
	_ = cfg // verify.New(db, dir, sms, mail, secret, cfg)
}
