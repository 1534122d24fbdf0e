package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/logsender"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/sms/aliyun"
	smsgateway "github.com/deskkit/deskkit/verify/sms/gateway"
	"github.com/deskkit/deskkit/verify/sms/tencent"
	"github.com/deskkit/deskkit/verify/sms/twilio"
	"github.com/deskkit/deskkit/verify/smtp"
)

// Environment variables of the verification service. Secrets (the server
// secret, the SMTP password, the Twilio token, the Aliyun and Tencent
// keys) come from the environment only: a flag would show them in every
// process listing.
const (
	envSecret           = "DESKKIT_SECRET"
	envSecretPrevious   = "DESKKIT_SECRET_PREVIOUS"
	envSMTPAddr         = "DESKKIT_SMTP_ADDR"
	envSMTPFrom         = "DESKKIT_SMTP_FROM"
	envSMTPUsername     = "DESKKIT_SMTP_USERNAME"
	envSMTPPassword     = "DESKKIT_SMTP_PASSWORD"
	envSMTPTLS          = "DESKKIT_SMTP_TLS"
	envSMSProvider      = "DESKKIT_SMS_PROVIDER"
	envSMSHTTPURL       = "DESKKIT_SMS_HTTP_URL"
	envTwilioAccountSID = "DESKKIT_TWILIO_ACCOUNT_SID"
	envTwilioAuthToken  = "DESKKIT_TWILIO_AUTH_TOKEN"
	envTwilioFrom       = "DESKKIT_TWILIO_FROM"
	envTwilioBaseURL    = "DESKKIT_TWILIO_BASE_URL"
	envSMSSignName      = "DESKKIT_SMS_SIGN_NAME"
	envSMSTemplates     = "DESKKIT_SMS_TEMPLATES"
	envSMSLocale        = "DESKKIT_SMS_LOCALE"
	envSMSEndpoint      = "DESKKIT_SMS_ENDPOINT"
	envSMSNoticeNumber  = "DESKKIT_SMS_NOTICE_NUMBER"
	envAliyunKeyID      = "DESKKIT_ALIYUN_ACCESS_KEY_ID"
	envAliyunKeySecret  = "DESKKIT_ALIYUN_ACCESS_KEY_SECRET"
	envTencentSecretID  = "DESKKIT_TENCENT_SECRET_ID"
	envTencentSecretKey = "DESKKIT_TENCENT_SECRET_KEY"
	envTencentAppID     = "DESKKIT_TENCENT_SMS_APP_ID"
	envTencentRegion    = "DESKKIT_TENCENT_REGION"
	envDevLogCodes      = "DESKKIT_DEV_LOG_CODES"
	envCodeTTL          = "DESKKIT_CODE_TTL"
	envResendInterval   = "DESKKIT_RESEND_INTERVAL"
	envSendsPerHour     = "DESKKIT_SENDS_PER_HOUR"
	envSendsPerDay      = "DESKKIT_SENDS_PER_DAY"
	envSendsPerAddress  = "DESKKIT_SENDS_PER_ADDRESS_PER_DAY"
	envFailuresPerDay   = "DESKKIT_FAILURES_PER_DAY"
)

// defaultSMTPFrom is the sender when none is configured.
const defaultSMTPFrom = "deskkit <noreply@localhost>"

// verifyConfig is how the server sends codes.
type verifyConfig struct {
	secret, previous []byte // nil: the secret kept in the database
	smtp             smtp.Config
	smsProvider      string // log, http, twilio, aliyun or tencent
	smsHTTPURL       string
	twilio           twilio.Config
	// The template providers' settings: aliyun and tencent share the
	// signature name, the endpoint and the templates.
	aliyun      aliyun.Config
	tencent     tencent.Config
	devLogCodes bool // the log senders show codes: development only
	// limits holds the code lifetime and the rate limits; zero fields are
	// the Verifier's defaults.
	limits verify.Config
}

