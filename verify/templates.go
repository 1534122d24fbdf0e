package verify

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
)

// Template is the text of the messages of one bizKey, written in Go's
// template language with TemplateData as the data. SMS, Subject and Text
// are text/template; HTML is html/template (the same language, with
// escaping suited to HTML, so that nothing in the data can inject markup).
// Empty fields fall back to the defaults.
type Template struct {
	SMS     string
	Subject string
	Text    string
	HTML    string
}

// TemplateData is what a template may use.
type TemplateData struct {
	AppName string
	BizKey  BizKey
	Purpose string // what the code is for, in words: "change your mobile number"
	Code    string // "" in a notice
	Minutes int    // how long the code is valid
	// NewAddress is, in a notice, the new address, masked:
	// "+86*******8000", "a***@example.com".
	NewAddress string
}

// The defaults. Codes come first in the SMS, where phones offer to copy
// them.
var (
	defaultCode = Template{
		SMS:     `{{.Code}} is your {{.AppName}} code to {{.Purpose}}. It expires in {{.Minutes}} minutes. Do not share it.`,
		Subject: `{{.Code}} is your {{.AppName}} code`,
		Text: `Your {{.AppName}} code to {{.Purpose}} is {{.Code}}.

It expires in {{.Minutes}} minutes. If you did not ask for it, ignore this message; nobody can use the code without access to this mailbox.`,
		HTML: `<p>Your {{.AppName}} code to {{.Purpose}} is</p>
<p style="font-size:24px;font-weight:bold;letter-spacing:4px">{{.Code}}</p>
<p>It expires in {{.Minutes}} minutes. If you did not ask for it, ignore this message; nobody can use the code without access to this mailbox.</p>`,
	}
	defaultNotice = Template{
		SMS:     `{{.AppName}}: the {{.Purpose}} of your account was changed to {{.NewAddress}}. If this was not you, contact your administrator.`,
		Subject: `Your {{.AppName}} {{.Purpose}} was changed`,
		Text: `The {{.Purpose}} of your {{.AppName}} account was changed to {{.NewAddress}}.

If this was not you, contact your administrator at once.`,
		HTML: `<p>The {{.Purpose}} of your {{.AppName}} account was changed to <b>{{.NewAddress}}</b>.</p>
<p>If this was not you, contact your administrator at once.</p>`,
	}
)

// purposes say what the codes of some bizKeys are for; the others say
// "confirm <bizKey in words>".
var purposes = map[BizKey]string{
	"SIGNUP":          "sign up",
	"SIGNIN":          "sign in",
	"PASSWORD_FORGET": "reset your password",
	PasswordUpdate:    "change your password",
	SignCancel:        "cancel your account",
	ModifyMobile:      "change your mobile number",
	BindMobile:        "add a mobile number",
	ModifyEmail:       "change your e-mail address",
	BindEmail:         "add an e-mail address",
	"CHANNEL_TEST":    "test a notification channel",
}

func purpose(b BizKey) string {
	if p, ok := purposes[b]; ok {
		return p
	}
	return "confirm " + strings.ToLower(strings.ReplaceAll(string(b), "_", " "))
}

// noticePurpose is what a notice says was changed.
func noticePurpose(k Kind) string {
	if k == KindSMS {
		return "mobile number"
	}
	return "e-mail address"
}

// parsed is a Template, parsed.
type parsed struct {
	sms, subject, text *texttemplate.Template
	html               *htmltemplate.Template
}

// message is a rendered Template.
type message struct{ SMS, Subject, Text, HTML string }

type templates struct {
	def    *parsed
	byKey  map[BizKey]*parsed
	notice *parsed
}

func (ts templates) code(b BizKey) *parsed {
	if p, ok := ts.byKey[b]; ok {
		return p
	}
	return ts.def
}

// newTemplates parses the defaults and the host's overrides; a template
// that does not parse, or fails on sample data, is an error of New.
func newTemplates(overrides map[BizKey]Template, notice *Template) (templates, error) {
	ts := templates{byKey: map[BizKey]*parsed{}}
	var err error
	if ts.def, err = parse("default", defaultCode, defaultCode); err != nil {
		return ts, err
	}
	for b, t := range overrides {
		if !knownBizKey(b) {
			return ts, fmt.Errorf("verify: template for unknown bizKey %q", b)
		}
		if ts.byKey[b], err = parse(string(b), t, defaultCode); err != nil {
			return ts, err
		}
	}
	var n Template
	if notice != nil {
		n = *notice
	}
	if ts.notice, err = parse("notice", n, defaultNotice); err != nil {
		return ts, err
	}
	return ts, nil
}

func knownBizKey(b BizKey) bool {
	return checkBizKey(KindSMS, b) == nil || checkBizKey(KindEmail, b) == nil
}

func parse(name string, t, def Template) (*parsed, error) {
	pick := func(s, d string) string {
		if s == "" {
			return d
		}
		return s
	}
	var p parsed
	var err error
	for _, f := range []struct {
		dst  **texttemplate.Template
		part string
		src  string
	}{{&p.sms, "SMS", pick(t.SMS, def.SMS)}, {&p.subject, "Subject", pick(t.Subject, def.Subject)}, {&p.text, "Text", pick(t.Text, def.Text)}} {
		if *f.dst, err = texttemplate.New(name + "." + f.part).Option("missingkey=error").Parse(f.src); err != nil {
			return nil, fmt.Errorf("verify: template %s: %w", name, err)
		}
	}
	if p.html, err = htmltemplate.New(name + ".HTML").Option("missingkey=error").Parse(pick(t.HTML, def.HTML)); err != nil {
		return nil, fmt.Errorf("verify: template %s: %w", name, err)
	}
	if _, err := p.render(TemplateData{AppName: "app", BizKey: "SIGNIN", Purpose: "sign in", Code: "123456", Minutes: 5, NewAddress: "a***@example.com"}); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *parsed) render(d TemplateData) (message, error) {
	var m message
	var b bytes.Buffer
	exec := func(dst *string, run func() error) error {
		b.Reset()
		if err := run(); err != nil {
			return fmt.Errorf("verify: render template: %w", err)
		}
		*dst = b.String()
		return nil
	}
	if err := exec(&m.SMS, func() error { return p.sms.Execute(&b, d) }); err != nil {
		return m, err
	}
	if err := exec(&m.Subject, func() error { return p.subject.Execute(&b, d) }); err != nil {
		return m, err
	}
	if err := exec(&m.Text, func() error { return p.text.Execute(&b, d) }); err != nil {
		return m, err
	}
	if err := exec(&m.HTML, func() error { return p.html.Execute(&b, d) }); err != nil {
		return m, err
	}
	m.Subject = strings.Join(strings.Fields(m.Subject), " ") // no header injection
	return m, nil
}
