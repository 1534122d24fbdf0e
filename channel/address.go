package channel

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// maxEmailBytes bounds one address of an EMAIL channel: RFC 5321's limit
// of a path.
const maxEmailBytes = 254

// The protocol paths and key parameters of the robot kinds.
const (
	weComPath     = "/cgi-bin/webhook/send"
	weComKey      = "key"
	dingTalkPath  = "/robot/send"
	dingTalkToken = "access_token"
)

// normalizeInput checks what a client sent to add, replace or test a
// channel and returns it as stored: the canonical type, the name, the
// normalised address, and the secret. The secret is nil unless the type is
// WORKPLACE_CHAT and one was sent; "" then means "remove it". in.ID is
// copied, not checked: its rules differ by operation.
func normalizeInput(c *safehttp.Client, in Input) (Channel, *string, error) {
	t, err := ParseType(in.Type)
	if err != nil {
		return Channel{}, nil, err
	}
	if err := deskkit.CheckUniqueName("name", in.Name, MaxNameRunes); err != nil {
		return Channel{}, nil, err
	}
	address, err := normalizeAddress(c, t, in.Address)
	if err != nil {
		return Channel{}, nil, err
	}
	secret, err := normalizeSecret(t, in.Secret)
	if err != nil {
		return Channel{}, nil, err
	}
	return Channel{ID: in.ID, Type: t, Name: in.Name, Address: address}, secret, nil
}

// normalizeSecret checks a WORKPLACE_CHAT channel's DingTalk signing
// secret. Other types take none: their secrets are made by deskkit, or
// they have none, and "" or nil from a client that always sends the field
// means nothing.
func normalizeSecret(t Type, secret *string) (*string, error) {
	if secret == nil {
		return nil, nil
	}
	if len(*secret) > MaxSecretBytes {
		return nil, deskkit.Invalid("secret", "must be at most %d bytes", MaxSecretBytes)
	}
	s := strings.TrimSpace(*secret)
	if t != WorkplaceChat {
		if s != "" {
			return nil, deskkit.Invalid("secret", "is taken only by WORKPLACE_CHAT channels (a DingTalk signing secret, SEC...); %s channels take none", t)
		}
		return nil, nil
	}
	if s == "" {
		return &s, nil
	}
	if !strings.HasPrefix(s, "SEC") {
		return nil, deskkit.Invalid("secret", "must be a DingTalk signing secret, which starts with SEC")
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return nil, deskkit.Invalid("secret", "must be printable ASCII without spaces, as DingTalk shows it")
		}
	}
	return &s, nil
}

// normalizeAddress checks a channel's address for type t and returns it as
// stored. A URL (WEBHOOK and the robots) is stored as written once trimmed;
// an EMAIL list is stored normalised: each address as addr.NormalizeEmail
// writes it, duplicates dropped, joined by commas without spaces. Errors
// are *deskkit.InputError values naming "address", or, for a URL whose host
// is a literal address the SSRF guard refuses (or "localhost"), an error
// matching ErrAddressBlocked. Names are not resolved here: the guard checks
// what they resolve to when a message is sent.
func normalizeAddress(c *safehttp.Client, t Type, address string) (string, error) {
	if len(address) > MaxAddressBytes {
		return "", deskkit.Invalid("address", "must be at most %d bytes", MaxAddressBytes)
	}
	address = strings.TrimSpace(address)
	if address == "" {
		return "", deskkit.Invalid("address", "is required")
	}
	if t == Email {
		return normalizeEmails(address)
	}
	return normalizeURL(c, t, address)
}

