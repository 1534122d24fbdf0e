package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/smtp"
)

func TestVerifyCommandLineErrors(t *testing.T) {
	ctx := context.Background()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string // in the error
	}{
		{"unknown SMS provider", []string{"-sms-provider", "pigeon", "-database-url", dbURL}, nil, "-sms-provider (DESKKIT_SMS_PROVIDER) must be log, http, twilio, aliyun or tencent"},
		{"a template entry without =", []string{"-sms-provider", "tencent", "-sms-templates", "*:1", "-database-url", dbURL}, nil, "-sms-templates (DESKKIT_SMS_TEMPLATES): \"*:1\" is not [LOCALE:]KEY=ID"},
		{"a template for an unknown bizKey", []string{"-database-url", dbURL}, map[string]string{envSMSProvider: "aliyun", envSMSTemplates: "SIGNOUT=1"}, "SIGNOUT is neither an SMS bizKey"},
		{"short secret", []string{"-database-url", dbURL}, map[string]string{envSecret: "short"}, "DESKKIT_SECRET must be at least 32 characters"},
		{"short previous secret", []string{"-database-url", dbURL}, map[string]string{envSecretPrevious: "short"}, "DESKKIT_SECRET_PREVIOUS must be at least 32"},
		{"code TTL over 10m", []string{"-code-ttl", "11m", "-database-url", dbURL}, nil, "-code-ttl (DESKKIT_CODE_TTL) must be at most 10m0s"},
		{"http provider without a URL", []string{"-sms-provider", "http", "-database-url", dbURL}, nil, "-sms-http-url (DESKKIT_SMS_HTTP_URL)"},
		{"bad SMTP TLS mode", []string{"-smtp-addr", "127.0.0.1:25", "-smtp-tls", "maybe", "-database-url", dbURL}, nil, "SMTP"},
		{"SMTP password in clear to a remote host", []string{"-smtp-addr", "mail.example.com:25", "-smtp-tls", "none", "-smtp-username", "ann", "-database-url", dbURL}, map[string]string{envSMTPPassword: "pw"}, "SMTP"},
		{"token -mobile without -country", []string{"token", "-tenant", "a", "-username", "b", "-mobile", "13800138000", "-database-url", dbURL}, nil, "-mobile and -country go together"},
		{"token with a bad mobile", []string{"token", "-tenant", "a", "-username", "b", "-mobile", "12", "-country", "CN", "-database-url", dbURL}, nil, "-mobile, -country: mobile must be"},
		{"token with a bad e-mail", []string{"token", "-tenant", "a", "-username", "b", "-email", "nobody", "-database-url", dbURL}, nil, "-email: email must be"},
	}
	for _, c := range cases {
		err := run(ctx, c.args, io.Discard, io.Discard, env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

// TestSMSConfigErrorsNameFlags: an SMS provider's setting that is
// missing or refused is named as the server's user sets it, by its flag
// and environment variable, never by the library's Go field
// (aliyun.Config.SignName, Templates.Notice, sms.AnyBizKey "*").
func TestSMSConfigErrorsNameFlags(t *testing.T) {
	ctx := context.Background()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	aliyunKeys := map[string]string{envAliyunKeyID: "id", envAliyunKeySecret: "secret"}
	tencentKeys := map[string]string{envTencentSecretID: "id", envTencentSecretKey: "key"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	aliyun := []string{"-sms-provider", "aliyun", "-sms-sign-name", "s", "-sms-templates", "*=T,notice=N", "-database-url", dbURL}
	tencent := []string{"-sms-provider", "tencent", "-tencent-sms-app-id", "1400006666", "-sms-sign-name", "s", "-sms-templates", "*=1,notice=2", "-database-url", dbURL}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"aliyun without keys", aliyun, nil,
			"-sms-provider aliyun needs DESKKIT_ALIYUN_ACCESS_KEY_ID and DESKKIT_ALIYUN_ACCESS_KEY_SECRET"},
		{"aliyun without its secret", aliyun, map[string]string{envAliyunKeyID: "id"},
			"-sms-provider aliyun needs DESKKIT_ALIYUN_ACCESS_KEY_SECRET"},
		{"aliyun, the key id implied, without a sign name", []string{"-sms-templates", "*=T,notice=N", "-database-url", dbURL}, aliyunKeys,
			"-sms-provider aliyun needs -sms-sign-name (DESKKIT_SMS_SIGN_NAME)"},
		{"aliyun without a template for every bizKey", []string{"-sms-provider", "aliyun", "-sms-sign-name", "s", "-sms-templates", "SIGNIN=T,notice=N", "-database-url", dbURL}, aliyunKeys,
			"-sms-templates (DESKKIT_SMS_TEMPLATES) has no template in -sms-locale (DESKKIT_SMS_LOCALE) zh-CN for bizKey SIGNUP, PASSWORD_FORGET"},
		{"aliyun without templates", []string{"-sms-provider", "aliyun", "-sms-sign-name", "s", "-database-url", dbURL}, aliyunKeys,
			"add *=ID for every bizKey without a template of its own, or KEY=ID for each"},
		{"aliyun templates in another locale only", []string{"-sms-provider", "aliyun", "-sms-sign-name", "s", "-sms-templates", "en:*=T,en:notice=N", "-database-url", dbURL}, aliyunKeys,
			"has no template in -sms-locale (DESKKIT_SMS_LOCALE) zh-CN for bizKey SIGNUP"},
		{"aliyun over http to a remote host", append(aliyun, "-sms-endpoint", "http://dysmsapi.aliyuncs.com"), aliyunKeys,
			"-sms-endpoint (DESKKIT_SMS_ENDPOINT): "},
		{"aliyun with a template id with a space", []string{"-sms-provider", "aliyun", "-sms-sign-name", "s", "-sms-templates", "*=SMS 1,notice=N", "-database-url", dbURL}, aliyunKeys,
			"-sms-templates (DESKKIT_SMS_TEMPLATES): "},
		{"tencent without an app id", []string{"-sms-provider", "tencent", "-sms-sign-name", "s", "-sms-templates", "*=1,notice=2", "-database-url", dbURL}, tencentKeys,
			"-sms-provider tencent needs -tencent-sms-app-id (DESKKIT_TENCENT_SMS_APP_ID)"},
		{"tencent without anything", []string{"-sms-provider", "tencent", "-database-url", dbURL}, nil,
			"-sms-provider tencent needs DESKKIT_TENCENT_SECRET_ID, DESKKIT_TENCENT_SECRET_KEY, -tencent-sms-app-id (DESKKIT_TENCENT_SMS_APP_ID) and -sms-sign-name (DESKKIT_SMS_SIGN_NAME)"},
		{"tencent without a notice template", []string{"-sms-provider", "tencent", "-tencent-sms-app-id", "1400006666", "-sms-sign-name", "s", "-sms-templates", "*=1", "-database-url", dbURL}, tencentKeys,
			"-sms-templates (DESKKIT_SMS_TEMPLATES) has no template in -sms-locale (DESKKIT_SMS_LOCALE) zh-CN for the notice to the old number after a change: add notice=ID"},
		{"tencent with a bad region", append(tencent, "-tencent-region", "ap guangzhou"), tencentKeys,
			"-tencent-region (DESKKIT_TENCENT_REGION): "},
		{"a locale that is no language", append(aliyun, "-sms-locale", "klingon"), aliyunKeys,
			"-sms-locale (DESKKIT_SMS_LOCALE): locale must be a valid BCP 47 language tag"},
		{"a template locale that is no language", []string{"-sms-provider", "aliyun", "-sms-sign-name", "s", "-sms-templates", "*=T,notice=N,english:notice=N2", "-database-url", dbURL}, aliyunKeys,
			"-sms-templates (DESKKIT_SMS_TEMPLATES): the entry of locale \"english\": locale must be a valid BCP 47 language tag"},
		{"a bad notice number", tencent, with(tencentKeys, envSMSNoticeNumber, "full"),
			"-sms-notice-number (DESKKIT_SMS_NOTICE_NUMBER) must be last4 or masked, not \"full\""},
		{"twilio without credentials", []string{"-database-url", dbURL}, map[string]string{envSMSProvider: "twilio"},
			"-sms-provider twilio needs -twilio-account-sid (DESKKIT_TWILIO_ACCOUNT_SID), DESKKIT_TWILIO_AUTH_TOKEN and -twilio-from (DESKKIT_TWILIO_FROM)"},
		{"twilio from no number", []string{"-twilio-account-sid", "AC1", "-twilio-from", "0800", "-database-url", dbURL}, map[string]string{envTwilioAuthToken: "t"},
			"-twilio-from (DESKKIT_TWILIO_FROM): "},
	}
	for _, c := range cases {
		err := run(ctx, c.args, io.Discard, io.Discard, env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
			continue
		}
		// What comes before the library's own words (its packages' names,
		// "aliyun: ...") names no Go field.
		head := err.Error()
		for _, lib := range []string{"verify: ", "aliyun: ", "tencent: ", "twilio: ", "gateway: "} {
			if before, _, ok := strings.Cut(head, lib); ok {
				head = before
			}
		}
		for _, goName := range []string{"Config.", "AliyunSMSConfig", "TencentSMSConfig", "TwilioConfig", "Templates.", "AnyBizKey", "AccessKeyID", "SDKAppID", "SignName", "Endpoint"} {
			if strings.Contains(head, goName) {
				t.Errorf("%s: %q names the Go field %s", c.name, err, goName)
			}
		}
	}
}

func TestSMTPTLSDefault(t *testing.T) {
	for _, c := range []struct {
		addr, tls string
		want      smtp.TLSMode
	}{
		{"127.0.0.1:1025", "", smtp.TLSNone},
		{"localhost:1025", "", smtp.TLSNone},
		{"[::1]:25", "", smtp.TLSNone},
		{"smtp.example.com:587", "", smtp.TLSStartTLS},
		{"smtp.example.com:465", "tls", smtp.TLSImplicit},
		{"127.0.0.1:1025", "starttls", smtp.TLSStartTLS},
		{"smtp.example.com:587", " STARTTLS ", smtp.TLSStartTLS},
		{"smtp.example.com:465", "TLS", smtp.TLSImplicit},
	} {
		var cfg verifyConfig
		fs := newFlagSet("serve", io.Discard, io.Discard, env(map[string]string{envSMTPAddr: c.addr, envSMTPTLS: c.tls}))
		complete := addVerifyFlags(fs, &cfg)
		if err := fs.parse(nil); err != nil {
			t.Fatal(err)
		}
		if err := complete(); err != nil {
			t.Fatal(err)
		}
		if cfg.smtp.TLS != c.want {
			t.Errorf("%s with %q: TLS %q, want %q", c.addr, c.tls, cfg.smtp.TLS, c.want)
		}
	}
}

func TestSMSProviderDefault(t *testing.T) {
	for _, c := range []struct {
		vars map[string]string
		want string
	}{
		{nil, "log"},
		{map[string]string{envSMSHTTPURL: "http://127.0.0.1:9/send"}, "http"},
		{map[string]string{envTwilioAccountSID: "AC1"}, "twilio"},
		{map[string]string{envAliyunKeyID: "LTAI1"}, "aliyun"},
		{map[string]string{envTencentSecretID: "AKID1"}, "tencent"},
		{map[string]string{envTencentSecretID: "AKID1", envSMSProvider: "Tencent"}, "tencent"},
		{map[string]string{envSMSHTTPURL: "http://127.0.0.1:9/send", envSMSProvider: "log"}, "log"},
		{map[string]string{envSMSHTTPURL: "http://127.0.0.1:9/send", envSMSProvider: "HTTP"}, "http"},
	} {
		var cfg verifyConfig
		fs := newFlagSet("serve", io.Discard, io.Discard, env(c.vars))
		complete := addVerifyFlags(fs, &cfg)
		if err := fs.parse(nil); err != nil {
			t.Fatal(err)
		}
		if err := complete(); err != nil {
			t.Fatal(err)
		}
		if cfg.smsProvider != c.want {
			t.Errorf("%v: provider %q, want %q", c.vars, cfg.smsProvider, c.want)
		}
	}
}

func TestTwilioVariables(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"documented": {envTwilioAccountSID: "AC1", envTwilioAuthToken: "tok", envTwilioFrom: "+12015550123"},
		"short":      {"DESKKIT_TWILIO_ACCOUNT": "AC1", "DESKKIT_TWILIO_TOKEN": "tok", "DESKKIT_TWILIO_SENDER": "+12015550123"},
	} {
		var cfg verifyConfig
		fs := newFlagSet("serve", io.Discard, io.Discard, env(vars))
		complete := addVerifyFlags(fs, &cfg)
		if err := fs.parse(nil); err != nil {
			t.Fatal(err)
		}
		if err := complete(); err != nil {
			t.Fatal(err)
		}
		if got := cfg.twilio; got.AccountSID != "AC1" || got.AuthToken != "tok" || got.From != "+12015550123" {
			t.Errorf("%s names: %+v", name, got)
		}
	}
}

