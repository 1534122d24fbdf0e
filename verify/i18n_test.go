package verify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/texts"
)

// A code goes out in the language of the request that asked for it, and
// tells an SMS sender its locale; without one, in English with no locale.
func TestCodeLanguage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		for _, tc := range []struct {
			ctx    context.Context
			locale string
			want   string
		}{
			{deskkit.WithLanguage(context.Background(), language.SimplifiedChinese), "zh-CN", "（deskkit 验证码），用于修改手机号，5 分钟内有效。请勿泄露给他人。"},
			{deskkit.WithLanguage(context.Background(), language.MustParse("zh-CN")), "zh-CN", "（deskkit 验证码），用于修改手机号，5 分钟内有效。请勿泄露给他人。"},
			{deskkit.WithLanguage(context.Background(), language.English), "en", " is your deskkit code to change your mobile number. It expires in 5 minutes. Do not share it."},
			{deskkit.WithLanguage(context.Background(), language.French), "en", " is your deskkit code to change your mobile number. It expires in 5 minutes. Do not share it."},
			{context.Background(), "", " is your deskkit code to change your mobile number. It expires in 5 minutes. Do not share it."},
		} {
			f.clock.Advance(2 * time.Minute)
			if _, err := f.v.SendSMS(tc.ctx, f.ann, verify.SMSSend{BizKey: verify.ModifyMobile, Mobile: annMobile, Country: "CN"}); err != nil {
				t.Fatal(err)
			}
			all := f.sink.SMS()
			m := all[len(all)-1]
			if m.Locale != tc.locale || m.Text != m.Code+tc.want {
				t.Errorf("locale %q, text %q; want %q, %q", m.Locale, m.Text, tc.locale, m.Code+tc.want)
			}
		}

		f.clock.Advance(2 * time.Minute)
		zh := deskkit.WithLanguage(context.Background(), language.SimplifiedChinese)
		if _, err := f.v.SendEmail(zh, f.ann, verify.EmailSend{BizKey: "SIGNIN", ToAddress: [][]string{{annEmail}}}); err != nil {
			t.Fatal(err)
		}
		mails := f.sink.Mail()
		m := mails[len(mails)-1]
		if want := m.Code + " 是您的 deskkit 验证码"; m.Subject != want || !strings.HasPrefix(m.Text, "您正在登录，deskkit 验证码为 "+m.Code+"。") {
			t.Errorf("zh mail: %q / %q", m.Subject, m.Text)
		}
	})
}

