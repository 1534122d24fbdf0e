package verify

import (
	"bytes"
	"context"
	"fmt"
	htmltemplate "html/template"
	"maps"
	"slices"
	"strings"
	texttemplate "text/template"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/i18n"
	"github.com/deskkit/deskkit/verify/texts"
)

// The defaults. Codes come first in the SMS, where phones offer to copy
// them.
var (
	defaultCode = texts.Template{
		SMS:     `{{.Code}} is your {{.AppName}} code to {{.Purpose}}. It expires in {{.Minutes}} minutes. Do not share it.`,
		Subject: `{{.Code}} is your {{.AppName}} code`,
		Text: `Your {{.AppName}} code to {{.Purpose}} is {{.Code}}.

It expires in {{.Minutes}} minutes. If you did not ask for it, ignore this message; nobody can use the code without access to this mailbox.`,
		HTML: `<p>Your {{.AppName}} code to {{.Purpose}} is</p>
<p style="font-size:24px;font-weight:bold;letter-spacing:4px">{{.Code}}</p>
<p>It expires in {{.Minutes}} minutes. If you did not ask for it, ignore this message; nobody can use the code without access to this mailbox.</p>`,
	}
	defaultNotice = texts.Template{
		SMS:     `{{.AppName}}: the {{.Purpose}} of your account was changed to {{.NewAddress}}. If this was not you, contact your administrator.`,
		Subject: `Your {{.AppName}} {{.Purpose}} was changed`,
		Text: `The {{.Purpose}} of your {{.AppName}} account was changed to {{.NewAddress}}.

If this was not you, contact your administrator at once.`,
		HTML: `<p>The {{.Purpose}} of your {{.AppName}} account was changed to <b>{{.NewAddress}}</b>.</p>
<p>If this was not you, contact your administrator at once.</p>`,
	}
)

// zhCN is the locale of the shipped Simplified Chinese templates.
const zhCN = "zh-CN"

// The shipped Simplified Chinese templates.
var (
	zhCode = texts.Template{
		SMS:     `{{.Code}}（{{.AppName}} 验证码），用于{{.Purpose}}，{{.Minutes}} 分钟内有效。请勿泄露给他人。`,
		Subject: `{{.Code}} 是您的 {{.AppName}} 验证码`,
		Text: `您正在{{.Purpose}}，{{.AppName}} 验证码为 {{.Code}}。

验证码 {{.Minutes}} 分钟内有效。如非本人操作，请忽略本邮件；没有此邮箱的访问权限，任何人都无法使用该验证码。`,
		HTML: `<p>您正在{{.Purpose}}，{{.AppName}} 验证码为</p>
<p style="font-size:24px;font-weight:bold;letter-spacing:4px">{{.Code}}</p>
<p>验证码 {{.Minutes}} 分钟内有效。如非本人操作，请忽略本邮件；没有此邮箱的访问权限，任何人都无法使用该验证码。</p>`,
	}
	zhNotice = texts.Template{
		SMS:     `{{.AppName}}：您账号的{{.Purpose}}已修改为 {{.NewAddress}}。如非本人操作，请立即联系管理员。`,
		Subject: `您的 {{.AppName}} {{.Purpose}}已修改`,
		Text: `您的 {{.AppName}} 账号的{{.Purpose}}已修改为 {{.NewAddress}}。

如非本人操作，请立即联系管理员。`,
		HTML: `<p>您的 {{.AppName}} 账号的{{.Purpose}}已修改为 <b>{{.NewAddress}}</b>。</p>
<p>如非本人操作，请立即联系管理员。</p>`,
	}
)

// LocaleTemplates are the templates of one language other than English
// (Config.Locales). Empty fields fall back to the shipped templates of the
// language if deskkit ships it (zh-CN), else to English's.
type LocaleTemplates struct {
	Code     texts.Template            // the codes of every bizKey without one in ByBizKey
	ByBizKey map[BizKey]texts.Template // the codes of some bizKeys
	Notice   texts.Template            // the notice to an old address
}

// purposes say what the codes of some bizKeys are for; the others say
// "confirm <bizKey in words>". They are messages of deskkit.Messages, so
// that each language's templates get them in their language.
var purposes = map[BizKey]deskkit.Text{
	"SIGNUP":          deskkit.Textf("sign up"),
	"SIGNIN":          deskkit.Textf("sign in"),
	"PASSWORD_FORGET": deskkit.Textf("reset your password"),
	PasswordUpdate:    deskkit.Textf("change your password"),
	SignCancel:        deskkit.Textf("cancel your account"),
	ModifyMobile:      deskkit.Textf("change your mobile number"),
	BindMobile:        deskkit.Textf("add a mobile number"),
	ModifyEmail:       deskkit.Textf("change your e-mail address"),
	BindEmail:         deskkit.Textf("add an e-mail address"),
	"CHANNEL_TEST":    deskkit.Textf("test a notification channel"),
}

func purpose(b BizKey) deskkit.Text {
	if p, ok := purposes[b]; ok {
		return p
	}
	return deskkit.Textf("confirm %s", strings.ToLower(strings.ReplaceAll(string(b), "_", " ")))
}

// noticePurpose is what a notice says was changed.
func noticePurpose(k Kind) deskkit.Text {
	if k == KindSMS {
		return deskkit.Textf("mobile number")
	}
	return deskkit.Textf("e-mail address")
}