// TestStoredSecret: replicas starting together over one database agree on
// one secret, and keep it.
func TestStoredSecret(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := migrateAll(ctx, db); err != nil {
			t.Fatal(err)
		}
		secrets := make([][]byte, 8)
		errs := make([]error, len(secrets))
		var wg sync.WaitGroup
		for i := range secrets {
			wg.Go(func() { secrets[i], errs[i] = storedSecret(ctx, db) })
		}
		wg.Wait()
		for i, s := range secrets {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if len(s) < verify.MinSecretLength || string(s) != string(secrets[0]) {
				t.Fatalf("replica %d: secret %q, replica 0: %q", i, s, secrets[0])
			}
		}
		again, err := storedSecret(ctx, db)
		if err != nil || string(again) != string(secrets[0]) {
			t.Errorf("a later start: %q, %v; want the first secret", again, err)
		}
	})
}

// TestTokenContacts: token -email -mobile -country store normalized
// addresses, as the Verifier would.
func TestTokenContacts(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		_, logs := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-email", " Ann@Example.COM ", "-mobile", "+1 (201) 555-0123", "-country", "us")
		if !strings.Contains(logs, `"mobile":"+12015550123"`) || !strings.Contains(logs, `"email":"Ann@example.com"`) {
			t.Errorf("token log: %s", logs)
		}
		// Another user cannot be given the same number.
		var stderr strings.Builder
		err := run(context.Background(), []string{"token", "-database-url", rawURL, "-tenant", "acme", "-username", "bob", "-mobile", "2015550123", "-country", "US"}, io.Discard, &stderr, env(nil))
		if err == nil || !strings.Contains(err.Error(), "mobile already in use") {
			t.Errorf("Bob with Ann's number: %v", err)
		}
	})
}

