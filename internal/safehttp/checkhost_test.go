package safehttp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckHost(t *testing.T) {
	const (
		allowed = iota
		blocked
		invalid // blocked as a numeric host that is no IPv4 address
	)
	for _, tc := range []struct {
		host   string
		strict int
		loose  int    // with AllowPrivateNetworks
		addr   string // the address the literal stands for; "" for names
	}{
		// 127.0.0.1 in every spelling inet_aton and WHATWG URL accept.
		{"127.0.0.1", blocked, allowed, "127.0.0.1"},
		{"127.1", blocked, allowed, "127.0.0.1"},
		{"127.0.1", blocked, allowed, "127.0.0.1"},
		{"2130706433", blocked, allowed, "127.0.0.1"},
		{"0x7f000001", blocked, allowed, "127.0.0.1"},
		{"0X7F000001", blocked, allowed, "127.0.0.1"},
		{"0x7f.0.0.1", blocked, allowed, "127.0.0.1"},
		{"0x7f.0x0.0x0.0x1", blocked, allowed, "127.0.0.1"},
		{"0177.0.0.1", blocked, allowed, "127.0.0.1"},
		{"0177.1", blocked, allowed, "127.0.0.1"},
		{"017700000001", blocked, allowed, "127.0.0.1"},
		{"00000000000000000000177.1", blocked, allowed, "127.0.0.1"},
		{"127.0.0.1.", blocked, allowed, "127.0.0.1"},
		{"[::ffff:127.0.0.1]", blocked, allowed, "::ffff:127.0.0.1"},
		{"::ffff:127.0.0.1", blocked, allowed, "::ffff:127.0.0.1"},
		{"[::ffff:7f00:1]", blocked, allowed, "::ffff:127.0.0.1"},
		{"[::1]", blocked, allowed, "::1"},
		{"[0:0:0:0:0:0:0:1]", blocked, allowed, "::1"},
		{"[::1%lo]", blocked, allowed, "::1%lo"},
		{"localhost", blocked, allowed, "127.0.0.1"},
		{"LocalHost", blocked, allowed, "127.0.0.1"},
		{"localhost.", blocked, allowed, "127.0.0.1"},
		{"api.localhost", blocked, allowed, "127.0.0.1"},
		// This network, private, CGNAT.
		{"0", blocked, blocked, "0.0.0.0"},
		{"0.0.0.0", blocked, blocked, "0.0.0.0"},
		{"0x", blocked, blocked, "0.0.0.0"},
		{"[::]", blocked, blocked, "::"},
		{"10.1", blocked, allowed, "10.0.0.1"},
		{"167772161", blocked, allowed, "10.0.0.1"},
		{"192.168.1", blocked, allowed, "192.168.0.1"},
		{"100.64.0.1", blocked, allowed, "100.64.0.1"},
		{"[fd12::1]", blocked, allowed, "fd12::1"},
		// Metadata and link-local: shut either way.
		{"169.254.169.254", blocked, blocked, "169.254.169.254"},
		{"2852039166", blocked, blocked, "169.254.169.254"},
		{"0xa9fea9fe", blocked, blocked, "169.254.169.254"},
		{"0251.0376.0251.0376", blocked, blocked, "169.254.169.254"},
		{"169.254.43518", blocked, blocked, "169.254.169.254"},
		{"[::ffff:a9fe:a9fe]", blocked, blocked, "::ffff:169.254.169.254"},
		{"[fd00:ec2::254]", blocked, blocked, "fd00:ec2::254"},
		{"100.100.100.200", blocked, blocked, "100.100.100.200"},
		{"168.63.129.16", blocked, blocked, "168.63.129.16"},
		{"[fe80::1%eth0]", blocked, blocked, "fe80::1%eth0"},
		// IPv6 forms that embed an IPv4 address.
		{"[64:ff9b::7f00:1]", blocked, blocked, "64:ff9b::7f00:1"},
		{"[2002:7f00:1::]", blocked, blocked, "2002:7f00:1::"},
		{"[::127.0.0.1]", blocked, blocked, "::7f00:1"},
		// Public literals.
		{"8.8.8.8", allowed, allowed, "8.8.8.8"},
		{"134744072", allowed, allowed, "8.8.8.8"},
		{"8.8.2056", allowed, allowed, "8.8.8.8"},
		{"[2606:4700::1111]", allowed, allowed, "2606:4700::1111"},
		// Numeric hosts that are no address: refused rather than handed to
		// resolvers that disagree on them.
		{"1.2.3.4.5", invalid, invalid, ""},
		{"256.0.0.1", invalid, invalid, ""},
		{"127.0.0.08", invalid, invalid, ""},
		{"0x100000000", invalid, invalid, ""},
		{"4294967296", invalid, invalid, ""},
		{"1.2.3.0x100", invalid, invalid, ""},
		{"1.2.65536", invalid, invalid, ""},
		{"127..1", invalid, invalid, ""},
		{"foo.123", invalid, invalid, ""},
		{"[::ffff:127.0.0.1:80]", invalid, invalid, ""},
		{"[1::2::3]", invalid, invalid, ""},
		// Names: decided at dial time.
		{"example.com", allowed, allowed, ""},
		{"evil.test", allowed, allowed, ""},
		{"1e100.net", allowed, allowed, ""},
		{"0x7f.example", allowed, allowed, ""},
		{"localhost.example.com", allowed, allowed, ""},
		{"mylocalhost", allowed, allowed, ""},
	} {
		for _, loose := range []bool{false, true} {
			want := tc.strict
			if loose {
				want = tc.loose
			}
			c := New(Config{AllowPrivateNetworks: loose})
			err := c.CheckHost(tc.host)
			if want == allowed {
				if err != nil {
					t.Errorf("CheckHost(%q) private=%v = %v, want allowed", tc.host, loose, err)
				}
				continue
			}
			var be *BlockedError
			if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) {
				t.Errorf("CheckHost(%q) private=%v = %v, want *BlockedError", tc.host, loose, err)
				continue
			}
			if be.Host != tc.host || !strings.Contains(err.Error(), tc.host) {
				t.Errorf("CheckHost(%q): Host %q, text %q: want the host as given", tc.host, be.Host, err)
			}
			if want == invalid && be.Addr.IsValid() {
				t.Errorf("CheckHost(%q): Addr %s, want none", tc.host, be.Addr)
			}
		}
		if tc.addr == "" || strings.HasPrefix(tc.host, "localhost") || strings.HasSuffix(tc.host, ".localhost") || strings.EqualFold(tc.host, "localhost") {
			continue
		}
		h := strings.TrimSuffix(strings.TrimPrefix(tc.host, "["), "]")
		got, ok, err := parseLiteral(h)
		if err != nil || !ok || got != netip.MustParseAddr(tc.addr) {
			t.Errorf("parseLiteral(%q) = %v, %v, %v; want %s", h, got, ok, err, tc.addr)
		}
		// The refusal names the address the literal stands for.
		if tc.strict == blocked {
			var be *BlockedError
			if errors.As(New(Config{}).CheckHost(tc.host), &be) && be.Addr != netip.MustParseAddr(tc.addr) {
				t.Errorf("CheckHost(%q): Addr %s, want %s", tc.host, be.Addr, tc.addr)
			}
		}
	}
}