// addVerifyFlags declares the flags of the non-secret settings on fs, and
// returns a function that completes cfg from the environment once fs is
// parsed.
func addVerifyFlags(fs *flagSet, cfg *verifyConfig) func() error {
	fs.StringVar(&cfg.smtp.Addr, "smtp-addr", "", "SMTP server host:port; without it e-mail is only logged")
	fs.fromEnv("smtp-addr", envSMTPAddr)
	fs.StringVar(&cfg.smtp.From, "smtp-from", defaultSMTPFrom, "sender of e-mail")
	fs.fromEnv("smtp-from", envSMTPFrom)
	fs.StringVar(&cfg.smtp.Username, "smtp-username", "", "SMTP AUTH user name (the password comes from "+envSMTPPassword+")")
	fs.fromEnv("smtp-username", envSMTPUsername)
	tlsMode := fs.String("smtp-tls", "", "none, starttls or tls; default none for a loopback server, starttls otherwise")
	fs.fromEnv("smtp-tls", envSMTPTLS)
	fs.StringVar(&cfg.smsProvider, "sms-provider", "", "log, http, twilio, aliyun or tencent; default http when -sms-http-url is set, twilio when -twilio-account-sid is, aliyun when "+envAliyunKeyID+" is, tencent when "+envTencentSecretID+" is, log otherwise")
	fs.fromEnv("sms-provider", envSMSProvider)
	fs.StringVar(&cfg.smsHTTPURL, "sms-http-url", "", "URL the http provider POSTs each message to")
	fs.fromEnv("sms-http-url", envSMSHTTPURL)
	fs.StringVar(&cfg.twilio.AccountSID, "twilio-account-sid", "", "Twilio account SID (the token comes from "+envTwilioAuthToken+")")
	fs.fromEnv("twilio-account-sid", envTwilioAccountSID)
	fs.StringVar(&cfg.twilio.From, "twilio-from", "", "Twilio sender: an E.164 number or a Messaging Service SID")
	fs.fromEnv("twilio-from", envTwilioFrom)
	fs.StringVar(&cfg.twilio.BaseURL, "twilio-base-url", "", "Twilio API root (https://api.twilio.com)")
	fs.fromEnv("twilio-base-url", envTwilioBaseURL)
	signName := fs.String("sms-sign-name", "", "aliyun and tencent: the approved signature name every message carries")
	fs.fromEnv("sms-sign-name", envSMSSignName)
	templates := fs.String("sms-templates", "", "aliyun and tencent: template ids, [LOCALE:]KEY=ID,... where KEY is a bizKey, * for every bizKey without its own, or notice (to the old number after a change), and LOCALE is -sms-locale if left out; e.g. *=SMS_1,SIGNUP=SMS_2,notice=SMS_3,en:*=SMS_4,en:notice=SMS_5")
	fs.fromEnv("sms-templates", envSMSTemplates)
	locale := fs.String("sms-locale", sms.DefaultLocale, "aliyun and tencent: the locale of -sms-templates entries without one, and of messages without one")
	fs.fromEnv("sms-locale", envSMSLocale)
	endpoint := fs.String("sms-endpoint", "", "aliyun and tencent: the API root URL (https://dysmsapi.aliyuncs.com, https://sms.tencentcloudapi.com)")
	fs.fromEnv("sms-endpoint", envSMSEndpoint)
	noticeNumber := fs.String("sms-notice-number", string(sms.NoticeLastFour), "aliyun and tencent: how the notice to the old number shows the new one: last4 (7000), or masked (+86*******7000, 14 characters: more than Tencent takes in a parameter from an account without enterprise verification)")
	fs.fromEnv("sms-notice-number", envSMSNoticeNumber)
	fs.StringVar(&cfg.tencent.SDKAppID, "tencent-sms-app-id", "", "tencent: the SMS application's SdkAppId (the key comes from "+envTencentSecretID+" and "+envTencentSecretKey+")")
	fs.fromEnv("tencent-sms-app-id", envTencentAppID)
	fs.StringVar(&cfg.tencent.Region, "tencent-region", "", "tencent: the API region (ap-guangzhou)")
	fs.fromEnv("tencent-region", envTencentRegion)
	fs.BoolVar(&cfg.devLogCodes, "dev-log-codes", false, "the log senders log codes in clear; unset: in development mode only (no "+envSecret+", -smtp-addr or SMS provider); refused with "+envSecret)
	fs.fromEnv("dev-log-codes", envDevLogCodes)
	fs.Var(durationFlag{&cfg.limits.CodeTTL}, "code-ttl", "how long a code is valid, at most 10m; 0 means "+verify.DefaultCodeTTL.String())
	fs.fromEnv("code-ttl", envCodeTTL)
	fs.Var(durationFlag{&cfg.limits.ResendInterval}, "resend-interval", "at most one code per user, bizKey and address within it; 0 means "+verify.DefaultResendInterval.String())
	fs.fromEnv("resend-interval", envResendInterval)
	fs.Var(countFlag{&cfg.limits.SendsPerHour}, "sends-per-hour", "codes one user may have sent to one address in an hour; 0 means "+strconv.Itoa(verify.DefaultSendsPerHour))
	fs.fromEnv("sends-per-hour", envSendsPerHour)
	fs.Var(countFlag{&cfg.limits.SendsPerDay}, "sends-per-day", "codes one user may request in a day; 0 means "+strconv.Itoa(verify.DefaultSendsPerDay))
	fs.fromEnv("sends-per-day", envSendsPerDay)
	fs.Var(countFlag{&cfg.limits.SendsPerAddressPerDay}, "sends-per-address-per-day", "codes one address may get in a day from all users and tenants together; keep it above -sends-per-day; 0 means "+strconv.Itoa(verify.DefaultSendsPerAddressPerDay))
	fs.fromEnv("sends-per-address-per-day", envSendsPerAddress)
	fs.Var(countFlag{&cfg.limits.FailuresPerDay}, "failures-per-day", "wrong codes one user may enter in a day; 0 means "+strconv.Itoa(verify.DefaultFailuresPerDay))
	fs.fromEnv("failures-per-day", envFailuresPerDay)
	return func() error {
		cfg.smtp.Password = fs.getenv(envSMTPPassword)
		cfg.twilio.AuthToken = fs.getenv(envTwilioAuthToken)
		cfg.aliyun.AccessKeyID, cfg.aliyun.AccessKeySecret = fs.getenv(envAliyunKeyID), fs.getenv(envAliyunKeySecret)
		cfg.tencent.SecretID, cfg.tencent.SecretKey = fs.getenv(envTencentSecretID), fs.getenv(envTencentSecretKey)
		// The shorter names people also write; the documented ones win.
		for dst, alias := range map[*string]string{
			&cfg.twilio.AccountSID: "DESKKIT_TWILIO_ACCOUNT",
			&cfg.twilio.AuthToken:  "DESKKIT_TWILIO_TOKEN",
			&cfg.twilio.From:       "DESKKIT_TWILIO_SENDER",
		} {
			if *dst == "" {
				*dst = fs.getenv(alias)
			}
		}
		if s := fs.getenv(envSecret); s != "" {
			cfg.secret = []byte(s)
		}
		if s := fs.getenv(envSecretPrevious); s != "" {
			cfg.previous = []byte(s)
		}
		for name, s := range map[string][]byte{envSecret: cfg.secret, envSecretPrevious: cfg.previous} {
			if s != nil && len(s) < verify.MinSecretLength {
				return fmt.Errorf("%s must be at least %d characters; make one with: openssl rand -hex 32", name, verify.MinSecretLength)
			}
		}
		cfg.smtp.TLS = smtp.TLSMode(strings.ToLower(strings.TrimSpace(*tlsMode)))
		if cfg.smtp.Addr != "" && *tlsMode == "" {
			cfg.smtp.TLS = smtp.TLSStartTLS
			if host, _, err := net.SplitHostPort(cfg.smtp.Addr); err == nil && addr.IsLoopbackHost(host) {
				cfg.smtp.TLS = smtp.TLSNone
			}
		}
		if cfg.limits.CodeTTL > verify.MaxCodeTTL {
			return fmt.Errorf("-code-ttl (%s) must be at most %s", envCodeTTL, verify.MaxCodeTTL)
		}
		cfg.smsProvider = strings.ToLower(strings.TrimSpace(cfg.smsProvider))
		if cfg.smsProvider == "" {
			switch {
			case cfg.smsHTTPURL != "":
				cfg.smsProvider = "http"
			case cfg.twilio.AccountSID != "":
				cfg.smsProvider = "twilio"
			case cfg.aliyun.AccessKeyID != "":
				cfg.smsProvider = "aliyun"
			case cfg.tencent.SecretID != "":
				cfg.smsProvider = "tencent"
			default:
				cfg.smsProvider = "log"
			}
		}
		switch cfg.smsProvider {
		case "log", "http", "twilio":
		case "aliyun", "tencent":
			tpl, err := parseSMSTemplates(*templates, *locale)
			if err != nil {
				return fmt.Errorf("-sms-templates (%s): %w", envSMSTemplates, err)
			}
			switch n := sms.NoticeNumber(strings.ToLower(strings.TrimSpace(*noticeNumber))); n {
			case sms.NoticeLastFour, sms.NoticeMasked:
				tpl.NoticeNumber = n
			default:
				return fmt.Errorf("-sms-notice-number (%s) must be %s or %s, not %q", envSMSNoticeNumber, sms.NoticeLastFour, sms.NoticeMasked, *noticeNumber)
			}
			cfg.aliyun.SignName, cfg.aliyun.Endpoint, cfg.aliyun.Templates = *signName, *endpoint, tpl
			cfg.tencent.SignName, cfg.tencent.Endpoint, cfg.tencent.Templates = *signName, *endpoint, tpl
		default:
			return fmt.Errorf("-sms-provider (%s) must be log, http, twilio, aliyun or tencent, not %q", envSMSProvider, cfg.smsProvider)
		}
		return nil
	}
}