func TestVerifyHint(t *testing.T) {
	for _, c := range []struct {
		cfg  verifyConfig
		want bool
	}{
		{verifyConfig{smsProvider: "log"}, true},
		{verifyConfig{smsProvider: "http", smtp: smtp.Config{Addr: "127.0.0.1:25"}}, false},
		{verifyConfig{smsProvider: "log", smtp: smtp.Config{Addr: "127.0.0.1:25"}}, true},
		{verifyConfig{smsProvider: "log", devLogCodes: true}, false},
	} {
		if got := c.cfg.hint() != ""; got != c.want {
			t.Errorf("%+v: hint %q", c.cfg, c.cfg.hint())
		}
	}
}

// The address's daily cap is set like the other limits, by flag or
// environment, the flag winning.
func TestSendsPerAddressPerDaySetting(t *testing.T) {
	for _, c := range []struct {
		args []string
		vars map[string]string
		want int
	}{
		{nil, nil, 0}, // the Verifier's default
		{[]string{"-sends-per-address-per-day", "50"}, nil, 50},
		{nil, map[string]string{envSendsPerAddress: "40"}, 40},
		{[]string{"-sends-per-address-per-day", "50"}, map[string]string{envSendsPerAddress: "40"}, 50},
	} {
		var cfg verifyConfig
		fs := newFlagSet("serve", io.Discard, io.Discard, env(c.vars))
		complete := addVerifyFlags(fs, &cfg)
		if err := fs.parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := complete(); err != nil {
			t.Fatal(err)
		}
		if got := cfg.limits.SendsPerAddressPerDay; got != c.want {
			t.Errorf("%q %v: %d, want %d", c.args, c.vars, got, c.want)
		}
	}
	var cfg verifyConfig
	fs := newFlagSet("serve", io.Discard, io.Discard, env(nil))
	addVerifyFlags(fs, &cfg)
	if err := fs.parse([]string{"-sends-per-address-per-day", "-1"}); err == nil {
		t.Error("-sends-per-address-per-day -1: no error")
	}
}

