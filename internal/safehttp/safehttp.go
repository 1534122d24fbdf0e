package safehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// DefaultTimeout bounds one exchange, from the dial to the last byte of the
// reply read, when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultMaxReplyBytes is how much of a reply body is read when
// Config.MaxReplyBytes is zero: enough for any robot's JSON answer, too
// little for a hostile server to tie up memory.
const DefaultMaxReplyBytes = 64 << 10

// maxHeaderBytes bounds the reply's header block, for the same reason as
// DefaultMaxReplyBytes bounds its body.
const maxHeaderBytes = 64 << 10

// Resolver resolves names; *net.Resolver satisfies it. Tests pass a fake so
// that names resolve to blocked addresses without any DNS traffic.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Client. The zero value is the production setting.
type Config struct {
	// AllowPrivateNetworks allows loopback, RFC 1918, CGNAT 100.64.0.0/10
	// and ULA fc00::/7 destinations, for development and tests. Cloud
	// metadata endpoints and link-local addresses stay blocked.
	AllowPrivateNetworks bool
	// Resolver resolves host names; net.DefaultResolver if nil.
	Resolver Resolver
	// Timeout bounds one Do from the dial to the last byte of the reply
	// read; DefaultTimeout if 0.
	Timeout time.Duration
	// MaxReplyBytes is how much of a reply body Do reads;
	// DefaultMaxReplyBytes if 0.
	MaxReplyBytes int64
	// UserAgent is sent when the request has none; "deskkit" if "".
	UserAgent string
	// MaxIdleConnsPerHost is how many idle connections to one host the
	// client keeps alive for the next request; DefaultMaxIdleConnsPerHost
	// if 0. A worker sending to one receiver at a concurrency of n wants
	// n, or most requests open a new connection.
	MaxIdleConnsPerHost int
}

// DefaultMaxIdleConnsPerHost is Config.MaxIdleConnsPerHost's default.
const DefaultMaxIdleConnsPerHost = 4

// ErrBlocked is matched (errors.Is) by every *BlockedError.
var ErrBlocked = errors.New("safehttp: address blocked")

// BlockedError is the guard's refusal of one address.
type BlockedError struct {
	Host string     // the host as written in the URL; "" when only an address was checked
	Addr netip.Addr // the refused address; invalid when Host is not an address at all
	// Reason is why, e.g. "private network 10.0.0.0/8": a message, so
	// that a refusal names the range in the reader's language.
	Reason deskkit.Text
}

// blocked returns the refusal of addr (invalid for none) for reason.
func blocked(addr netip.Addr, reason deskkit.Text) *BlockedError {
	return &BlockedError{Addr: addr, Reason: reason}
}

func (e *BlockedError) Error() string {
	var b strings.Builder
	b.WriteString("safehttp: address blocked: ")
	switch {
	case e.Host != "" && e.Addr.IsValid() && e.Host != e.Addr.String():
		fmt.Fprintf(&b, "host %q is %s", e.Host, e.Addr)
	case e.Addr.IsValid():
		b.WriteString(e.Addr.String())
	default:
		fmt.Fprintf(&b, "host %q", e.Host)
	}
	if !e.Reason.IsZero() {
		b.WriteString(" (" + e.Reason.String() + ")")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrBlocked) true for every *BlockedError.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// AllowHint is how a refusal of loopback or a private network tells the
// client what opens them, in development.
const AllowHint = "; in development, channel.Config.AllowPrivateNetworks (the reference server's " +
	"-channel-allow-private-networks) lets channels reach loopback and private networks"

// ClientMessage says why the address was refused, for the client who gave
// it: loopback, a private network (with AllowHint), a cloud metadata
// endpoint or link-local (never allowed), or another special-purpose range.
// It names no address: one the guard found by resolving a name would tell
// the client how the server's DNS sees internal names.
func (e *BlockedError) ClientMessage() string { return e.Text().String() }

// LocalizedMessage is ClientMessage in tag's language.
func (e *BlockedError) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return e.Text().LocalizedMessage(m, tag)
}