// flagAndVar names a flag and its environment variable, as the server's
// errors name a setting.
func flagAndVar(flag, variable string) string { return "-" + flag + " (" + variable + ")" }

// checkSMS says, by flag and environment variable, what the SMS provider
// cfg names lacks: the library's constructors name the fields of its
// configs (aliyun.Config.SignName, Templates.Notice), which a user of
// the server does not set.
func (cfg *verifyConfig) checkSMS() error {
	var missing []string
	need := func(ok bool, setting string) {
		if !ok {
			missing = append(missing, setting)
		}
	}
	switch cfg.smsProvider {
	case "http":
		need(cfg.smsHTTPURL != "", flagAndVar("sms-http-url", envSMSHTTPURL))
	case "twilio":
		need(cfg.twilio.AccountSID != "", flagAndVar("twilio-account-sid", envTwilioAccountSID))
		need(cfg.twilio.AuthToken != "", envTwilioAuthToken)
		need(cfg.twilio.From != "", flagAndVar("twilio-from", envTwilioFrom))
	case "aliyun":
		need(cfg.aliyun.AccessKeyID != "", envAliyunKeyID)
		need(cfg.aliyun.AccessKeySecret != "", envAliyunKeySecret)
		need(strings.TrimSpace(cfg.aliyun.SignName) != "", flagAndVar("sms-sign-name", envSMSSignName))
	case "tencent":
		need(cfg.tencent.SecretID != "", envTencentSecretID)
		need(cfg.tencent.SecretKey != "", envTencentSecretKey)
		need(strings.TrimSpace(cfg.tencent.SDKAppID) != "", flagAndVar("tencent-sms-app-id", envTencentAppID))
		need(strings.TrimSpace(cfg.tencent.SignName) != "", flagAndVar("sms-sign-name", envSMSSignName))
	}
	if len(missing) > 0 {
		return fmt.Errorf("-sms-provider %s needs %s", cfg.smsProvider, andList(missing))
	}
	if cfg.smsProvider == "aliyun" || cfg.smsProvider == "tencent" {
		return checkSMSTemplates(cfg.aliyun.Templates)
	}
	return nil
}

