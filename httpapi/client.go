package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Client is who sent a request, as far as the server can tell:
// Server.Client and Proxies.Client answer it.
type Client struct {
	// Addr is the client's IP address: the connection's peer, or, when
	// the peer is a trusted proxy, the address its forwarding header gives
	// (see Proxies). IPv4 addresses are never written as IPv6 ones
	// (::ffff:192.0.2.7 is 192.0.2.7), and no address carries a zone.
	// Addr is not valid (the zero netip.Addr) when the connection's
	// address is no IP address, as on a Unix socket.
	Addr netip.Addr
	// HTTPS tells that the client's request came over TLS: to this server
	// (the request's TLS), or to a trusted proxy that says so.
	HTTPS bool
}

// Proxies are the reverse proxies whose forwarding headers a server
// believes: a load balancer or TLS-terminating proxy in front of it.
// ParseProxies builds them from Config.TrustedProxies; the zero Proxies
// trust no one.
//
// A request whose connection comes from an address Proxies do not list
// is its own client: its Forwarded, X-Forwarded-For and
// X-Forwarded-Proto headers are never read, so that a client cannot
// choose the address it is counted under. When the peer is trusted, the
// client is found in the forwarding header the proxies add to, walked
// from the right (the entry the nearest proxy wrote): past every entry
// that is a trusted proxy too, to the first that is not, which is the
// client; when every entry is trusted, the leftmost. An entry that is no
// address (RFC 7239's "unknown" or obfuscated names, garbage) stops the
// walk at the last trusted hop, which is then taken as the client, as is
// the peer itself when the header is missing or malformed.
//
// Both Forwarded (RFC 7239, its for= and proto= parameters) and
// X-Forwarded-For are read. A proxy adds to one of them; the other, if
// present, came from the client. So when both are present and name
// different clients, neither is believed and the peer (the proxy) is the
// client: a client that forges one header is counted under the proxy's
// address, never under an address of its choosing.
//
// HTTPS is true for a request over TLS, and for one from a trusted peer
// whose forwarding information says https: the proto= of the Forwarded
// entry of the client, or X-Forwarded-Proto (its entry at the client's
// position when it lists as many protocols as X-Forwarded-For lists
// addresses, otherwise its last).
type Proxies struct {
	prefixes []netip.Prefix
}

// ParseProxies reads a list of trusted proxies, as Config.TrustedProxies
// holds them: each an IP address (192.0.2.7, 2001:db8::1) or a CIDR
// prefix (10.0.0.0/8, 2001:db8::/32); an IPv4 prefix also matches the
// same addresses written as IPv4-mapped IPv6. Its error names the entry
// as TrustedProxies[i] and the rule it breaks.
func ParseProxies(list []string) (Proxies, error) {
	var p Proxies
	for i, s := range list {
		pre, err := parseProxy(strings.TrimSpace(s))
		if err != nil {
			return Proxies{}, fmt.Errorf("TrustedProxies[%d] %q must be an IP address (192.0.2.7, ::1) or a CIDR prefix (10.0.0.0/8, 2001:db8::/32)", i, s)
		}
		p.prefixes = append(p.prefixes, pre)
	}
	return p, nil
}

func parseProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		pre, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		a, bits := pre.Addr(), pre.Bits()
		if a.Is4In6() && bits >= 96 {
			a, bits = a.Unmap(), bits-96
		}
		return netip.PrefixFrom(a, bits).Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, errors.New("zone")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// trusts tells whether a is one of the proxies.
