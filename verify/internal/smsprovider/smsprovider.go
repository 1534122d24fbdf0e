// Package smsprovider is what verify's SMS senders share and no host
// needs: their HTTP client, the reading and classifying of a provider's
// answer into a *sms.Error, the template table's checks and lookup,
// and the signing helpers of the template providers.
package smsprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
)

// Limits of what an SMS sender reads of a gateway's reply.
const (
	smsReplyLimit   = 64 << 10 // read at most this much of a reply
	smsReplyExcerpt = 200      // quote at most this much in an error
)

// Client is the client of an SMS sender without its own: a
// 10-second timeout and no redirects, since a gateway that redirects is
// misconfigured and following it would hand the message (and the
// credentials of a header) to another URL. Its transport keeps concurrency
// idle connections to the gateway, where Go's default keeps 2: under load
// every send past the second would open a new connection (a TLS handshake
// to the gateway, a socket left in TIME_WAIT).
func Client(concurrency int) *http.Client {
	if concurrency <= 0 {
		concurrency = sms.DefaultConcurrency
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = concurrency
	t.MaxIdleConnsPerHost = concurrency
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Post sends req and returns the status, at most smsReplyLimit bytes
// of the reply, and its Retry-After header. A transport error is
// unwrapped from its *url.Error, whose text repeats the URL and with it
// any key in the query.
func Post(client *http.Client, req *http.Request) (status int, reply []byte, retryAfter string, err error) {
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	// The status decides; a reply cut short by a read error only loses
	// detail for an error's text. Closing without reading the rest may
	// cost the connection, but bounds what a gateway can make us read.
	reply, _ = io.ReadAll(io.LimitReader(resp.Body, smsReplyLimit))
	return resp.StatusCode, reply, resp.Header.Get("Retry-After"), nil
}

// maxSMSRetryAfter bounds the wait a provider's Retry-After header asks
// for: the longest window of a throttle that clears within the notices'
// schedule (an hourly per-number limit).
const maxSMSRetryAfter = time.Hour

// ParseRetryAfter reads a Retry-After header, seconds or an HTTP date
// (RFC 9110 section 10.2.3), as a wait from now of at most
// maxSMSRetryAfter; 0 when there is none or it cannot be read.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(n, int64(maxSMSRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxSMSRetryAfter)
}

// excerpt quotes the start of a gateway's reply for an error, with m's
// number masked and its text and code cut out in case the gateway echoes
// them.
func excerpt(reply []byte, m verify.SMS) string {
	s := maskNumber(string(reply), m.To)
	if m.Text != "" {
		s = strings.ReplaceAll(s, m.Text, "[text]")
	}
	if m.Code != "" {
		s = strings.ReplaceAll(s, m.Code, "[code]")
	}
	if len(s) > smsReplyExcerpt {
		s = s[:smsReplyExcerpt] + "..."
	}
	return strconv.Quote(s)
}

// maskNumber masks in s every run of at least 7 digits that ends the
// E.164 number to, as a provider may echo it: "+8613800138000",
// "8613800138000" or the national "13800138000" all become stars and the
// last four digits, as codes become [code]. It runs before the code is
// cut out, which could split the number into runs that no longer end it.
func maskNumber(s, to string) string {
	digits := strings.TrimPrefix(to, "+")
	if len(digits) < 7 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		if j == i {
			b.WriteByte(s[i])
			i++
			continue
		}
		run := s[i:j]
		if len(run) >= 7 && strings.HasSuffix(digits, run) {
			run = strings.Repeat("*", len(run)-4) + run[len(run)-4:]
		}
		b.WriteString(run)
		i = j
	}
	return b.String()
}

// RedactURL is u without its query, which may carry a key.
func RedactURL(u *url.URL) string {
	r := *u
	r.User, r.RawQuery, r.ForceQuery, r.Fragment = nil, "", false, ""
	return r.String()
}

// WithDefaults returns a copy of t with DefaultLocale filled in and its
// maps copied, locales in their canonical case.
func WithDefaults(t sms.Templates) sms.Templates {
	if t.DefaultLocale == "" {
		t.DefaultLocale = sms.DefaultLocale
	}
	t.DefaultLocale = CanonicalLocale(t.DefaultLocale)
	codes := make(map[verify.BizKey]map[string]string, len(t.Codes))
	for b, byLocale := range t.Codes {
		codes[b] = copyLocales(byLocale)
	}
	t.Codes, t.Notice = codes, copyLocales(t.Notice)
	if t.NoticeNumber == "" {
		t.NoticeNumber = sms.NoticeLastFour
	}
	return t
}

func copyLocales(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for locale, id := range m {
		out[CanonicalLocale(locale)] = strings.TrimSpace(id)
	}
	return out
}