// checkSMSTemplates says what -sms-templates lacks for -sms-locale: a
// template of each bizKey (its own or *'s) and the notice's, as the
// senders require. Locales match as the senders match them: case aside,
// _ as -.
func checkSMSTemplates(t sms.Templates) error {
	// Every locale must be a language a request can name (zh-CN, en; not
	// klingon), as -locale's are.
	if _, err := directory.CheckLocale("locale", t.DefaultLocale); err != nil {
		return fmt.Errorf("%s: %w", flagAndVar("sms-locale", envSMSLocale), err)
	}
	locales := slices.Collect(maps.Keys(t.Notice))
	for _, byLocale := range t.Codes {
		locales = slices.AppendSeq(locales, maps.Keys(byLocale))
	}
	for _, l := range locales {
		if _, err := directory.CheckLocale("locale", l); err != nil {
			return fmt.Errorf("%s: the entry of locale %q: %w", flagAndVar("sms-templates", envSMSTemplates), l, err)
		}
	}
	has := func(byLocale map[string]string) bool {
		for locale, id := range byLocale {
			if sameLocale(locale, t.DefaultLocale) && id != "" {
				return true
			}
		}
		return false
	}
	var missing []string
	for _, b := range verify.SMSBizKeys() {
		if !has(t.Codes[b]) && !has(t.Codes[sms.AnyBizKey]) {
			missing = append(missing, string(b))
		}
	}
	where := fmt.Sprintf("%s has no template in %s %s", flagAndVar("sms-templates", envSMSTemplates), flagAndVar("sms-locale", envSMSLocale), t.DefaultLocale)
	if len(missing) > 0 {
		return fmt.Errorf("%s for bizKey %s: add *=ID for every bizKey without a template of its own, or KEY=ID for each", where, strings.Join(missing, ", "))
	}
	if !has(t.Notice) {
		return fmt.Errorf("%s for the notice to the old number after a change: add notice=ID", where)
	}
	return nil
}