func (p Proxies) trusts(a netip.Addr) bool {
	for _, pre := range p.prefixes {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// Client is the client of r: see Proxies for the rules.
func (p Proxies) Client(r *http.Request) Client {
	c := Client{Addr: peerAddr(r.RemoteAddr), HTTPS: r.TLS != nil}
	if !c.Addr.IsValid() || !p.trusts(c.Addr) {
		return c
	}
	fwd, hasFwd := r.Header["Forwarded"]
	xff, hasXFF := r.Header["X-Forwarded-For"]
	var (
		fromFwd = hop{addr: c.Addr, index: -1}
		fromXFF = hop{addr: c.Addr, index: -1}
		elems   []forwardedElement
		hops    []string
	)
	if hasFwd {
		var ok bool
		if elems, ok = parseForwarded(fwd); ok {
			nodes := make([]string, len(elems))
			for i, e := range elems {
				nodes[i] = e.node
			}
			fromFwd = p.walk(nodes, c.Addr)
		}
	}
	if hasXFF {
		hops = splitList(xff)
		fromXFF = p.walk(hops, c.Addr)
	}
	var proto string
	switch {
	case hasFwd && hasXFF && fromFwd.addr != fromXFF.addr:
		return c // one of them is the client's: believe neither
	case hasFwd:
		c.Addr = fromFwd.addr
		if fromFwd.index >= 0 {
			proto = elems[fromFwd.index].proto
		}
		if proto == "" {
			proto = forwardedProto(r.Header["X-Forwarded-Proto"], fromXFF.index, len(hops))
		}
	case hasXFF:
		c.Addr = fromXFF.addr
		proto = forwardedProto(r.Header["X-Forwarded-Proto"], fromXFF.index, len(hops))
	default:
		proto = forwardedProto(r.Header["X-Forwarded-Proto"], -1, 0)
	}
	c.HTTPS = c.HTTPS || strings.EqualFold(proto, "https")
	return c
}

// hop is where a walk stopped: the client's address and the index of its
// entry in the header (-1: the peer itself).
type hop struct {
	addr  netip.Addr
	index int
}

// walk finds the client in a forwarding header's entries, the peer being
// trusted: from the right, past trusted addresses, to the first that is
// not; the leftmost when all are; the last trusted one before an entry
// that is no address.
func (p Proxies) walk(nodes []string, peer netip.Addr) hop {
	h := hop{addr: peer, index: -1}
	for i := len(nodes) - 1; i >= 0; i-- {
		a, ok := parseNode(nodes[i])
		if !ok {
			return h
		}
		h = hop{addr: a, index: i}
		if !p.trusts(a) {
			return h
		}
	}
	return h
}

// forwardedProto is the protocol X-Forwarded-Proto gives for the client
// whose X-Forwarded-For entry is at index of n entries (index -1: the
// peer, n 0: no X-Forwarded-For): the entry at index when the header
// lists n protocols, otherwise its last.
func forwardedProto(values []string, index, n int) string {
	protos := splitList(values)
	switch {
	case len(protos) == 0:
		return ""
	case index >= 0 && len(protos) == n:
		return protos[index]
	}
	return protos[len(protos)-1]
}

// peerAddr is the IP address of a RemoteAddr ("192.0.2.7:4711",
// "[2001:db8::1]:4711", or an address alone), unmapped and without zone;
// invalid for anything else.
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

// parseNode reads a forwarding header's address: an IP address, with a
// port or not, IPv6 in brackets or not (X-Forwarded-For writes it bare,
// Forwarded bracketed). Anything else ("unknown", "_hidden", a name) is
// not an address.
func parseNode(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok {
			if a, err := netip.ParseAddr(inner); err == nil && a.Is6() {
				return a.Unmap().WithZone(""), true
			}
		}
	}
	return netip.Addr{}, false
}

// splitList reads a comma-separated header, its field lines in order, as
// one list of trimmed entries; empty entries are dropped, as RFC 9110
// (section 5.6.1) asks of a recipient.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.Trim(e, " \t"); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// forwardedElement is one entry of a Forwarded header: the for= and
// proto= parameters deskkit reads, unquoted ("" when absent).
type forwardedElement struct {
	node, proto string
}

// parseForwarded reads the Forwarded header's field lines (RFC 7239,
// section 4) as one list of elements. It is strict: a parameter that is
// neither a token nor a quoted-string, a name without "=", a parameter
// given twice in an element, or bytes after a value other than ";" or ","
// make the header malformed (ok false), and none of it is believed.
func parseForwarded(values []string) ([]forwardedElement, bool) {
	var elems []forwardedElement
	for _, v := range values {
		var (
			cur  forwardedElement
			seen uint8 // for, proto, by, host: each at most once
			has  bool  // cur holds a parameter
		)
		i := 0
		for {
			i = skipOWS(v, i)
			if i == len(v) {
				break
			}
			switch v[i] {
			case ',':
				if has {
					elems = append(elems, cur)
				}
				cur, seen, has = forwardedElement{}, 0, false
				i++
				continue
			case ';':
				i++
				continue
			}
			j := i
			for j < len(v) && isTokenChar(v[j]) {
				j++
			}
			if j == i || j == len(v) || v[j] != '=' {
				return nil, false
			}
			name := strings.ToLower(v[i:j])
			var val string
			if i = j + 1; i < len(v) && v[i] == '"' {
				var ok bool
				if val, i, ok = quotedString(v, i); !ok {
					return nil, false
				}
			} else {
				j = i
				for j < len(v) && isTokenChar(v[j]) {
					j++
				}
				if j == i {
					return nil, false
				}
				val, i = v[i:j], j
			}
			var bit uint8
			switch name {
			case "for":
				bit, cur.node = 1, val
			case "proto":
				bit, cur.proto = 2, val
			case "by":
				bit = 4
			case "host":
				bit = 8
			}
			if seen&bit != 0 {
				return nil, false
			}
			seen |= bit
			has = true
			if i = skipOWS(v, i); i < len(v) && v[i] != ',' && v[i] != ';' {
				return nil, false
			}
		}
		if has {
			elems = append(elems, cur)
		}
	}
	return elems, true
}

// quotedString reads the quoted-string that starts at v[i] (a '"'): its
// value with quoted-pairs undone, and the index after its closing quote.
func quotedString(v string, i int) (string, int, bool) {
	var b strings.Builder
	for i++; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			return b.String(), i + 1, true
		case c == '\\':
			if i++; i == len(v) || !isQuotedPairChar(v[i]) {
				return "", 0, false
			}
			b.WriteByte(v[i])
		case c == '\t' || c == ' ' || c == 0x21 || 0x23 <= c && c <= 0x5B || 0x5D <= c && c <= 0x7E || c >= 0x80:
			b.WriteByte(c)
		default:
			return "", 0, false
		}
	}
	return "", 0, false
}

// isQuotedPairChar is what may follow a backslash: HTAB, SP, VCHAR or
// obs-text (RFC 9110, section 5.6.4).
func isQuotedPairChar(c byte) bool {
	return c == '\t' || c == ' ' || 0x21 <= c && c <= 0x7E || c >= 0x80
}

// isTokenChar is RFC 9110's tchar.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func skipOWS(v string, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}
