package safehttp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"code.dny.dev/ssrf"

	"github.com/deskkit/deskkit"
)

// The test's own copies of the ranges, written out rather than taken from
// the package, so that a change to the package's lists shows up here.
var (
	testPrivate = prefixes(
		"127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
		"100.64.0.0/10", "::1/128", "fc00::/7",
	)
	testMetadata = prefixes(
		"169.254.169.254/32", "169.254.169.253/32", "169.254.169.123/32",
		"169.254.170.2/32", "169.254.170.23/32", "169.254.0.23/32",
		"168.63.129.16/32", "100.100.100.200/32", "192.0.0.192/32",
		"fd00:ec2::254/128", "fd00:ec2::253/128", "fd00:ec2::123/128", "fd00:ec2::23/128",
	)
	// Everything outside 2000::/3, as the three prefixes that cover it,
	// plus the well-known ranges there.
	testOutsideGlobal6 = prefixes(
		"::/3", "4000::/2", "8000::/1",
		"::/128", "::1/128", "::/96", "64:ff9b::/96", "64:ff9b:1::/48",
		"100::/64", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
		"fd00:ec2::/32",
	)
	testLinkLocal = prefixes("169.254.0.0/16", "fe80::/10")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// firstMiddleLast returns the first address of p, the one halfway through
// and the last.
func firstMiddleLast(p netip.Prefix) []netip.Addr {
	first := p.Masked().Addr()
	b := first.As16()
	if first.Is4() {
		b4 := first.As4()
		copy(b[12:], b4[:])
	}
	off := 0
	if first.Is4() {
		off = 96
	}
	bits := off + p.Bits()
	set := func(b [16]byte, from int) [16]byte {
		for i := from; i < 128; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		return b
	}
	last := set(b, bits)
	mid := b
	if bits < 128 {
		mid[bits/8] |= 0x80 >> (bits % 8)
	}
	conv := func(b [16]byte) netip.Addr {
		a := netip.AddrFrom16(b)
		if first.Is4() {
			return a.Unmap()
		}
		return a
	}
	return []netip.Addr{first, conv(mid), conv(last)}
}

func TestFirstMiddleLast(t *testing.T) {
	got := firstMiddleLast(netip.MustParsePrefix("10.0.0.0/8"))
	want := []string{"10.0.0.0", "10.128.0.0", "10.255.255.255"}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("10.0.0.0/8 [%d] = %s, want %s", i, got[i], want[i])
		}
	}
	got = firstMiddleLast(netip.MustParsePrefix("fe80::/10"))
	want = []string{"fe80::", "fea0::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("fe80::/10 [%d] = %s, want %s", i, got[i], want[i])
		}
	}
}

// wantAllowed is the rule the package doc states, written independently.
func wantAllowed(a netip.Addr, allowPrivate bool) bool {
	a = a.Unmap()
	if inAny(testMetadata, a) || inAny(testLinkLocal, a) {
		return false
	}
	if allowPrivate && inAny(testPrivate, a) {
		return true
	}
	if a.Is4() {
		return !inAny(ssrf.IPv4DeniedPrefixes, a)
	}
	return ssrf.IPv6GlobalUnicast.Contains(a) && !inAny(ssrf.IPv6DeniedPrefixes, a)
}

// checkDecision asserts CheckAddr's answer for a, and that the IPv4-mapped
// spelling of an IPv4 address gets the same one.
func checkDecision(t *testing.T, c *Client, a netip.Addr, allowed bool) {
	t.Helper()
	spellings := []netip.Addr{a}
	if a.Is4() {
		spellings = append(spellings, netip.AddrFrom16(a.As16()))
	}
	for _, s := range spellings {
		err := c.CheckAddr(s)
		if allowed {
			if err != nil {
				t.Errorf("CheckAddr(%s) = %v, want allowed", s, err)
			}
			continue
		}
		var be *BlockedError
		if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckAddr(%s) = %v, want *BlockedError", s, err)
			continue
		}
		if be.Addr != s || be.Reason.IsZero() || !strings.Contains(err.Error(), s.String()) {
			t.Errorf("CheckAddr(%s): BlockedError %+v, text %q: want Addr, Reason and the address in the text", s, be, err)
		}
	}
}

