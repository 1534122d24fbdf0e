package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// Failure is a message the far end did not take, or could not be given:
// what it answered, in words for the client (Reason) and in fields for a
// job deciding whether to retry.
type Failure struct {
	// Reason says what happened, for the client: "the webhook answered
	// 410 Gone", "WeCom answered errcode 93000: invalid webhook url",
	// "timed out after 10s", "connection refused": a message, written in
	// the reader's language by LocalizedMessage. What it quotes of the far
	// end is kept as it came, but cut short and without control
	// characters.
	Reason deskkit.Text
	// Status is the HTTP status of the reply; 0 if there was none.
	Status int
	// Errcode and Errmsg are a robot's errcode and errmsg; 0 and "" if
	// none. Errmsg is cut and cleaned as Reason is.
	Errcode int
	Errmsg  string
	// Retryable says whether sending the same message later may succeed:
	// true for timeouts, connection errors, 408, 429, 5xx, a robot's rate
	// limit or "system busy", a mail server's temporary refusal; false for
	// redirects, other 4xx, other errcodes, a blocked address, a mail
	// server's permanent refusal.
	Retryable bool
	// RetryAfter is the wait the far end asked for in a Retry-After
	// header (429, 503); 0 if it asked for none.
	RetryAfter time.Duration
	// Recipients are, for e-mail, the addresses that did not get the
	// message, in the target's order; the others did.
	Recipients []string
	// Err is the underlying error, if any: for logs, never for the client.
	Err error
}

// httpapi sends a Failure's ClientMessage as the envelope's msg.
var _ deskkit.ClientMessager = (*Failure)(nil)

// Error is for logs: the reason and the underlying error.
func (f *Failure) Error() string {
	if f.Err != nil {
		return "notify: " + f.Reason.String() + ": " + f.Err.Error()
	}
	return "notify: " + f.Reason.String()
}

// Unwrap returns Err.
func (f *Failure) Unwrap() error { return f.Err }

// ClientMessage is Reason in English: what the far end answered, safe to
// show.
func (f *Failure) ClientMessage() string { return f.Reason.String() }

// LocalizedMessage is Reason in tag's language.
func (f *Failure) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return f.Reason.LocalizedMessage(m, tag)
}

// say sets the reason.
func (f *Failure) say(t deskkit.Text) { f.Reason = t }

// Is makes errors.Is(f, ErrBlocked) hold when the SSRF guard refused the
// address, and errors.Is(f, ErrFailed) otherwise; each with its class
// (deskkit.ErrInvalid, deskkit.ErrUnavailable).
func (f *Failure) Is(target error) bool {
	if f.Blocked() {
		return target == ErrBlocked || target == deskkit.ErrInvalid
	}
	return target == ErrFailed || target == deskkit.ErrUnavailable
}

// Blocked reports whether the SSRF guard refused the address.
func (f *Failure) Blocked() bool { return errors.Is(f.Err, safehttp.ErrBlocked) }

// Bounds of what a Failure quotes from the far end, which may send
// anything: enough to read an errmsg or a Location, not a page.
const (
	maxErrmsgRunes   = 200
	maxLocationRunes = 200
)

// clean makes far-end text fit to quote: invalid UTF-8, control and
// invisible formatting characters (line breaks, terminal escapes, bidi
// overrides, which could forge log lines or disguise text) become spaces,
// runs of spaces one, and it is cut to limit runes with "…".
func clean(s string, limit int) string {
	out := make([]rune, 0, min(len(s), limit+1))
	gap := false
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			gap = len(out) > 0
			continue
		}
		if gap {
			out = append(out, ' ')
			gap = false
		}
		out = append(out, r)
		if len(out) > limit {
			return strings.TrimRight(string(out[:limit]), " ") + "…"
		}
	}
	return string(out)
}

// Quote is far-end text as a failure quotes it, as an errmsg is: invalid
// UTF-8, control and invisible characters made spaces, runs of spaces
// one, cut to 200 runes with "…". A kind whose far end answers in plain
// text (Slack's "no_service") quotes its answer so.
func Quote(s string) string { return clean(s, maxErrmsgRunes) }