// Text is ClientMessage as a deskkit.Text.
func (e *BlockedError) Text() deskkit.Text {
	ip := e.Addr.WithZone("").Unmap()
	if !ip.IsValid() {
		return deskkit.Textf("address is refused: %s", e.Reason)
	}
	if name, ok := metadataName(ip); ok {
		return deskkit.Textf("address is a cloud metadata endpoint (%s), which channels may never reach, not even in development", name)
	}
	switch {
	case linkLocal4.Contains(ip) || linkLocal6.Contains(ip):
		return deskkit.Textf("address is link-local, where cloud metadata services live, which channels may never reach, not even in development")
	case ip.IsLoopback():
		return deskkit.Textf("address is loopback (this server itself), which channels may not reach" + AllowHint)
	}
	for _, p := range privatePrefixes {
		if p.Contains(ip) {
			return deskkit.Textf("address is in a private network (%s), which channels may not reach"+AllowHint, e.Reason)
		}
	}
	return deskkit.Textf("address is special-purpose (%s), which channels may not reach", e.Reason)
}

// Client sends HTTP requests to user-given URLs without letting them reach
// the server's own network. It is safe for concurrent use.
type Client struct {
	allowPrivate bool
	resolver     Resolver
	timeout      time.Duration
	maxReply     int64
	userAgent    string
	guard        *ssrf.Guardian
	http         *http.Client

	// testConnect, when set by a test, replaces connect so that a test can
	// see which addresses would be dialled without dialling them.
	testConnect func(ctx context.Context, ap netip.AddrPort) (net.Conn, error)
	// minDialShare is the least time an address that is not the last gets
	// to connect; minDialShare, or less in tests.
	minDialShare time.Duration
}

