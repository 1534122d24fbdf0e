package kind

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// notURLChars are the printable ASCII characters that RFC 3986 never lets
// a URL carry unencoded. Go's parser tolerates some of them, and others
// would read them differently.
const notURLChars = "<>\"{}|\\^`"

// CheckURL checks the URL of a webhook or a robot, trimmed and not empty.
// It refuses what parsers disagree on (non-ASCII, spaces, backslashes,
// percent-encoded or zoned hosts) rather than normalise it, so that the
// URL stored is the one the client sent and the one the sender dials. A
// literal host that the guard c refuses is the guard's error (matching
// its ErrBlocked); names are not resolved here.
func CheckURL(c *safehttp.Client, s string) (*url.URL, error) {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' || strings.IndexByte(notURLChars, s[i]) >= 0 {
			return nil, deskkit.Invalid("address", "must be a URL of printable ASCII characters, without spaces or any of %s: percent-encode them", notURLChars)
		}
	}
	if strings.IndexByte(s, '#') >= 0 {
		return nil, deskkit.Invalid("address", "must not have a fragment (#...): it is never sent")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, deskkit.Invalid("address", "must be an absolute http or https URL, such as https://example.com/hook")
	}
	if u.User != nil {
		return nil, deskkit.Invalid("address", "must not carry a user name or password (user:password@)")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, deskkit.Invalid("address", "must name a host: http(s)://HOST/...")
	}
	if err := checkHost(u); err != nil {
		return nil, err
	}
	if err := c.CheckHost(u.Hostname()); err != nil {
		if errors.Is(err, safehttp.ErrBlocked) {
			return nil, err
		}
		return nil, deskkit.Invalid("address", "must name a host that can be reached")
	}
	return u, nil
}

// checkHost checks the host and port of u: a DNS name (in its ASCII
// form), an IPv4 address, or an IPv6 address in brackets without a zone;
// a port, if any, from 1 to 65535.
func checkHost(u *url.URL) error {
	host := u.Hostname()
	if strings.ContainsAny(u.Host, "%") || strings.ContainsFunc(u.Host, func(r rune) bool { return r > '~' }) {
		// url.Parse has decoded the host: percent-encoding there is
		// either a zone or text of some other alphabet.
		return deskkit.Invalid("address", "host must be a domain name (in its ASCII xn-- form) or an IP address, without percent-encoding or a zone")
	}
	if strings.HasPrefix(u.Host, "[") {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.Is6() {
			return deskkit.Invalid("address", "host in brackets must be an IPv6 address")
		}
	} else if !isDNSName(host) {
		return deskkit.Invalid("address", "host must be a domain name (in its ASCII xn-- form) or an IP address")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return deskkit.Invalid("address", "port must be from 1 to 65535")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return deskkit.Invalid("address", "port must be from 1 to 65535")
	}
	return nil
}

// isDNSName reports whether s is written as a host name: labels of 1 to 63
// letters, digits, hyphens or underscores, at most 253 bytes, an optional
// final dot. Dotted IPv4 addresses and their odd spellings ("127.1") pass;
// the guard's CheckHost reads them as addresses.
func isDNSName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			b := label[i]
			if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
				return false
			}
		}
	}
	return true
}

// CheckRobot checks that a robot's URL has the protocol's path and exactly
// one non-empty key parameter; what names the expected form for the error.
func CheckRobot(u *url.URL, path, key string, what deskkit.Text) error {
	if u.EscapedPath() != path {
		return deskkit.Invalid("address", "must be %s (the path must be %s)", what, path)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(q[key]) != 1 || q.Get(key) == "" {
		return deskkit.Invalid("address", "must be %s (with one non-empty %s parameter)", what, key)
	}
	return nil
}

// MaskQuery masks a robot's URL: every query value, the robot's key among
// them, becomes "***"; an address that is not a URL is "***" whole.
func MaskQuery(address string) string {
	u, err := url.Parse(address)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return notify.Masked
	}
	parts := strings.Split(u.RawQuery, "&")
	for i, p := range parts {
		name, _, _ := strings.Cut(p, "=")
		parts[i] = name + "=" + notify.Masked
	}
	m := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if u.RawQuery != "" {
		m.RawQuery = strings.Join(parts, "&")
	}
	return m.String()
}

// HiddenQuery is what a robot's answer must not show, as MaskQuery hides
// it: its query's values, the key among them (the path is the
// protocol's); an address that is not a URL, whole.
func HiddenQuery(address string) []string {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return []string{address}
	}
	return QueryValues(u)
}

// QueryValues are the values of u's query as written.
func QueryValues(u *url.URL) []string {
	var out []string
	for p := range strings.SplitSeq(u.RawQuery, "&") {
		_, v, _ := strings.Cut(p, "=")
		out = append(out, v)
	}
	return out
}