// sameLocale tells whether two locales are one, as verify matches them.
func sameLocale(a, b string) bool {
	norm := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "_", "-") }
	return strings.EqualFold(norm(a), norm(b))
}

// andList joins items as "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// smsSetting is one setting of an SMS provider's config that a user sets,
// by its flag, and how to copy it from the user's config to another.
type smsSetting[C any] struct {
	name string
	copy func(dst *C, src C)
}

// blame names the setting of user that the provider's constructor build
// refuses: build is tried with base (a config that passes) and each
// setting of user alone; the first that fails is named. "" if none does
// alone.
func blame[C any](user, base C, build func(C) error, settings []smsSetting[C]) string {
	for _, s := range settings {
		c := base
		s.copy(&c, user)
		if build(c) != nil {
			return s.name
		}
	}
	return ""
}

// probeTemplates is a table that the senders take, in locale.
func probeTemplates(t sms.Templates) sms.Templates {
	return sms.Templates{DefaultLocale: t.DefaultLocale,
		Codes: map[verify.BizKey]map[string]string{sms.AnyBizKey: {t.DefaultLocale: "probe"}}, Notice: map[string]string{t.DefaultLocale: "probe"}}
}

// smsError is err, of the constructor of cfg's SMS sender, with the
// settings it is about named first: the one that it refuses alone (found
// by blame) or else every setting of the provider.
func (cfg verifyConfig) smsError(err error) error {
	var which string
	switch cfg.smsProvider {
	case "twilio":
		which = blame(cfg.twilio, twilio.Config{AccountSID: "AC0", AuthToken: "probe", From: "+15005550006"},
			func(c twilio.Config) error { _, err := twilio.New(c); return err },
			[]smsSetting[twilio.Config]{
				{flagAndVar("twilio-account-sid", envTwilioAccountSID), func(d *twilio.Config, s twilio.Config) { d.AccountSID = s.AccountSID }},
				{flagAndVar("twilio-from", envTwilioFrom), func(d *twilio.Config, s twilio.Config) { d.From = s.From }},
				{flagAndVar("twilio-base-url", envTwilioBaseURL), func(d *twilio.Config, s twilio.Config) { d.BaseURL = s.BaseURL }},
			})
		if which == "" {
			which = strings.Join([]string{flagAndVar("twilio-account-sid", envTwilioAccountSID), envTwilioAuthToken, flagAndVar("twilio-from", envTwilioFrom)}, ", ")
		}
	case "aliyun":
		which = blame(cfg.aliyun, aliyun.Config{AccessKeyID: "probe", AccessKeySecret: "probe", SignName: "probe", Templates: probeTemplates(cfg.aliyun.Templates)},
			func(c aliyun.Config) error { _, err := aliyun.New(c); return err },
			[]smsSetting[aliyun.Config]{
				{flagAndVar("sms-endpoint", envSMSEndpoint), func(d *aliyun.Config, s aliyun.Config) { d.Endpoint = s.Endpoint }},
				{flagAndVar("sms-templates", envSMSTemplates), func(d *aliyun.Config, s aliyun.Config) { d.Templates = s.Templates }},
				{flagAndVar("sms-sign-name", envSMSSignName), func(d *aliyun.Config, s aliyun.Config) { d.SignName = s.SignName }},
			})
		if which == "" {
			which = strings.Join([]string{envAliyunKeyID, envAliyunKeySecret, "-sms-sign-name", "-sms-templates", "-sms-endpoint"}, ", ")
		}
	case "tencent":
		which = blame(cfg.tencent, tencent.Config{SecretID: "probe", SecretKey: "probe", SDKAppID: "1400000000", SignName: "probe", Templates: probeTemplates(cfg.tencent.Templates)},
			func(c tencent.Config) error { _, err := tencent.New(c); return err },
			[]smsSetting[tencent.Config]{
				{flagAndVar("sms-endpoint", envSMSEndpoint), func(d *tencent.Config, s tencent.Config) { d.Endpoint = s.Endpoint }},
				{flagAndVar("tencent-region", envTencentRegion), func(d *tencent.Config, s tencent.Config) { d.Region = s.Region }},
				{flagAndVar("sms-templates", envSMSTemplates), func(d *tencent.Config, s tencent.Config) { d.Templates = s.Templates }},
				{flagAndVar("tencent-sms-app-id", envTencentAppID), func(d *tencent.Config, s tencent.Config) { d.SDKAppID = s.SDKAppID }},
				{flagAndVar("sms-sign-name", envSMSSignName), func(d *tencent.Config, s tencent.Config) { d.SignName = s.SignName }},
			})
		if which == "" {
			which = strings.Join([]string{envTencentSecretID, envTencentSecretKey, "-tencent-sms-app-id", "-sms-sign-name", "-sms-templates", "-sms-endpoint", "-tencent-region"}, ", ")
		}
	}
	return fmt.Errorf("%s: %w", which, err)
}

