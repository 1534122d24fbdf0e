package httpapi

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustProxies(t testing.TB, list ...string) Proxies {
	t.Helper()
	p, err := ParseProxies(list)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseProxies(t *testing.T) {
	p := mustProxies(t, "10.0.0.0/8", "192.0.2.7", " ::1 ", "2001:db8::/32", "::ffff:172.16.0.0/112", "10.1.2.3/16")
	for addr, want := range map[string]bool{
		"10.200.0.1": true, "192.0.2.7": true, "192.0.2.8": false, "::1": true, "2001:db8:1::5": true,
		"172.16.9.9": true, "172.17.0.1": false, "11.0.0.1": false, "2001:db9::1": false,
	} {
		if got := p.trusts(netip.MustParseAddr(addr)); got != want {
			t.Errorf("trusts(%s) = %v, want %v", addr, got, want)
		}
	}
	for _, tc := range []struct {
		list  []string
		entry string
	}{
		{[]string{"10.0.0.0/8", "proxy.internal"}, `TrustedProxies[1] "proxy.internal"`},
		{[]string{"10.0.0.0/33"}, `TrustedProxies[0] "10.0.0.0/33"`},
		{[]string{"fe80::1%eth0"}, `TrustedProxies[0]`},
		{[]string{""}, `TrustedProxies[0] ""`},
		{[]string{"10.0.0.1:80"}, `TrustedProxies[0]`},
	} {
		_, err := ParseProxies(tc.list)
		if err == nil || !strings.HasPrefix(err.Error(), tc.entry) || !strings.Contains(err.Error(), "CIDR prefix") {
			t.Errorf("ParseProxies(%q): %v, want an error naming %s", tc.list, err, tc.entry)
		}
	}
	if _, err := New(&Config{Authenticator: tokens{}, TrustedProxies: []string{"nope"}}); err == nil ||
		!strings.Contains(err.Error(), "httpapi: Config.TrustedProxies[0]") {
		t.Errorf("New with a bad TrustedProxies: %v", err)
	}
}

func TestProxiesClient(t *testing.T) {
	p := mustProxies(t, "10.0.0.0/8", "2001:db8:ffff::/48")
	tests := []struct {
		name   string
		remote string
		tls    bool
		header map[string][]string
		want   Client
	}{
		{"no proxy", "192.0.2.1:4711", false, nil, Client{Addr: netip.MustParseAddr("192.0.2.1")}},
		{"tls", "192.0.2.1:4711", true, nil, Client{Addr: netip.MustParseAddr("192.0.2.1"), HTTPS: true}},
		{"mapped peer", "[::ffff:192.0.2.1]:4711", false, nil, Client{Addr: netip.MustParseAddr("192.0.2.1")}},
		{"unix socket", "@", false, map[string][]string{"X-Forwarded-For": {"192.0.2.9"}}, Client{}},
		{"untrusted peer's headers ignored", "192.0.2.1:4711", false, map[string][]string{
			"X-Forwarded-For": {"198.51.100.1"}, "Forwarded": {"for=198.51.100.2;proto=https"}, "X-Forwarded-Proto": {"https"},
		}, Client{Addr: netip.MustParseAddr("192.0.2.1")}},
		{"trusted peer, no header", "10.0.0.5:1", false, nil, Client{Addr: netip.MustParseAddr("10.0.0.5")}},
		{"trusted peer, proto only", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-Proto": {"HTTPS"}},
			Client{Addr: netip.MustParseAddr("10.0.0.5"), HTTPS: true}},
		{"xff one hop", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {"198.51.100.1"}, "X-Forwarded-Proto": {"https"}},
			Client{Addr: netip.MustParseAddr("198.51.100.1"), HTTPS: true}},
		{"xff client's own entries not read", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {"1.2.3.4, 198.51.100.1"}},
			Client{Addr: netip.MustParseAddr("198.51.100.1")}},
		{"xff past trusted hops", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {"1.2.3.4, 198.51.100.1, 10.9.9.9", "10.1.1.1"}},
			Client{Addr: netip.MustParseAddr("198.51.100.1")}},
		{"xff all trusted", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {"10.3.3.3, 10.2.2.2"}},
			Client{Addr: netip.MustParseAddr("10.3.3.3")}},
		{"xff garbage stops at the last trusted hop", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {"198.51.100.1, unknown, 10.2.2.2"}},
			Client{Addr: netip.MustParseAddr("10.2.2.2")}},
		{"xff with ports and brackets", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {"[2001:db8::1]:443, 10.2.2.2:80"}},
			Client{Addr: netip.MustParseAddr("2001:db8::1")}},
		{"xff empty entries", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {" , 198.51.100.1 ,,"}},
			Client{Addr: netip.MustParseAddr("198.51.100.1")}},
		{"xff empty", "10.0.0.5:1", false, map[string][]string{"X-Forwarded-For": {""}},
			Client{Addr: netip.MustParseAddr("10.0.0.5")}},
		{"xfp at the client's position", "10.0.0.5:1", false, map[string][]string{
			"X-Forwarded-For": {"198.51.100.1, 10.2.2.2"}, "X-Forwarded-Proto": {"https, http"},
		}, Client{Addr: netip.MustParseAddr("198.51.100.1"), HTTPS: true}},
		{"xfp last when counts differ", "10.0.0.5:1", false, map[string][]string{
			"X-Forwarded-For": {"198.51.100.1, 10.2.2.2"}, "X-Forwarded-Proto": {"https, https, http"},
		}, Client{Addr: netip.MustParseAddr("198.51.100.1")}},
		{"forwarded", "[2001:db8:ffff::1]:1", false, map[string][]string{"Forwarded": {`for="[2001:db8::7]:4711";proto=https, for=10.2.2.2;proto=http`}},
			Client{Addr: netip.MustParseAddr("2001:db8::7"), HTTPS: true}},
		{"forwarded case and spaces", "10.0.0.5:1", false, map[string][]string{"Forwarded": {`For=198.51.100.1 ; Proto="https"`}},
			Client{Addr: netip.MustParseAddr("198.51.100.1"), HTTPS: true}},
		{"forwarded two lines", "10.0.0.5:1", false, map[string][]string{"Forwarded": {"for=1.2.3.4", "for=198.51.100.1"}},
			Client{Addr: netip.MustParseAddr("198.51.100.1")}},
		{"forwarded obfuscated", "10.0.0.5:1", false, map[string][]string{"Forwarded": {"for=_hidden, for=10.2.2.2"}},
			Client{Addr: netip.MustParseAddr("10.2.2.2")}},
		{"forwarded proto falls back to xfp", "10.0.0.5:1", false, map[string][]string{"Forwarded": {"for=198.51.100.1"}, "X-Forwarded-Proto": {"https"}},
			Client{Addr: netip.MustParseAddr("198.51.100.1"), HTTPS: true}},
		{"forwarded malformed", "10.0.0.5:1", false, map[string][]string{"Forwarded": {`for="198.51.100.1;proto=https`}},
			Client{Addr: netip.MustParseAddr("10.0.0.5")}},
		{"forwarded port unquoted is malformed", "10.0.0.5:1", false, map[string][]string{"Forwarded": {`for=198.51.100.1:80`}},
			Client{Addr: netip.MustParseAddr("10.0.0.5")}},
		{"forwarded duplicate for", "10.0.0.5:1", false, map[string][]string{"Forwarded": {`for=198.51.100.1;for=198.51.100.2`}},
			Client{Addr: netip.MustParseAddr("10.0.0.5")}},
		{"both agree", "10.0.0.5:1", false, map[string][]string{"Forwarded": {"for=198.51.100.1"}, "X-Forwarded-For": {"198.51.100.1"}},
			Client{Addr: netip.MustParseAddr("198.51.100.1")}},
		{"both disagree: the peer", "10.0.0.5:1", false, map[string][]string{
			"Forwarded": {"for=192.0.2.200;proto=https"}, "X-Forwarded-For": {"198.51.100.1"},
		}, Client{Addr: netip.MustParseAddr("10.0.0.5")}},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		for k, v := range tc.header {
			r.Header[k] = v
		}
		if diff := cmp.Diff(tc.want, p.Client(r), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// FuzzProxiesClient sends arbitrary forwarding headers from a trusted and
// from an untrusted peer: no panic; an untrusted peer is always its own
// client; a trusted peer's client is a valid address, unmapped and
// without zone, which is the peer or one of the header's.
func FuzzProxiesClient(f *testing.F) {
	for _, seed := range [][3]string{
		{`for=192.0.2.60;proto=http;by=203.0.113.43`, "", ""},
		{`for="[2001:db8:cafe::17]:4711", for=10.0.0.9`, "", "https"},
		{`for="_gazonk"`, "198.51.100.1", "https, http"},
		{`For="[2001:db8:cafe::17]:4711";PROTO=https`, "10.0.0.1, 198.51.100.1", ""},
		{`for=unknown;proto="ht\"tp"`, "", ""},
		{`for="\`, "unknown, [::1]:8, ::ffff:10.0.0.1", ""},
		{`;;,;for=10.0.0.1,,`, " , ,", "https,"},
		{"for=\"\x80\"", "1.2.3.4%eth0", ""},
		{"", "", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], true)
		f.Add(seed[0], seed[1], seed[2], false)
	}
	p := mustProxies(f, "10.0.0.0/8", "::1")
	f.Fuzz(func(t *testing.T, fwd, xff, xfp string, trusted bool) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		peer := "192.0.2.1"
		if trusted {
			peer = "10.0.0.5"
		}
		r.RemoteAddr = peer + ":4711"
		for k, v := range map[string]string{"Forwarded": fwd, "X-Forwarded-For": xff, "X-Forwarded-Proto": xfp} {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		c := p.Client(r)
		if !trusted {
			if c != (Client{Addr: netip.MustParseAddr(peer)}) {
				t.Fatalf("an untrusted peer's client: %+v", c)
			}
			return
		}
		if !c.Addr.IsValid() || c.Addr.Is4In6() || c.Addr.Zone() != "" {
			t.Fatalf("client %+v", c)
		}
		if c.Addr.String() != peer && !headerHolds(fwd+" "+xff, c.Addr) {
			t.Fatalf("client %s is neither the peer nor in the headers %q %q", c.Addr, fwd, xff)
		}
		if c != p.Client(r) {
			t.Fatal("two answers for one request")
		}
	})
}

// headerHolds tells whether a, or its IPv4-mapped form, is spelled in h
// (quoted-pairs aside, which only Forwarded's quoted strings have).
func headerHolds(h string, a netip.Addr) bool {
	h = strings.ToLower(strings.ReplaceAll(h, `\`, ""))
	for _, s := range []string{a.String(), netip.AddrFrom16(a.As16()).String()} {
		if strings.Contains(h, strings.ToLower(s)) {
			return true
		}
	}
	// Another spelling of the same address (leading zeros are refused by
	// netip, so only IPv6's long forms): parse every field of h.
	for f := range strings.FieldsFuncSeq(h, func(r rune) bool { return strings.ContainsRune(` ,;="[]`, r) }) {
		if n, ok := parseNode(f); ok && n == a {
			return true
		}
		if i := strings.LastIndexByte(f, ':'); i > 0 {
			if n, ok := parseNode(f[:i]); ok && n == a {
				return true
			}
		}
	}
	return false
}

// FuzzParseForwarded checks the parser of Forwarded against itself:
// whatever it accepts, written back as a header, parses to the same
// elements.
func FuzzParseForwarded(f *testing.F) {
	for _, s := range []string{
		`for=192.0.2.60;proto=http;by=203.0.113.43`,
		`for="[2001:db8:cafe::17]:4711", for=unknown`,
		`for="a\"b";host=x, ;proto=https,`,
		`for="\`, `for`, `=x`, `for=;`, `for="x" y`, "for=\"\x7f\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		elems, ok := parseForwarded([]string{v})
		if !ok {
			return
		}
		var parts []string
		for _, e := range elems {
			var pairs []string
			if e.node != "" {
				pairs = append(pairs, "for="+quote(e.node))
			}
			if e.proto != "" {
				pairs = append(pairs, "proto="+quote(e.proto))
			}
			if len(pairs) == 0 {
				pairs = append(pairs, "by=x") // an element of parameters deskkit does not read
			}
			parts = append(parts, strings.Join(pairs, ";"))
		}
		again, ok := parseForwarded([]string{strings.Join(parts, ", ")})
		if !ok {
			t.Fatalf("%q parsed to %q, which does not parse", v, strings.Join(parts, ", "))
		}
		if diff := cmp.Diff(elems, again, cmp.AllowUnexported(forwardedElement{})); diff != "" {
			t.Fatalf("%q: written back and parsed again (-first +again):\n%s", v, diff)
		}
	})
}

// quote writes s as a quoted-string, escaping '"' and '\'.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
