package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/internal/i18n"
)

// DefaultSMSLocale is the locale of SMSTemplates without one: mainland
// China's Simplified Chinese, where template providers are the rule.
const DefaultSMSLocale = "zh-CN"

// AnyBizKey in SMSTemplates.Codes names the template of every bizKey that
// has none of its own: many hosts use one approved "your code is ${code}"
// template for every purpose.
const AnyBizKey BizKey = "*"

// NoticeNumber is how the parameter of a notice's template (to the old
// number, after a change) shows the new number.
type NoticeNumber string

// The ways a notice's parameter shows the new number +8613700137000.
const (
	// NoticeLastFour is its last four digits, "7000": the default. It fits
	// every provider's limit on a parameter, Tencent Cloud's 12 characters
	// for an account without enterprise verification included (Tencent
	// refuses a longer one with
	// InvalidParameterValue.TemplateParameterLengthLimit).
	NoticeLastFour NoticeNumber = "last4"
	// NoticeMasked is the number masked as the notice's text and an
	// e-mail notice show it, "+86*******7000": 14 characters for a
	// mainland number, so for Tencent only with enterprise verification.
	NoticeMasked NoticeNumber = "masked"
)

// SMSTemplates is the table of pre-approved templates a template provider
// (AliyunSMSSender, TencentSMSSender) sends: such providers send no free
// text, only a template, approved beforehand, by its id, with parameters.
//
// A code's template has one parameter, the code; a notice's (to the old
// number, after a change) has one, the new number as NoticeNumber says:
// its last four digits, "8000", by default. How each provider names them
// is in its sender's documentation.
type SMSTemplates struct {
	// DefaultLocale is the locale of a message whose SMS.Locale is "" or
	// has no template: DefaultSMSLocale if "".
	DefaultLocale string
	// Codes maps a bizKey, or AnyBizKey for all those without their own,
	// and a locale ("zh-CN", "en") to a template id. Every bizKey of
	// SMSBizKeys must have a template for DefaultLocale, its own or
	// AnyBizKey's: a sender is refused at construction, not at the first
	// send.
	Codes map[BizKey]map[string]string
	// Notice maps a locale to the template id of the notice sent to the
	// old number when a user's mobile number changes. DefaultLocale's is
	// required.
	Notice map[string]string
	// NoticeNumber is how the notice's parameter shows the new number:
	// NoticeLastFour if "", or NoticeMasked.
	NoticeNumber NoticeNumber
}

// withDefaults returns a copy of t with DefaultLocale filled in and its
// maps copied, locales in their canonical case.
func (t SMSTemplates) withDefaults() SMSTemplates {
	if t.DefaultLocale == "" {
		t.DefaultLocale = DefaultSMSLocale
	}
	t.DefaultLocale = canonicalLocale(t.DefaultLocale)
	codes := make(map[BizKey]map[string]string, len(t.Codes))
	for b, byLocale := range t.Codes {
		codes[b] = copyLocales(byLocale)
	}
	t.Codes, t.Notice = codes, copyLocales(t.Notice)
	if t.NoticeNumber == "" {
		t.NoticeNumber = NoticeLastFour
	}
	return t
}

func copyLocales(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for locale, id := range m {
		out[canonicalLocale(locale)] = strings.TrimSpace(id)
	}
	return out
}

// canonicalLocale spells a locale as BCP 47 is usually written: "zh_cn"
// and "ZH-cn" are "zh-CN". Matching is on this spelling.
func canonicalLocale(s string) string {
	parts := strings.Split(strings.ReplaceAll(strings.TrimSpace(s), "_", "-"), "-")
	for i, p := range parts {
		switch {
		case i == 0:
			parts[i] = strings.ToLower(p)
		case len(p) == 2:
			parts[i] = strings.ToUpper(p)
		case len(p) == 4:
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		default:
			parts[i] = strings.ToLower(p)
		}
	}
	return strings.Join(parts, "-")
}