// statusFailure is the failure of a non-2xx reply from who ("the
// webhook", "WeCom") to a request to u.
func (s *Sender) statusFailure(who deskkit.Text, u *url.URL, r *safehttp.Reply) *Failure {
	f := &Failure{Status: r.Status}
	if r.Status >= 300 && r.Status < 400 {
		// A redirect is never followed: it could lead the request past
		// the guard's decision about the address the user gave, and the
		// user should store the final URL instead.
		if loc := strings.TrimSpace(r.Header.Get("Location")); loc != "" {
			f.say(deskkit.Textf("%s answered a redirect (%d to %s), which is not followed: use the final URL", who, r.Status, clean(maskLocation(u, loc), maxLocationRunes)))
			return f
		}
		f.say(deskkit.Textf("%s answered a redirect (%d), which is not followed: use the final URL", who, r.Status))
		return f
	}
	f.say(deskkit.Textf("%s answered %s", who, statusText(r.Status)))
	f.Retryable = r.Status == http.StatusRequestTimeout || r.Status == http.StatusTooManyRequests || r.Status >= 500
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		f.RetryAfter = retryAfter(r.Header.Get("Retry-After"), s.Clock())
	}
	return f
}

// Masked is what a masked part of a URL shows.
const Masked = "***"

// MaskURL is a URL as deskkit shows one that may carry a token in its path
// or query (a webhook's address, where a redirect points): its scheme and
// host, with the port, followed by "/***" whatever the path and query were
// (https://hooks.example.com/***); "***" for text that is not an absolute
// URL. channel.MaskAddress shows webhooks so.
func MaskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Masked
	}
	return u.Scheme + "://" + u.Host + "/" + Masked
}

// maskLocation is a redirect's Location as a failure quotes it: resolved
// against the request's URL u, and masked as MaskURL masks (a Location may
// carry a token, as the address may, and the reason is shown to whoever
// sees the address masked). Where the redirect goes is still told: the
// scheme and host, which is what a redirect usually changes.
func maskLocation(u *url.URL, loc string) string {
	l, err := url.Parse(loc)
	if err != nil {
		return Masked
	}
	if u != nil {
		l = u.ResolveReference(l)
	}
	return MaskURL(l.String())
}

// statusText is "410 Gone", or the bare number for a status without a
// name.
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return strconv.Itoa(status) + " " + t
	}
	return strconv.Itoa(status)
}

// maxRetryAfter caps a Retry-After, so that a far end cannot park a job
// for a year.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads a Retry-After value, delay-seconds or an HTTP date; 0
// when absent or malformed.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	// Out of range, ParseInt gives the nearest int64: a huge delay is
	// capped like any long one.
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if secs <= 0 {
			return 0
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// transportFailure is the failure of a request that got no reply after
// waiting elapsed: the guard refused the address, the time ran out, the
// connection failed.
func transportFailure(err error, elapsed time.Duration) *Failure {
	f := &Failure{Err: err, Retryable: true}
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var badCert x509.CertificateInvalidError
	var tlsRecord tls.RecordHeaderError
	switch {
	case errors.Is(err, safehttp.ErrBlocked):
		f.say(deskkit.Textf("address points to a network that channels may not reach"))
		var be *safehttp.BlockedError
		if errors.As(err, &be) {
			f.say(be.Text()) // why: loopback, private, metadata
		}
		f.Retryable = false
	case errors.Is(err, context.DeadlineExceeded):
		// The wait measured, not the configured bound: the caller's
		// deadline may have come first.
		f.say(deskkit.Textf("timed out after %s", roundWait(elapsed).String()))
	case errors.Is(err, context.Canceled):
		f.say(deskkit.Textf("the send was cancelled"))
	case errors.Is(err, syscall.ECONNREFUSED):
		f.say(deskkit.Textf("connection refused"))
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		f.say(deskkit.Textf("the connection was closed before an answer"))
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		f.say(deskkit.Textf("the host is unreachable"))
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			f.say(deskkit.Textf("the host name %s was not found", clean(dnsErr.Name, maxLocationRunes)))
			f.Retryable = false
		} else {
			f.say(deskkit.Textf("the host name could not be resolved"))
		}
	case errors.As(err, &unknownCA), errors.As(err, &badHost), errors.As(err, &badCert):
		f.say(deskkit.Textf("the server's TLS certificate is not trusted or not valid for its name"))
		f.Retryable = false
	case errors.As(err, &tlsRecord),
		// net/http replaces the RecordHeaderError with this text when
		// the record is the start of an HTTP reply; a test pins it.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		f.say(deskkit.Textf("the server does not speak TLS: use http:// or the right port"))
		f.Retryable = false
	default:
		f.say(deskkit.Textf("could not reach the server"))
	}
	return f
}

// roundWait rounds a measured wait for reading: 10.003s is "10s", 201ms
// is "200ms".
func roundWait(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}