// New returns a Client for cfg, defaults applied.
func New(cfg Config) *Client {
	c := &Client{
		allowPrivate: cfg.AllowPrivateNetworks,
		resolver:     cfg.Resolver,
		timeout:      cfg.Timeout,
		maxReply:     cfg.MaxReplyBytes,
		userAgent:    cfg.UserAgent,
		minDialShare: minDialShare,
	}
	if c.resolver == nil {
		c.resolver = net.DefaultResolver
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxReply <= 0 {
		c.maxReply = DefaultMaxReplyBytes
	}
	if c.userAgent == "" {
		c.userAgent = "deskkit"
	}
	idlePerHost := cfg.MaxIdleConnsPerHost
	if idlePerHost <= 0 {
		idlePerHost = DefaultMaxIdleConnsPerHost
	}
	// Webhook receivers listen on any port (8443, 9000...); the address is
	// what matters. The private allowance is applied by CheckAddr, after
	// the metadata list, so that it can never open a metadata endpoint.
	c.guard = ssrf.New(ssrf.WithAnyPort(), ssrf.WithNetworks("tcp4", "tcp6"))
	transport := &http.Transport{
		// No proxy, from the environment or elsewhere: with a proxy the
		// guard would check the proxy's address, not the target's.
		Proxy:                  nil,
		DialContext:            c.dial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    c.timeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		MaxIdleConns:           max(100, idlePerHost),
		MaxIdleConnsPerHost:    idlePerHost,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
	}
	c.http = &http.Client{
		Transport: transport,
		// A redirect could lead anywhere, including to a host that was
		// never validated; the 3xx is the answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		// No Client.Timeout: Do puts the deadline on the request's
		// context, which bounds the dial, the headers and the body alike
		// and makes every timeout wrap context.DeadlineExceeded.
	}
	return c
}

// Reply is what the far end answered. A 3xx is returned as a Reply (never
// followed); Location stays in Header.
type Reply struct {
	Status    int
	Header    http.Header
	Body      []byte // at most MaxReplyBytes
	Truncated bool   // the reply was longer than Body; the rest was not read
}

// Do sends req (its context is honoured too) and reads at most MaxReplyBytes
// of the reply, then closes the body without reading the rest.
//
// Errors: a *BlockedError (errors.Is(err, ErrBlocked)) when the guard
// refused every address of the host, before any packet was sent to it; an
// error wrapping context.DeadlineExceeded when Timeout or req's deadline
// passed (context.Canceled when req's context was cancelled); a
// *deskkit.InputError for field "url" when the URL is not an absolute http
// or https URL; other transport errors. Error texts name the URL's scheme
// and host alone: its path and query often hold a key.
func (c *Client) Do(req *http.Request) (*Reply, error) {
	if req == nil || req.URL == nil {
		return nil, deskkit.Invalid("url", "is required")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, deskkit.Invalid("url", "must be an absolute http or https URL")
	}
	host := req.URL.Hostname()
	if host == "" {
		return nil, deskkit.Invalid("url", "must name a host")
	}
	// Refuse literal addresses in every spelling before the transport sees
	// them, so that "127.1" never reaches a resolver that might send it
	// to the network as a name.
	if err := c.CheckHost(host); err != nil {
		return nil, err
	}

	limit := c.timeout
	if d, ok := req.Context().Deadline(); ok && time.Until(d) < limit {
		limit = time.Until(d).Round(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(req.Context(), c.timeout)
	defer cancel()
	// A shallow copy with the bounded context; the headers are copied
	// only to add the User-Agent, so that the caller's request is never
	// changed.
	out := req.WithContext(ctx)
	if out.Header.Get("User-Agent") == "" {
		h := make(http.Header, len(req.Header)+1)
		for k, v := range req.Header {
			h[k] = v
		}
		h.Set("User-Agent", c.userAgent)
		out.Header = h
	}

	resp, err := c.http.Do(out)
	if err != nil {
		return nil, wrapErr(ctx, limit, req.Method, redact(req.URL), "", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxReply+1))
	if err != nil {
		return nil, wrapErr(ctx, limit, req.Method, redact(req.URL), fmt.Sprintf("reading the reply (status %d)", resp.StatusCode), err)
	}
	reply := &Reply{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if int64(len(body)) > c.maxReply {
		reply.Body = body[:c.maxReply:c.maxReply]
		reply.Truncated = true
	}
	return reply, nil
}

// wrapErr turns a transport error into Do's error: the *BlockedError as it
// is, a timeout saying so and wrapping the context's error, and the URL
// without its query.
func wrapErr(ctx context.Context, limit time.Duration, method, where, doing string, err error) error {
	var blocked *BlockedError
	if errors.As(err, &blocked) {
		return blocked
	}
	// Keep the cause but drop *url.Error, whose text holds the full URL.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	prefix := "safehttp: " + method + " " + where
	if doing != "" {
		prefix += ": " + doing
	}
	ctxErr := ctx.Err()
	switch {
	case ctxErr == nil:
		return fmt.Errorf("%s: %w", prefix, err)
	case errors.Is(ctxErr, context.DeadlineExceeded) && errors.Is(err, ctxErr):
		return fmt.Errorf("%s: no answer within %s: %w", prefix, limit, err)
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fmt.Errorf("%s: no answer within %s: %w (%v)", prefix, limit, ctxErr, err)
	case errors.Is(err, ctxErr):
		return fmt.Errorf("%s: %w", prefix, err)
	default:
		return fmt.Errorf("%s: %w (%v)", prefix, ctxErr, err)
	}
}

// redact is u's scheme and host alone: robot URLs carry their key in the
// query, many webhook URLs carry a token in the path (/services/T0/B0/XXXX),
// and errors end up in logs and replies.
func redact(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host}
	return r.String()
}

// dial is the transport's DialContext: it resolves host itself, checks
// every address, and dials only allowed ones, each through a net.Dialer
// whose Control checks the address again at the socket, so what was
// checked is exactly what is connected to (a second lookup could answer
// differently: DNS rebinding).
func (c *Client) dial(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("safehttp: network %q not allowed", network)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("safehttp: dial %s: %w", address, err)
	}
	// The transport may dial on a context of its own, without the
	// request's deadline (a connection it finishes goes to the pool): the
	// dial gets the Timeout itself.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.CheckHost(host); err != nil {
		return nil, err
	}
	addrs, err := c.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var allowed []netip.Addr
	var firstBlocked error
	for _, a := range addrs {
		a = a.Unmap()
		if err := c.CheckAddr(a); err != nil {
			if firstBlocked == nil {
				var be *BlockedError
				if errors.As(err, &be) {
					be.Host = host
				}
				firstBlocked = err
			}
			continue
		}
		allowed = append(allowed, a)
	}
	if len(allowed) == 0 {
		if firstBlocked == nil {
			return nil, fmt.Errorf("safehttp: dial %s: no address for host", address)
		}
		return nil, firstBlocked
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("safehttp: dial %s: bad port", address)
	}
	connect := c.connect
	if c.testConnect != nil {
		connect = c.testConnect
	}
	var candidates []netip.Addr
	for _, a := range allowed {
		if (network == "tcp4" && !a.Is4()) || (network == "tcp6" && a.Is4()) {
			continue
		}
		candidates = append(candidates, a)
	}
	var firstErr error
	for i, a := range candidates {
		share, cancel := dialShare(ctx, len(candidates)-i, c.minDialShare)
		conn, err := connect(share, netip.AddrPortFrom(a, uint16(portNum)))
		cancel() // the share bounds the dial only: a connection outlives it
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("safehttp: dial %s: no %s address for host", address, network)
	}
	return nil, firstErr
}

// minDialShare is the least time an address that is not the last gets to
// connect.
const minDialShare = 2 * time.Second

// dialShare bounds one of left connection attempts: an equal share of
// what remains of ctx's deadline, at least least, so that a first address
// that drops packets cannot use up the time of the others. The last
// attempt gets all that remains.
func dialShare(ctx context.Context, left int, least time.Duration) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok || left <= 1 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, max(time.Until(d)/time.Duration(left), least))
}