// validate checks a table that withDefaults filled in; name is the
// config's, for the error.
func (t SMSTemplates) validate(name string) error {
	// A locale names a language the Verifier can be asked for: a valid
	// BCP 47 tag, each subtag registered (zh-CN, en; not klingon), or no
	// request would ever pick its templates.
	checkLocale := func(where, locale string) error {
		if _, err := language.Parse(locale); err != nil {
			return fmt.Errorf("verify: %s.Templates.%s: %q is not a BCP 47 language tag such as zh-CN or en", name, where, locale)
		}
		return nil
	}
	if err := checkLocale("DefaultLocale", t.DefaultLocale); err != nil {
		return err
	}
	for b, byLocale := range t.Codes {
		for locale := range byLocale {
			if err := checkLocale(fmt.Sprintf("Codes[%s]", b), locale); err != nil {
				return err
			}
		}
	}
	for locale := range t.Notice {
		if err := checkLocale("Notice", locale); err != nil {
			return err
		}
	}
	for b, byLocale := range t.Codes {
		if b != AnyBizKey && checkBizKey(KindSMS, b) != nil {
			return fmt.Errorf("verify: %s.Templates.Codes: %q is not an SMS bizKey", name, b)
		}
		for locale, id := range byLocale {
			if err := checkTemplateID(id); err != nil {
				return fmt.Errorf("verify: %s.Templates.Codes[%s][%s]: %w", name, b, locale, err)
			}
		}
	}
	for locale, id := range t.Notice {
		if err := checkTemplateID(id); err != nil {
			return fmt.Errorf("verify: %s.Templates.Notice[%s]: %w", name, locale, err)
		}
	}
	if t.NoticeNumber != NoticeLastFour && t.NoticeNumber != NoticeMasked {
		return fmt.Errorf("verify: %s.Templates.NoticeNumber is %q, neither %q nor %q", name, t.NoticeNumber, NoticeLastFour, NoticeMasked)
	}
	var missing []string
	for _, b := range smsBizKeys {
		if t.Codes[b][t.DefaultLocale] == "" && t.Codes[AnyBizKey][t.DefaultLocale] == "" {
			missing = append(missing, string(b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("verify: %s.Templates.Codes has no template for locale %s of bizKey %s (set one for each, or one for AnyBizKey \"*\")",
			name, t.DefaultLocale, strings.Join(missing, ", "))
	}
	if t.Notice[t.DefaultLocale] == "" {
		return fmt.Errorf("verify: %s.Templates.Notice has no template for locale %s", name, t.DefaultLocale)
	}
	return nil
}

func checkTemplateID(id string) error {
	if id == "" {
		return errors.New("the template id is empty")
	}
	if len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Errorf("%q is not a template id", id)
	}
	return nil
}

// template returns the id of m's template and its parameter, in the
// locale m asks for when the table has it, else in a locale of the table
// of the same language in the same script (zh for zh-CN, zh-HK for zh-TW;
// never zh-TW for zh-CN), else in the default locale.
func (t SMSTemplates) template(m SMS) (id, param string) {
	locales := []string{t.DefaultLocale}
	if m.Locale != "" {
		locales = append(append([]string{canonicalLocale(m.Locale)}, t.sameWriting(m.Locale)...), t.DefaultLocale)
	}
	for _, locale := range locales {
		if m.Code == "" {
			if id := t.Notice[locale]; id != "" {
				return id, t.noticeParam(m.NewAddress)
			}
			continue
		}
		if id := t.Codes[m.BizKey][locale]; id != "" {
			return id, m.Code
		}
		if id := t.Codes[AnyBizKey][locale]; id != "" {
			return id, m.Code
		}
	}
	return "", "" // validate makes every bizKey of SMSBizKeys find one
}

// sameWriting lists the table's locales, sorted, other than locale
// itself, that write locale's language in its script.
func (t SMSTemplates) sameWriting(locale string) []string {
	want, err := language.Parse(locale)
	if err != nil {
		return nil
	}
	have := map[string]bool{}
	for l := range t.Notice {
		have[l] = true
	}
	for _, byLocale := range t.Codes {
		for l := range byLocale {
			have[l] = true
		}
	}
	var out []string
	for _, l := range slices.Sorted(maps.Keys(have)) {
		tag, err := language.Parse(l)
		if err != nil || l == canonicalLocale(locale) {
			continue
		}
		if _, ok := i18n.Exact([]language.Tag{tag}, want.String()); ok {
			out = append(out, l)
		}
	}
	return out
}

// noticeParam is the notice's parameter for the new number, masked as
// SMS.NewAddress has it ("+86*******8000"): that, or its last four
// digits, which the mask keeps.
func (t SMSTemplates) noticeParam(masked string) string {
	if t.NoticeNumber == NoticeMasked || len(masked) < 4 {
		return masked
	}
	return masked[len(masked)-4:]
}

// SMSError is a provider's refusal of a message (AliyunSMSSender,
// TencentSMSSender, TwilioSMSSender, HTTPSMSSender's gateway), or a
// failure to reach it. Its text never holds the
// code, nor the number unmasked. A host's own SMSSender may return one
// too: the Verifier reads Retryable to retry a notice or not, and
// Throttled and RetryAfter to answer a code's send with ErrSendThrottled.
type SMSError struct {
	// Provider is "aliyun", "tencent", "twilio" or "http" (HTTPSMSSender);
	// a host's own sender: its own name.
	Provider string
	// Status is the HTTP status of the answer; 0 when none came.
	Status int
	// Code is the provider's error code ("isv.BUSINESS_LIMIT_CONTROL",
	// "LimitExceeded.PhoneNumberDailyLimit", "AuthFailure.SignatureFailure"),
	// or "" when the provider gave none.
	Code string
	// Message is the provider's message, or the start of its answer.
	Message string
	// RequestID is the provider's id of the request, to quote to its
	// support; "" when none came.
	RequestID string
	// Retryable says whether the same message may be accepted within
	// minutes to hours (the notices' schedule, see the package
	// documentation): the provider could not be reached, failed inside (a
	// 5xx, a system error its documentation says to call again after), or
	// throttled it for a window that ends that soon (Throttled). A refused
	// credential, signature name, template or number is not retryable, nor
	// is a daily or monthly limit: it does not clear within the schedule.
	// Each sender's documentation lists its provider's codes and how it
	// takes them.
	Retryable bool
	// Throttled says that the provider refused the message for its rate
	// limits (an HTTP 429, Aliyun isv.BUSINESS_LIMIT_CONTROL, Tencent
	// RequestLimitExceeded, ...): a send of a code then fails with
	// ErrSendThrottled, which httpapi answers 503 with Retry-After.
	Throttled bool
	// RetryAfter is, when Throttled, how long to wait: the provider's
	// hint (a Retry-After header, or the window its code names, as
	// Tencent LimitExceeded.PhoneNumberThirtySecondLimit does), else
	// DefaultSMSRetryAfter; 0 otherwise.
	RetryAfter time.Duration
	// Err is the transport's error when the provider could not be reached
	// (a timeout, a refused connection, ctx done), or nil.
	Err error
}

// DefaultSMSRetryAfter is the wait of a throttled message whose provider
// gave no hint: a minute, the window of the providers' tightest
// per-number limit (Aliyun's default of one code a minute) and the
// Verifier's DefaultResendInterval.
const DefaultSMSRetryAfter = time.Minute

// smsClass is how a provider's error code is taken (see SMSError).
type smsClass struct {
	retryable, throttled bool
	// wait is the window the code names, for RetryAfter; 0 if none.
	wait time.Duration
}

// Classes of provider codes, for the senders' tables.
var (
	smsFinal     = smsClass{}
	smsRetry     = smsClass{retryable: true}
	smsThrottled = smsClass{retryable: true, throttled: true}
)

// classify fills e's Retryable, Throttled and RetryAfter from the class
// of its code, if the table has the code, and from the HTTP status
// otherwise: a 5xx is retryable, a 429 throttled. retryAfter is the
// answer's Retry-After header, which beats the code's window.
func (e *SMSError) classify(c smsClass, known bool, retryAfter time.Duration) {
	if !known {
		c = smsClass{retryable: e.Status >= 500 || e.Status == http.StatusTooManyRequests, throttled: e.Status == http.StatusTooManyRequests}
	}
	e.Retryable, e.Throttled = c.retryable, c.throttled
	if !e.Throttled {
		return
	}
	switch {
	case retryAfter > 0:
		e.RetryAfter = retryAfter
	case c.wait > 0:
		e.RetryAfter = c.wait
	default:
		e.RetryAfter = DefaultSMSRetryAfter
	}
}

// sendError is the error of a send whose sender refused the message or
// could not reach its gateway: ErrSendFailed wrapping the sender's error,
// and, when a provider throttled the message (an *SMSError with
// Throttled), ErrSendThrottled too, with the wait for Retry-After.
func sendError(err error) error {
	if se, ok := errors.AsType[*SMSError](err); ok && se.Throttled {
		wait := se.RetryAfter
		if wait <= 0 { // a host's own SMSError may leave it out
			wait = DefaultSMSRetryAfter
		}
		return &throttledError{err: err, wait: wait}
	}
	return fmt.Errorf("%w: %w", ErrSendFailed, err)
}

// throttledError is a send a provider throttled. Its client message is
// ErrSendThrottled's, and it matches ErrSendFailed as every failed send
// does.
type throttledError struct {
	err  error
	wait time.Duration
}

func (e *throttledError) Error() string { return ErrSendThrottled.Error() + ": " + e.err.Error() }

func (e *throttledError) Unwrap() []error { return []error{ErrSendThrottled, ErrSendFailed, e.err} }

// RetryAfterDuration is the provider's wait, for Retry-After.
func (e *throttledError) RetryAfterDuration() time.Duration { return e.wait }

func (e *SMSError) Error() string {
	var b strings.Builder
	b.WriteString("verify: " + e.Provider + " SMS")
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
		return b.String()
	}
	b.WriteString(" answered")
	if e.Status != 0 {
		b.WriteString(" " + statusText(e.Status))
	}
	if e.Code != "" {
		b.WriteString(": " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	return b.String()
}

// Unwrap is Err.
func (e *SMSError) Unwrap() error { return e.Err }

// providerEndpoint checks a template provider's endpoint: an absolute
// https URL, or http on a loopback host (a test's fake), since every
// request is signed with the account's key and carries the user's number.
func providerEndpoint(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") ||
		(u.Scheme != "https" && !(u.Scheme == "http" && addr.IsLoopbackHost(u.Hostname()))) {
		return nil, fmt.Errorf("verify: %s.Endpoint must be an https URL without a path or query (http only on a loopback host), not %q", name, raw)
	}
	u.Path = "/"
	return u, nil
}

// percentEncode encodes s as RFC 3986 says and both providers' signatures
// require: every byte but A-Z a-z 0-9 - _ . ~ as %XX, upper case, so a
// space is %20 and * is %2A.
func percentEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// canonicalQuery is params sorted by name, names and values
// percent-encoded, joined with = and &.
func canonicalQuery(params map[string]string) string {
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(percentEncode(n) + "=" + percentEncode(params[n]))
	}
	return b.String()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// providerExcerpt is the start of a provider's message or answer for an
// SMSError, with m's code and text cut out in case it echoes them.
func providerExcerpt(s string, m SMS) string {
	q := excerpt([]byte(s), m)
	if u, err := strconv.Unquote(q); err == nil {
		return u
	}
	return q
}