// parsed is a texts.Template, parsed.
type parsed struct {
	sms, subject, text *texttemplate.Template
	html               *htmltemplate.Template
}

// message is a rendered texts.Template.
type message struct{ SMS, Subject, Text, HTML string }

// templateSet is the templates of one language.
type templateSet struct {
	locale string       // "en", "zh-CN": SMS.Locale and a notice's
	tag    language.Tag // the language, for deskkit.Messages
	def    *parsed
	byKey  map[BizKey]*parsed
	notice *parsed
}

func (ts *templateSet) code(b BizKey) *parsed {
	if p, ok := ts.byKey[b]; ok {
		return p
	}
	return ts.def
}

// templates are the sets of every language, English first.
type templates struct {
	sets    []*templateSet
	tags    []language.Tag // the sets' tags, in their order
	matcher language.Matcher
}

// forContext is the set of the language of ctx (deskkit.LanguageOf), and
// the locale to tell an SMS sender: English and "" when ctx carries none.
func (ts templates) forContext(ctx context.Context) (*templateSet, string) {
	tag, ok := deskkit.LanguageOf(ctx)
	if !ok {
		return ts.sets[0], ""
	}
	s := ts.match(tag)
	return s, s.locale
}

// match is the set of tag's language in its script (i18n.ExactTag: a
// zh-Hans reader gets zh-CN's or zh-SG's templates, never zh-TW's, and a
// zh-Hant reader zh-TW's or zh-HK's, never zh-CN's), else English's.
func (ts templates) match(tag language.Tag) *templateSet {
	got, ok := i18n.ExactTag(ts.matcher, ts.tags, tag)
	if !ok {
		return ts.sets[0]
	}
	for _, s := range ts.sets {
		if s.tag == got {
			return s
		}
	}
	return ts.sets[0]
}

// forLocale is the set of a locale a notice stored; English for "" or a
// locale no longer configured.
func (ts templates) forLocale(locale string) *templateSet {
	for _, s := range ts.sets {
		if s.locale == locale {
			return s
		}
	}
	return ts.sets[0]
}

// newTemplates parses the defaults and the host's overrides; a template
// that does not parse, or fails on sample data, is an error of New.
func newTemplates(overrides map[BizKey]texts.Template, notice *texts.Template, locales map[string]LocaleTemplates) (templates, error) {
	var n texts.Template
	if notice != nil {
		n = *notice
	}
	en, err := newSet("en", language.English, LocaleTemplates{Code: defaultCode, ByBizKey: overrides, Notice: n}, defaultCode, defaultNotice)
	if err != nil {
		return templates{}, err
	}
	ts := templates{sets: []*templateSet{en}}
	if _, ok := locales[zhCN]; !ok {
		locales = maps.Clone(locales)
		if locales == nil {
			locales = map[string]LocaleTemplates{}
		}
		locales[zhCN] = LocaleTemplates{}
	}
	for _, locale := range slices.Sorted(maps.Keys(locales)) {
		tag, err := language.Parse(locale)
		if err != nil {
			return templates{}, fmt.Errorf("verify: Locales: %q is no language tag: %w", locale, err)
		}
		if tag == language.English {
			return templates{}, fmt.Errorf("verify: Locales: %q: English's templates are Templates and Notice", locale)
		}
		code, note := defaultCode, defaultNotice
		if locale == zhCN {
			code, note = zhCode, zhNotice
		}
		s, err := newSet(locale, tag, locales[locale], code, note)
		if err != nil {
			return templates{}, err
		}
		ts.sets = append(ts.sets, s)
	}
	tags := make([]language.Tag, len(ts.sets))
	for i, s := range ts.sets {
		tags[i] = s.tag
	}
	ts.tags, ts.matcher = tags, language.NewMatcher(tags)
	return ts, nil
}

func newSet(locale string, tag language.Tag, lt LocaleTemplates, code, notice texts.Template) (*templateSet, error) {
	s := &templateSet{locale: locale, tag: tag, byKey: map[BizKey]*parsed{}}
	name := func(n string) string {
		if locale == "en" {
			return n
		}
		return locale + "." + n
	}
	var err error
	if s.def, err = parse(name("default"), lt.Code, code); err != nil {
		return nil, err
	}
	for b, t := range lt.ByBizKey {
		if !knownBizKey(b) {
			return nil, fmt.Errorf("verify: template for unknown bizKey %q", b)
		}
		if s.byKey[b], err = parse(name(string(b)), t, code); err != nil {
			return nil, err
		}
	}
	if s.notice, err = parse(name("notice"), lt.Notice, notice); err != nil {
		return nil, err
	}
	return s, nil
}

func knownBizKey(b BizKey) bool {
	return checkBizKey(KindSMS, b) == nil || checkBizKey(KindEmail, b) == nil
}

func parse(name string, t, def texts.Template) (*parsed, error) {
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
	if _, err := p.render(texts.Data{AppName: "app", BizKey: "SIGNIN", Purpose: "sign in", Code: "123456", Minutes: 5, NewAddress: "a***@example.com"}); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *parsed) render(d texts.Data) (message, error) {
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

// locale is the locale of the language of ctx, as a notice stores it; ""
// when ctx carries none.
func (v *Verifier) locale(ctx context.Context) string {
	_, locale := v.templates.forContext(ctx)
	return locale
}