// resolve returns host's addresses: the literal address itself, the
// loopback addresses for localhost names (RFC 6761: never asked of DNS), or
// the resolver's answer.
func (c *Client) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok, err := parseLiteral(host); err != nil {
		return nil, err
	} else if ok {
		return []netip.Addr{a}, nil
	}
	if isLocalhostName(host) {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
	}
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("safehttp: resolving %q: %w", host, err)
	}
	return addrs, nil
}

// connect dials one checked address through a dialer whose Control checks
// it once more at the socket.
func (c *Client) connect(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	network := "tcp6"
	if ap.Addr().Is4() {
		network = "tcp4"
	}
	d := net.Dialer{Control: c.control}
	return d.DialContext(ctx, network, ap.String())
}

// control runs on the socket just before connect: the last word on the
// address actually connected to.
func (c *Client) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("safehttp: network %q not allowed", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("safehttp: dial %s: %w", address, err)
	}
	return c.CheckAddr(ap.Addr())
}

// CheckAddr is the guard's decision for one IP: nil, or a *BlockedError.
// IPv4-mapped IPv6 addresses are decided as their IPv4 address, and a zone
// is ignored, so every spelling of an address gets the same answer.
func (c *Client) CheckAddr(ip netip.Addr) error {
	if !ip.IsValid() {
		return blocked(netip.Addr{}, deskkit.Textf("not an IP address"))
	}
	orig := ip
	ip = ip.WithZone("").Unmap()
	if name, ok := metadataName(ip); ok {
		return blocked(orig, deskkit.Textf("cloud metadata endpoint: %s", name))
	}
	if linkLocal4.Contains(ip) || linkLocal6.Contains(ip) {
		return blocked(orig, deskkit.Textf("link-local address"))
	}
	if c.allowPrivate {
		for _, p := range privatePrefixes {
			if p.Contains(ip) {
				return nil
			}
		}
	}
	if err := c.guard.SafeAddr(ip); err != nil {
		return blocked(orig, reason(ip))
	}
	return nil
}