// A notice to the old address is written in the language of the request
// that changed it, though the worker sends it later.
func TestNoticeLanguage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil)
		for i, tc := range []struct {
			tag                language.Tag
			subject, text, sms string
			locale             string
		}{
			{language.SimplifiedChinese, "您的 deskkit 邮箱已修改", "您的 deskkit 账号的邮箱已修改为 a***@example.com。\n\n如非本人操作，请立即联系管理员。",
				"deskkit：您账号的手机号已修改为 +86*******7000。如非本人操作，请立即联系管理员。", "zh-CN"},
			{language.English, "Your deskkit e-mail address was changed", "The e-mail address of your deskkit account was changed to a***@example.com.\n\nIf this was not you, contact your administrator at once.",
				"deskkit: the mobile number of your account was changed to +86*******7000. If this was not you, contact your administrator.", "en"},
		} {
			ctx := deskkit.WithLanguage(context.Background(), tc.tag)
			from, to := annEmail, "a2@example.com"
			mfrom, mto := annMobile, newMobile
			if i == 1 {
				from, to = to, "a3@example.com"
				mfrom, mto = mto, "+8613600137000"
			}
			f.clock.Advance(2 * time.Minute)
			if _, err := f.v.SendEmail(ctx, f.ann, verify.EmailSend{BizKey: verify.ModifyEmail, ToAddress: [][]string{{from}}}); err != nil {
				t.Fatal(err)
			}
			link, err := f.v.CheckEmail(ctx, f.ann, verify.EmailCheck{BizKey: verify.ModifyEmail, Email: from, Code: f.sink.LastCode(from)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.v.SendEmail(ctx, f.ann, verify.EmailSend{BizKey: verify.ModifyEmail, ToAddress: [][]string{{to}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.v.ChangeEmail(ctx, f.ann, verify.EmailChange{BizKey: verify.ModifyEmail, Email: to, Code: f.sink.LastCode(to), LinkSecret: link.Secret}); err != nil {
				t.Fatal(err)
			}
			mails := f.sink.Mail()
			n := mails[len(mails)-1]
			if n.To != from || n.Code != "" || n.Subject != tc.subject || n.Text != tc.text {
				t.Errorf("%v notice: to %s, %q / %q; want %q / %q", tc.tag, n.To, n.Subject, n.Text, tc.subject, tc.text)
			}

			f.changeMobileIn(t, ctx, mfrom, mto)
			sms := f.sink.SMS()
			s := sms[len(sms)-1]
			if s.To != mfrom || s.Code != "" || s.Locale != tc.locale || s.Text != tc.sms {
				t.Errorf("%v SMS notice: to %s, locale %q, %q; want %q", tc.tag, s.To, s.Locale, s.Text, tc.sms)
			}
		}
	})
}

// changeMobileIn changes ann's mobile number with every request in ctx's
// language.
func (f *fixture) changeMobileIn(t *testing.T, ctx context.Context, from, to string) {
	t.Helper()
	f.clock.Advance(2 * time.Minute)
	if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: verify.ModifyMobile, Mobile: from, Country: "CN"}); err != nil {
		t.Fatal(err)
	}
	link, err := f.v.CheckSMS(ctx, f.ann, verify.SMSCheck{BizKey: verify.ModifyMobile, Mobile: from, Country: "CN", Code: f.sink.LastCode(from)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: verify.ModifyMobile, Mobile: to, Country: "CN"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.ChangeMobile(ctx, f.ann, verify.MobileChange{BizKey: verify.ModifyMobile, Mobile: to, Country: "CN", Code: f.sink.LastCode(to), LinkSecret: link.Secret}); err != nil {
		t.Fatal(err)
	}
}

// A host overrides zh-CN's templates field by field and adds a language.
func TestLocaleTemplates(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	f := setup(t, db, &verify.Config{Locales: map[string]verify.LocaleTemplates{
		"zh-CN": {Code: texts.Template{SMS: `【{{.AppName}}】验证码 {{.Code}}，{{.Minutes}} 分钟内有效。`}},
		"ja":    {ByBizKey: map[verify.BizKey]texts.Template{"SIGNIN": {SMS: `{{.Code}} は {{.AppName}} のログインコードです`}}},
	}})
	for _, tc := range []struct {
		tag    string
		bizKey verify.BizKey
		locale string
		want   string
	}{
		{"zh", "SIGNIN", "zh-CN", "【deskkit】验证码 %s，5 分钟内有效。"},
		{"ja-JP", "SIGNIN", "ja", "%s は deskkit のログインコードです"},
		// Another bizKey of ja falls back to English's template, and the
		// purpose to English, as no catalogue translates it.
		{"ja", "SIGNUP", "ja", "%s is your deskkit code to sign up. It expires in 5 minutes. Do not share it."},
	} {
		f.clock.Advance(2 * time.Minute)
		ctx := deskkit.WithLanguage(context.Background(), language.MustParse(tc.tag))
		if _, err := f.v.SendSMS(ctx, f.bob, verify.SMSSend{BizKey: tc.bizKey, Mobile: bobMobile, Country: "CN"}); err != nil {
			t.Fatal(err)
		}
		all := f.sink.SMS()
		m := all[len(all)-1]
		if want := strings.Replace(tc.want, "%s", m.Code, 1); m.Locale != tc.locale || m.Text != want {
			t.Errorf("%s %s: %q %q, want %q %q", tc.tag, tc.bizKey, m.Locale, m.Text, tc.locale, want)
		}
	}
	for _, bad := range []map[string]verify.LocaleTemplates{
		{"not a tag!": {}},
		{"en": {}},
		{"zh-CN": {Notice: texts.Template{SMS: "{{.Nope"}}},
	} {
		if _, err := verify.New(db, f.dir, f.sink, f.sink, secret, &verify.Config{Locales: bad}); err == nil {
			t.Errorf("New accepted Locales %v", bad)
		}
	}
}