// CanonicalLocale spells a locale as BCP 47 is usually written: "zh_cn"
// and "ZH-cn" are "zh-CN". Matching is on this spelling.
func CanonicalLocale(s string) string {
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

// CheckTemplates checks a table that WithDefaults filled in; name is
// the config's ("aliyun: Config"), for the error.
func CheckTemplates(t sms.Templates, name string) error {
	// A locale names a language the Verifier can be asked for: a valid
	// BCP 47 tag, each subtag registered (zh-CN, en; not klingon), or no
	// request would ever pick its templates.
	checkLocale := func(where, locale string) error {
		if _, err := language.Parse(locale); err != nil {
			return fmt.Errorf("%s.Templates.%s: %q is not a BCP 47 language tag such as zh-CN or en", name, where, locale)
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
		if b != sms.AnyBizKey && !slices.Contains(verify.SMSBizKeys(), b) {
			return fmt.Errorf("%s.Templates.Codes: %q is not an SMS bizKey", name, b)
		}
		for locale, id := range byLocale {
			if err := checkTemplateID(id); err != nil {
				return fmt.Errorf("%s.Templates.Codes[%s][%s]: %w", name, b, locale, err)
			}
		}
	}
	for locale, id := range t.Notice {
		if err := checkTemplateID(id); err != nil {
			return fmt.Errorf("%s.Templates.Notice[%s]: %w", name, locale, err)
		}
	}
	if t.NoticeNumber != sms.NoticeLastFour && t.NoticeNumber != sms.NoticeMasked {
		return fmt.Errorf("%s.Templates.NoticeNumber is %q, neither %q nor %q", name, t.NoticeNumber, sms.NoticeLastFour, sms.NoticeMasked)
	}
	var missing []string
	for _, b := range verify.SMSBizKeys() {
		if t.Codes[b][t.DefaultLocale] == "" && t.Codes[sms.AnyBizKey][t.DefaultLocale] == "" {
			missing = append(missing, string(b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s.Templates.Codes has no template for locale %s of bizKey %s (set one for each, or one for sms.AnyBizKey \"*\")",
			name, t.DefaultLocale, strings.Join(missing, ", "))
	}
	if t.Notice[t.DefaultLocale] == "" {
		return fmt.Errorf("%s.Templates.Notice has no template for locale %s", name, t.DefaultLocale)
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

// Template returns the id of m's template and its parameter, in the
// locale m asks for when the table has it, else in a locale of the table
// of the same language in the same script (zh for zh-CN, zh-HK for zh-TW;
// never zh-TW for zh-CN), else in the default locale.
func Template(t sms.Templates, m verify.SMS) (id, param string) {
	locales := []string{t.DefaultLocale}
	if m.Locale != "" {
		locales = append(append([]string{CanonicalLocale(m.Locale)}, sameWriting(t, m.Locale)...), t.DefaultLocale)
	}
	for _, locale := range locales {
		if m.Code == "" {
			if id := t.Notice[locale]; id != "" {
				return id, noticeParam(t, m.NewAddress)
			}
			continue
		}
		if id := t.Codes[m.BizKey][locale]; id != "" {
			return id, m.Code
		}
		if id := t.Codes[sms.AnyBizKey][locale]; id != "" {
			return id, m.Code
		}
	}
	return "", "" // CheckTemplates makes every bizKey of SMSBizKeys find one
}

// sameWriting lists the table's locales, sorted, other than locale
// itself, that write locale's language in its script.
func sameWriting(t sms.Templates, locale string) []string {
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
		if err != nil || l == CanonicalLocale(locale) {
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
func noticeParam(t sms.Templates, masked string) string {
	if t.NoticeNumber == sms.NoticeMasked || len(masked) < 4 {
		return masked
	}
	return masked[len(masked)-4:]
}

// Class is how a provider's error code is taken (see sms.Error).
type Class struct {
	Retryable, Throttled bool
	// Wait is the window the code names, for RetryAfter; 0 if none.
	Wait time.Duration
}

// Classes of provider codes, for the senders' tables.
var (
	Final     = Class{}
	Retry     = Class{Retryable: true}
	Throttled = Class{Retryable: true, Throttled: true}
)

// Classify fills e's Retryable, Throttled and RetryAfter from the class
// of its code, if the table has the code, and from the HTTP status
// otherwise: a 5xx is retryable, a 429 throttled. retryAfter is the
// answer's Retry-After header, which beats the code's window.
func Classify(e *sms.Error, c Class, known bool, retryAfter time.Duration) {
	if !known {
		c = Class{Retryable: e.Status >= 500 || e.Status == http.StatusTooManyRequests, Throttled: e.Status == http.StatusTooManyRequests}
	}
	e.Retryable, e.Throttled = c.Retryable, c.Throttled
	if !e.Throttled {
		return
	}
	switch {
	case retryAfter > 0:
		e.RetryAfter = retryAfter
	case c.Wait > 0:
		e.RetryAfter = c.Wait
	default:
		e.RetryAfter = sms.DefaultRetryAfter
	}
}

// Endpoint checks a template provider's endpoint: an absolute
// https URL, or http on a loopback host (a test's fake), since every
// request is signed with the account's key and carries the user's number.
func Endpoint(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") ||
		(u.Scheme != "https" && !(u.Scheme == "http" && addr.IsLoopbackHost(u.Hostname()))) {
		return nil, fmt.Errorf("%s.Endpoint must be an https URL without a path or query (http only on a loopback host), not %q", name, raw)
	}
	u.Path = "/"
	return u, nil
}

// PercentEncode encodes s as RFC 3986 says and both providers' signatures
// require: every byte but A-Z a-z 0-9 - _ . ~ as %XX, upper case, so a
// space is %20 and * is %2A.
func PercentEncode(s string) string {
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

// CanonicalQuery is params sorted by name, names and values
// percent-encoded, joined with = and &.
func CanonicalQuery(params map[string]string) string {
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
		b.WriteString(PercentEncode(n) + "=" + PercentEncode(params[n]))
	}
	return b.String()
}

func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Excerpt is the start of a provider's message or answer for a
// *sms.Error, with m's code and text cut out in case it echoes them.
func Excerpt(s string, m verify.SMS) string {
	q := excerpt([]byte(s), m)
	if u, err := strconv.Unquote(q); err == nil {
		return u
	}
	return q
}