// CheckHost is the decision that can be taken before any DNS lookup, for
// validating URLs when they are saved: a literal IP in any spelling
// ("127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "[::ffff:127.0.0.1]",
// zone ids...) is parsed, inet_aton forms included, and checked with
// CheckAddr; "localhost" and names under ".localhost" are loopback; a name
// whose last label is a number but that is no valid IPv4 address ("1.2.3.4.5",
// "127.0.0.08") is refused, because resolvers disagree on what it means.
// Other names return nil: they are checked at dial time.
func (c *Client) CheckHost(host string) error {
	h := host
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	a, ok, err := parseLiteral(h)
	if err != nil {
		be := &BlockedError{Host: host, Reason: deskkit.Plain(err.Error())}
		var le literalError
		if errors.As(err, &le) {
			be.Reason = le.text
		}
		return be
	}
	if ok {
		if err := c.CheckAddr(a); err != nil {
			var be *BlockedError
			if errors.As(err, &be) {
				be.Host = host
			}
			return err
		}
		return nil
	}
	if isLocalhostName(h) {
		if err := c.CheckAddr(netip.AddrFrom4([4]byte{127, 0, 0, 1})); err != nil {
			var be *BlockedError
			if errors.As(err, &be) {
				be.Host = host
				be.Reason = deskkit.Textf("localhost is loopback")
			}
			return err
		}
	}
	return nil
}

// literalError is parseLiteral's refusal of a host, as a message.
type literalError struct{ text deskkit.Text }

func (e literalError) Error() string { return e.text.String() }

// isLocalhostName reports whether host is "localhost" or a name under
// ".localhost", which RFC 6761 reserves for loopback.
func isLocalhostName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// parseLiteral parses host as an IP literal: IPv6 (zone allowed) or IPv4 in
// any inet_aton spelling. ok is false for a name. err is set for a host
// that ends in a number (WHATWG URL's rule) but is no valid IPv4 address.
func parseLiteral(host string) (a netip.Addr, ok bool, err error) {
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, false, literalError{deskkit.Textf("not a valid IPv6 address")}
		}
		return a, true, nil
	}
	h := strings.TrimSuffix(host, ".")
	parts := strings.Split(h, ".")
	if !isNumber(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil
	}
	v, ok := parseIPv4(parts)
	if !ok {
		return netip.Addr{}, false, literalError{deskkit.Textf("numeric host that is not a valid IPv4 address")}
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// isNumber reports whether s is a decimal, octal or hexadecimal number as
// inet_aton reads them (the WHATWG "ends in a number" test).
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		for i := 2; i < len(s); i++ {
			if !isHex(s[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

// parseIPv4 reads 1 to 4 inet_aton parts: a.b.c.d, a.b.c (c 16 bits), a.b
// (b 24 bits), a (32 bits); each decimal, 0-prefixed octal or 0x hex.
func parseIPv4(parts []string) (uint32, bool) {
	if len(parts) < 1 || len(parts) > 4 {
		return 0, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return 0, false
		}
		if i < len(parts)-1 {
			if n > 0xff {
				return 0, false
			}
			v = v<<8 | n
			continue
		}
		bits := uint(8 * (4 - i))
		if n >= 1<<bits {
			return 0, false
		}
		v = v<<bits | n
	}
	return uint32(v), true
}

func parseIPv4Part(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		p, base = p[2:], 16
		if p == "" {
			return 0, true // "0x" is 0 for inet_aton and WHATWG alike
		}
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