// senders builds the SMS sender and the mailer cfg names. Nothing
// configured means the log senders: the server runs on a fresh machine, and
// says in its log where codes went.
func (cfg verifyConfig) senders(logger *slog.Logger) (verify.SMSSender, deskkit.Mailer, error) {
	if err := cfg.checkSMS(); err != nil {
		return nil, nil, err
	}
	logSender := logsender.Sender{Logger: logger, ShowCodes: cfg.devLogCodes}
	var sms verify.SMSSender = logSender
	var mail deskkit.Mailer = logSender
	switch cfg.smsProvider {
	case "http":
		s, err := smsgateway.New(smsgateway.Config{URL: cfg.smsHTTPURL})
		if err != nil {
			return nil, nil, fmt.Errorf("-sms-http-url (%s): %w", envSMSHTTPURL, err)
		}
		sms = s
	case "twilio":
		s, err := twilio.New(cfg.twilio)
		if err != nil {
			return nil, nil, cfg.smsError(err)
		}
		sms = s
	case "aliyun":
		s, err := aliyun.New(cfg.aliyun)
		if err != nil {
			return nil, nil, cfg.smsError(err)
		}
		sms = s
	case "tencent":
		s, err := tencent.New(cfg.tencent)
		if err != nil {
			return nil, nil, cfg.smsError(err)
		}
		sms = s
	}
	if cfg.smtp.Addr != "" {
		m, err := smtp.New(cfg.smtp)
		if err != nil {
			return nil, nil, fmt.Errorf("SMTP (%s...): %w", envSMTPAddr, err)
		}
		mail = m
	}
	return sms, mail, nil
}