// normalizeEmails checks a comma-separated list of e-mail addresses.
func normalizeEmails(list string) (string, error) {
	var out []string
	seen := map[string]bool{}
	for i, a := range strings.Split(list, ",") {
		if strings.TrimSpace(a) == "" {
			return "", deskkit.Invalid("address", "the %s e-mail address is empty: separate addresses by single commas", ordinal(i+1))
		}
		n, err := addr.NormalizeEmail("address", a, maxEmailBytes)
		if err != nil {
			var ie *deskkit.InputError
			if errors.As(err, &ie) {
				return "", deskkit.Invalid("address", "the %s e-mail address %s", ordinal(i+1), ie.Rule)
			}
			return "", err
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		if len(out) > MaxEmailAddrs {
			return "", deskkit.Invalid("address", "must hold at most %d different e-mail addresses", MaxEmailAddrs)
		}
	}
	return strings.Join(out, ","), nil
}

// ordinal writes n as "1st", "2nd", "3rd", "4th", ..., "11th", "21st", a
// Text so that other languages write it their way.
func ordinal(n int) deskkit.Text {
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		return deskkit.Textf("%dst", n)
	case n%10 == 2:
		return deskkit.Textf("%dnd", n)
	case n%10 == 3:
		return deskkit.Textf("%drd", n)
	}
	return deskkit.Textf("%dth", n)
}

// notURLChars are the printable ASCII characters that RFC 3986 never lets
// a URL carry unencoded. Go's parser tolerates some of them, and others
// would read them differently.
const notURLChars = "<>\"{}|\\^`"

// normalizeURL checks the URL of a WEBHOOK or a robot. It refuses what
// parsers disagree on (non-ASCII, spaces, backslashes, percent-encoded or
// zoned hosts) rather than normalise it, so that the URL stored is the one
// the client sent and the one the sender dials.
func normalizeURL(c *safehttp.Client, t Type, s string) (string, error) {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' || strings.IndexByte(notURLChars, s[i]) >= 0 {
			return "", deskkit.Invalid("address", "must be a URL of printable ASCII characters, without spaces or any of %s: percent-encode them", notURLChars)
		}
	}
	if strings.IndexByte(s, '#') >= 0 {
		return "", deskkit.Invalid("address", "must not have a fragment (#...): it is never sent")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", deskkit.Invalid("address", "must be an absolute http or https URL, such as https://example.com/hook")
	}
	if u.User != nil {
		return "", deskkit.Invalid("address", "must not carry a user name or password (user:password@)")
	}
	if u.Opaque != "" || u.Host == "" {
		return "", deskkit.Invalid("address", "must name a host: http(s)://HOST/...")
	}
	if err := checkHost(u); err != nil {
		return "", err
	}
	if err := c.CheckHost(u.Hostname()); err != nil {
		if errors.Is(err, safehttp.ErrBlocked) {
			// The guard's error first, so that its ClientMessage (why:
			// loopback, private, metadata) is the one the client reads.
			return "", fmt.Errorf("%w: %w", err, ErrAddressBlocked)
		}
		return "", deskkit.Invalid("address", "must name a host that can be reached")
	}
	switch t {
	case EnterpriseChat:
		if err := checkRobot(u, weComPath, weComKey, deskkit.Textf("a WeCom group-robot URL: https://HOST/cgi-bin/webhook/send?key=KEY")); err != nil {
			return "", err
		}
	case WorkplaceChat:
		if err := checkRobot(u, dingTalkPath, dingTalkToken, deskkit.Textf("a DingTalk robot URL: https://HOST/robot/send?access_token=TOKEN")); err != nil {
			return "", err
		}
		q, _ := url.ParseQuery(u.RawQuery) // checkRobot parsed it
		if q.Has("timestamp") || q.Has("sign") {
			return "", deskkit.Invalid("address", "must not carry timestamp or sign: they are added to each message when the channel has a secret")
		}
	}
	return s, nil
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

// checkRobot checks that a robot's URL has the protocol's path and exactly
// one non-empty key parameter; what names the expected form for the error.
func checkRobot(u *url.URL, path, key string, what deskkit.Text) error {
	if u.EscapedPath() != path {
		return deskkit.Invalid("address", "must be %s (the path must be %s)", what, path)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(q[key]) != 1 || q.Get(key) == "" {
		return deskkit.Invalid("address", "must be %s (with one non-empty %s parameter)", what, key)
	}
	return nil
}