func TestParseSMSTemplates(t *testing.T) {
	got, err := parseSMSTemplates(" *=SMS_1, SIGNUP = SMS_2 ,notice=SMS_3,en:*=SMS_4,en:notice=SMS_5,,zh-TW:SIGNIN=SMS_6", "zh-CN")
	if err != nil {
		t.Fatal(err)
	}
	want := sms.Templates{
		DefaultLocale: "zh-CN",
		Codes: map[verify.BizKey]map[string]string{
			sms.AnyBizKey: {"zh-CN": "SMS_1", "en": "SMS_4"},
			"SIGNUP":      {"zh-CN": "SMS_2"},
			"SIGNIN":      {"zh-TW": "SMS_6"},
		},
		Notice: map[string]string{"zh-CN": "SMS_3", "en": "SMS_5"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"SIGNUP", "SIGNUP=", "=SMS_1", ":SIGNUP=1", "en:=1", "MODIFY_EMAIL=1"} {
		if _, err := parseSMSTemplates(bad, "zh-CN"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The template providers' settings reach their configs, keys from the
// environment only.
func TestTemplateProviderVariables(t *testing.T) {
	vars := map[string]string{
		envSMSProvider: "tencent", envTencentSecretID: "AKID1", envTencentSecretKey: "key", envTencentAppID: "1400006666",
		envTencentRegion: "ap-beijing", envSMSSignName: "签名", envSMSTemplates: "*=1,notice=2", envSMSLocale: "en",
		envSMSEndpoint: "http://127.0.0.1:9", envAliyunKeyID: "LTAI1", envAliyunKeySecret: "secret",
	}
	var cfg verifyConfig
	fs := newFlagSet("serve", io.Discard, io.Discard, env(vars))
	complete := addVerifyFlags(fs, &cfg)
	if err := fs.parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := complete(); err != nil {
		t.Fatal(err)
	}
	tc, a := cfg.tencent, cfg.aliyun
	if tc.SecretID != "AKID1" || tc.SecretKey != "key" || tc.SDKAppID != "1400006666" || tc.Region != "ap-beijing" || tc.SignName != "签名" ||
		tc.Endpoint != "http://127.0.0.1:9" || tc.Templates.DefaultLocale != "en" || tc.Templates.Codes[sms.AnyBizKey]["en"] != "1" || tc.Templates.Notice["en"] != "2" {
		t.Errorf("tencent config %+v", tc)
	}
	if a.AccessKeyID != "LTAI1" || a.AccessKeySecret != "secret" || a.SignName != "签名" {
		t.Errorf("aliyun config %+v", a)
	}
	if _, _, err := cfg.senders(nil); err != nil {
		t.Errorf("senders: %v", err)
	}
	if tc.Templates.NoticeNumber != sms.NoticeLastFour {
		t.Errorf("notice number %q, want last4 by default", tc.Templates.NoticeNumber)
	}
	vars[envSMSNoticeNumber] = "Masked"
	cfg = verifyConfig{}
	fs = newFlagSet("serve", io.Discard, io.Discard, env(vars))
	complete = addVerifyFlags(fs, &cfg)
	if err := fs.parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := complete(); err != nil || cfg.tencent.Templates.NoticeNumber != sms.NoticeMasked || cfg.aliyun.Templates.NoticeNumber != sms.NoticeMasked {
		t.Errorf("%s=Masked: %v, %q", envSMSNoticeNumber, err, cfg.tencent.Templates.NoticeNumber)
	}
	for _, flagName := range []string{"aliyun-access-key-id", "aliyun-access-key-secret", "tencent-secret-id", "tencent-secret-key"} {
		if fs.Lookup(flagName) != nil {
			t.Errorf("-%s is a flag: keys come from the environment only", flagName)
		}
	}
}