// describe is the log line's view of cfg: where codes go, no secrets.
func (cfg verifyConfig) describe() []any {
	mail := "log"
	if cfg.smtp.Addr != "" {
		mail = "smtp " + cfg.smtp.Addr + " (" + string(cfg.smtp.TLS) + ")"
	}
	secret := "database"
	if cfg.secret != nil {
		secret = envSecret
	}
	return []any{slog.String("sms", cfg.smsProvider), slog.String("mail", mail), slog.String("secret", secret),
		slog.Bool("previousSecret", cfg.previous != nil), slog.Bool("devLogCodes", cfg.devLogCodes)}
}

// hint tells someone trying the server where verification codes go when
// nothing sends them, or "".
func (cfg verifyConfig) hint() string {
	if cfg.devLogCodes || (cfg.smtp.Addr != "" && cfg.smsProvider != "log") {
		return ""
	}
	hint := "Verification codes are only logged, without the code: set " + envSMTPAddr + " and " + envSMSHTTPURL + " to send them"
	if cfg.secret == nil {
		hint += ", or run with -dev-log-codes to log them (development only)"
	}
	return hint + "."
}

// parseSMSTemplates reads -sms-templates: comma-separated
// [LOCALE:]KEY=ID entries, KEY a bizKey, * (sms.AnyBizKey) or notice,
// LOCALE defaultLocale when left out. Whether every bizKey has a template
// is the sender's check.
func parseSMSTemplates(spec, defaultLocale string) (sms.Templates, error) {
	t := sms.Templates{DefaultLocale: defaultLocale, Codes: map[verify.BizKey]map[string]string{}, Notice: map[string]string{}}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, id, ok := strings.Cut(entry, "=")
		id = strings.TrimSpace(id)
		if !ok || id == "" {
			return t, fmt.Errorf("%q is not [LOCALE:]KEY=ID", entry)
		}
		locale := defaultLocale
		if l, k, ok := strings.Cut(key, ":"); ok {
			locale, key = strings.TrimSpace(l), k
		}
		key = strings.TrimSpace(key)
		if locale == "" || key == "" {
			return t, fmt.Errorf("%q is not [LOCALE:]KEY=ID", entry)
		}
		if key == "notice" {
			t.Notice[locale] = id
			continue
		}
		b := verify.BizKey(key)
		if b != sms.AnyBizKey && !slices.Contains(verify.SMSBizKeys(), b) {
			return t, fmt.Errorf("%q: %s is neither an SMS bizKey, * nor notice", entry, key)
		}
		if t.Codes[b] == nil {
			t.Codes[b] = map[string]string{}
		}
		t.Codes[b][locale] = id
	}
	return t, nil
}