func TestCheckAddrDeniedRanges(t *testing.T) {
	var all []netip.Prefix
	all = append(all, ssrf.IPv4DeniedPrefixes...)
	all = append(all, ssrf.IPv6DeniedPrefixes...)
	all = append(all, testOutsideGlobal6...)
	all = append(all, testMetadata...)
	all = append(all, testLinkLocal...)
	all = append(all, testPrivate...)
	if len(all) < 40 {
		t.Fatalf("only %d prefixes under test", len(all))
	}
	strict := New(Config{})
	loose := New(Config{AllowPrivateNetworks: true})
	for _, p := range all {
		for _, a := range firstMiddleLast(p) {
			// Without the allowance nothing in these ranges passes.
			checkDecision(t, strict, a, false)
			checkDecision(t, loose, a, wantAllowed(a, true))
		}
	}
}

func TestCheckAddrPrivateAllowance(t *testing.T) {
	loose := New(Config{AllowPrivateNetworks: true})
	for _, s := range []string{
		"127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "100.64.0.1", "100.127.255.255", "::1", "fc00::1", "fd12:3456::1",
		"::ffff:10.0.0.1", "fd00:ec2::1",
	} {
		checkDecision(t, loose, netip.MustParseAddr(s), true)
	}
	// Metadata, link-local and the rest of the special ranges stay shut.
	for _, s := range []string{
		"169.254.169.254", "169.254.170.2", "169.254.0.23", "168.63.129.16", "100.100.100.200",
		"192.0.0.192", "fd00:ec2::254", "fd00:ec2::23", "169.254.1.1", "fe80::1",
		"::ffff:169.254.169.254", "0.0.0.0", "::", "224.0.0.1", "255.255.255.255",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2001::1", "::127.0.0.1",
		"198.18.0.1", "192.0.2.1", "fec0::1", "ff02::1",
	} {
		checkDecision(t, loose, netip.MustParseAddr(s), false)
	}
}

func TestCheckAddrMetadataNamed(t *testing.T) {
	loose := New(Config{AllowPrivateNetworks: true})
	for _, p := range testMetadata {
		err := loose.CheckAddr(p.Addr())
		var be *BlockedError
		if !errors.As(err, &be) || !strings.Contains(be.Reason.String(), "metadata") && !strings.Contains(be.Reason.String(), "AWS") && !strings.Contains(be.Reason.String(), "Azure") {
			t.Errorf("CheckAddr(%s) = %v, want a refusal naming the metadata service", p.Addr(), err)
		}
	}
}

func TestCheckAddrPublic(t *testing.T) {
	// Decisions only: none of these is ever dialled.
	for _, allow := range []bool{false, true} {
		c := New(Config{AllowPrivateNetworks: allow})
		for _, s := range []string{
			"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0",
			"172.15.255.255", "172.32.0.0", "169.253.255.255", "169.255.0.0",
			"2606:4700::1111", "2001:4860:4860::8888", "2a00:1450::1", "::ffff:8.8.8.8",
			"2001:200::1", // just past 2001::/23
		} {
			checkDecision(t, c, netip.MustParseAddr(s), true)
		}
	}
}

func TestCheckAddrZoneAndInvalid(t *testing.T) {
	c := New(Config{AllowPrivateNetworks: true})
	if err := c.CheckAddr(netip.MustParseAddr("fe80::1%eth0")); !errors.Is(err, ErrBlocked) {
		t.Errorf("fe80::1%%eth0: %v, want blocked", err)
	}
	if err := c.CheckAddr(netip.MustParseAddr("::1%lo")); err != nil {
		t.Errorf("::1%%lo with private networks allowed: %v, want allowed (the zone does not change the address)", err)
	}
	if err := New(Config{}).CheckAddr(netip.MustParseAddr("::1%lo")); !errors.Is(err, ErrBlocked) {
		t.Errorf("::1%%lo: %v, want blocked", err)
	}
	if err := c.CheckAddr(netip.Addr{}); !errors.Is(err, ErrBlocked) {
		t.Errorf("zero Addr: %v, want blocked", err)
	}
}