// FuzzCheckHost checks that CheckHost never panics and that whatever it
// reads as a literal address gets exactly CheckAddr's decision, in every
// spelling of that address.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{
		"127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "[::ffff:127.0.0.1]", "[::1]",
		"[fe80::1%eth0]", "localhost", "a.localhost.", "example.com", "1.2.3.4.5", "0x", "8.8.8.8",
		"169.254.169.254", "[fd00:ec2::254]", "0xa9fea9fe", "[64:ff9b::7f00:1]", "", ".", "[", "]",
		"1.", "..1", "0x.0x.0x.0x", "[::ffff:0a00:0001]", "100.100.100.200",
	} {
		f.Add(s)
	}
	strict := New(Config{})
	loose := New(Config{AllowPrivateNetworks: true})
	f.Fuzz(func(t *testing.T, host string) {
		for _, c := range []*Client{strict, loose} {
			err := c.CheckHost(host)
			if err != nil && !errors.Is(err, ErrBlocked) {
				t.Fatalf("CheckHost(%q) = %v, not a refusal", host, err)
			}
			h := host
			if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
				h = h[1 : len(h)-1]
			}
			a, ok, perr := parseLiteral(h)
			if perr != nil && err == nil {
				t.Fatalf("CheckHost(%q) allowed a host parseLiteral refused: %v", host, perr)
			}
			if !ok {
				continue
			}
			if want := c.CheckAddr(a); (err == nil) != (want == nil) {
				t.Fatalf("CheckHost(%q) = %v but CheckAddr(%s) = %v", host, err, a, want)
			}
			// The canonical spelling of the same address agrees.
			canon := a.String()
			if a.Is6() {
				canon = "[" + canon + "]"
			}
			if again := c.CheckHost(canon); (again == nil) != (err == nil) {
				t.Fatalf("CheckHost(%q) = %v but CheckHost(%q) = %v", host, err, canon, again)
			}
			// Whatever netip reads as an address, parseLiteral reads the same.
			if std, serr := netip.ParseAddr(h); serr == nil && std != a {
				t.Fatalf("parseLiteral(%q) = %s, netip.ParseAddr = %s", h, a, std)
			}
		}
	})
}