// storedSecret returns the server secret kept in the database, creating it
// on the first call. Replicas starting together race on the insert of row
// 1; the loser's insert does nothing and every one reads the winner's.
func storedSecret(ctx context.Context, db *bun.DB) ([]byte, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return nil, err
	}
	_, err := db.NewRaw("INSERT INTO deskkit_server_secret (id, secret, created_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING",
		hex.EncodeToString(buf), time.Now().UTC()).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("store the server secret: %w", err)
	}
	var s string
	if err := db.NewRaw("SELECT secret FROM deskkit_server_secret WHERE id = 1").Scan(ctx, &s); err != nil {
		return nil, fmt.Errorf("read the server secret: %w", err)
	}
	if len(s) < verify.MinSecretLength {
		return nil, errors.New("the server secret in the database is too short")
	}
	return []byte(strings.TrimSpace(s)), nil
}

// newVerifier builds the verification service of the app.
func newVerifier(db *bun.DB, users verifyUsers, secret []byte, events deskkit.Publisher, cfg appConfig) (*verify.Verifier, error) {
	sms, mail, err := cfg.Verify.senders(cfg.Logger)
	if err != nil {
		return nil, err
	}
	vc := cfg.Verify.limits
	vc.PreviousSecret, vc.Logger, vc.Now, vc.Publisher = cfg.Verify.previous, cfg.Logger, cfg.Now, events
	vc.PlainStatements, vc.ListenDB = cfg.PlainStatements, cfg.ListenDB
	return verify.New(db, users, sms, mail, secret, &vc)
}

// verifyInterval is how often the server purges spent codes and closed
// rate-limit windows.
const verifyInterval = time.Minute

// housekeep runs the Verifier's and the channel registry's housekeeping on
// every tick until ctx ends.
func housekeep(ctx context.Context, a *app, tick <-chan time.Time, logger *slog.Logger) {
	for {
		if _, err := a.verify.Purge(ctx); err != nil && ctx.Err() == nil {
			logger.ErrorContext(ctx, "verify: purge", slog.Any("error", err))
		}
		if _, err := a.channels.Purge(ctx); err != nil && ctx.Err() == nil {
			logger.ErrorContext(ctx, "channel: purge", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// redeemRequest is the body of the demo host's POST /demo/link/redeem.
type redeemRequest struct {
	BizKey     verify.BizKey `json:"bizKey"`
	LinkSecret string        `json:"linkSecret"`
}

// redeemed is what a link secret proved.
type redeemed struct {
	Kind    verify.Kind   `json:"kind"`
	BizKey  verify.BizKey `json:"bizKey"`
	Address string        `json:"address"`
}

// mountRedeem adds the demo host's use of link secrets: a real host
// redeems one inside its own flow (a password change after
// PASSWORD_UPDATE, closing an account after SIGN_CANCEL), in its own
// transaction; the demo only answers what the secret proved, and spends it.
func mountRedeem(api *httpapi.Server, v *verify.Verifier) {
	api.Handle(http.MethodPost, "/demo/link/redeem", func(r *http.Request, p deskkit.Principal) (any, error) {
		var req redeemRequest
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			return nil, err
		}
		switch {
		case req.BizKey == "":
			return nil, deskkit.Invalid("bizKey", "is required")
		case req.LinkSecret == "":
			return nil, deskkit.Invalid("linkSecret", "is required")
		}
		proof, err := v.Redeem(r.Context(), nil, p, req.BizKey, req.LinkSecret)
		if err != nil {
			return nil, err
		}
		return redeemed{Kind: proof.Kind, BizKey: proof.BizKey, Address: proof.Address}, nil
	})
}