func TestControl(t *testing.T) {
	strict := New(Config{})
	for _, tc := range []struct {
		network, address string
		ok               bool
	}{
		{"tcp4", "8.8.8.8:443", true},
		{"tcp6", "[2606:4700::1111]:8443", true},
		{"tcp4", "127.0.0.1:80", false},
		{"tcp6", "[::ffff:127.0.0.1]:80", false},
		{"tcp6", "[::1]:80", false},
		{"udp4", "8.8.8.8:53", false},
		{"tcp4", "not-an-address", false},
	} {
		err := strict.control(tc.network, tc.address, nil)
		if (err == nil) != tc.ok {
			t.Errorf("control(%s, %s) = %v, want ok=%v", tc.network, tc.address, err, tc.ok)
		}
	}
}

func TestBlockedErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    BlockedError
		want string
	}{
		{BlockedError{Host: "evil.test", Addr: netip.MustParseAddr("10.0.0.1"), Reason: deskkit.Plain("private network 10.0.0.0/8")},
			`safehttp: address blocked: host "evil.test" is 10.0.0.1 (private network 10.0.0.0/8)`},
		{BlockedError{Addr: netip.MustParseAddr("::1"), Reason: deskkit.Plain("loopback ::1/128")},
			`safehttp: address blocked: ::1 (loopback ::1/128)`},
		{BlockedError{Host: "1.2.3.4.5", Reason: deskkit.Plain("numeric host that is not a valid IPv4 address")},
			`safehttp: address blocked: host "1.2.3.4.5" (numeric host that is not a valid IPv4 address)`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(&tc.e, ErrBlocked) {
			t.Errorf("%q does not match ErrBlocked", tc.want)
		}
	}
}

// The client's message says which kind of network refused the address and,
// for loopback and private networks, the setting that opens them in
// development; metadata and link-local are never opened. It names no
// address.
func TestBlockedErrorClientMessage(t *testing.T) {
	strict := New(Config{})
	for _, tc := range []struct {
		host string
		want string // a part of the message
		hint bool   // AllowHint follows
	}{
		{"127.0.0.1", "address is loopback (this server itself)", true},
		{"localhost", "address is loopback (this server itself)", true},
		{"[::1]", "address is loopback", true},
		{"10.1.2.3", "address is in a private network (private network 10.0.0.0/8)", true},
		{"192.168.0.7", "address is in a private network (private network 192.168.0.0/16)", true},
		{"100.64.0.1", "address is in a private network (shared address space (CGNAT) 100.64.0.0/10)", true},
		{"[fd12::1]", "address is in a private network (unique local fc00::/7)", true},
		{"169.254.169.254", "address is a cloud metadata endpoint (AWS, GCP, Azure, OCI, DigitalOcean, OpenStack instance metadata), which channels may never reach", false},
		{"169.254.1.1", "address is link-local, where cloud metadata services live, which channels may never reach", false},
		{"[fe80::1]", "address is link-local", false},
		{"192.0.2.1", "address is special-purpose (documentation 192.0.2.0/24), which channels may not reach", false},
		{"1.2.3.4.5", "address is refused: ", false},
	} {
		err := strict.CheckHost(tc.host)
		var be *BlockedError
		if !errors.As(err, &be) {
			t.Errorf("CheckHost(%s) = %v, want a *BlockedError", tc.host, err)
			continue
		}
		msg := be.ClientMessage()
		if !strings.HasPrefix(msg, tc.want) || strings.HasSuffix(msg, AllowHint) != tc.hint {
			t.Errorf("%s: %q, want it to start %q (the allowance hint: %v)", tc.host, msg, tc.want, tc.hint)
		}
		if be.Addr.IsValid() && strings.Contains(msg, be.Addr.Unmap().String()) {
			t.Errorf("%s: %q names the address", tc.host, msg)
		}
	}
	if !strings.Contains(AllowHint, "AllowPrivateNetworks") || !strings.Contains(AllowHint, "-channel-allow-private-networks") {
		t.Errorf("AllowHint %q names neither setting", AllowHint)
	}
}
