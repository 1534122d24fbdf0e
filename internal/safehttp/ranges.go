package safehttp

import (
	"net/netip"

	"code.dny.dev/ssrf"

	"github.com/deskkit/deskkit"
)

// namedPrefix is a range and what it is, for the refusal's Reason.
type namedPrefix struct {
	Prefix netip.Prefix
	Name   deskkit.Text // a message, so that a refusal names it in the reader's language
}

// metadataPrefixes are the cloud metadata endpoints (and similar host
// services): reaching one from a server hands out the machine's
// credentials, so they stay blocked even with AllowPrivateNetworks. Those inside 169.254.0.0/16 are blocked as
// link-local anyway; they are listed so that the refusal names them.
// 168.63.129.16 is a public address that ssrf lets through, and
// 100.100.100.200 and fd00:ec2::/128s sit in ranges that the private
// allowance opens.
var metadataPrefixes = []namedPrefix{
	{netip.MustParsePrefix("169.254.169.254/32"), deskkit.Textf("AWS, GCP, Azure, OCI, DigitalOcean, OpenStack instance metadata")},
	{netip.MustParsePrefix("169.254.169.253/32"), deskkit.Textf("AWS VPC DNS")},
	{netip.MustParsePrefix("169.254.169.123/32"), deskkit.Textf("AWS time sync")},
	{netip.MustParsePrefix("169.254.170.2/32"), deskkit.Textf("AWS ECS task metadata")},
	{netip.MustParsePrefix("169.254.170.23/32"), deskkit.Textf("AWS EKS pod identity")},
	{netip.MustParsePrefix("169.254.0.23/32"), deskkit.Textf("Tencent Cloud metadata")},
	{netip.MustParsePrefix("168.63.129.16/32"), deskkit.Textf("Azure WireServer")},
	{netip.MustParsePrefix("100.100.100.200/32"), deskkit.Textf("Alibaba Cloud metadata")},
	{netip.MustParsePrefix("192.0.0.192/32"), deskkit.Textf("Oracle Cloud metadata")},
	{netip.MustParsePrefix("fd00:ec2::254/128"), deskkit.Textf("AWS instance metadata (IPv6)")},
	{netip.MustParsePrefix("fd00:ec2::253/128"), deskkit.Textf("AWS VPC DNS (IPv6)")},
	{netip.MustParsePrefix("fd00:ec2::123/128"), deskkit.Textf("AWS time sync (IPv6)")},
	{netip.MustParsePrefix("fd00:ec2::23/128"), deskkit.Textf("AWS EKS pod identity (IPv6)")},
}

// privatePrefixes are the ranges that Config.AllowPrivateNetworks opens:
// where a developer's or a test's webhook receiver runs. Link-local is not
// among them: it is where metadata services live.
var privatePrefixes = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback
	netip.MustParsePrefix("10.0.0.0/8"),     // RFC 1918
	netip.MustParsePrefix("172.16.0.0/12"),  // RFC 1918
	netip.MustParsePrefix("192.168.0.0/16"), // RFC 1918
	netip.MustParsePrefix("100.64.0.0/10"),  // CGNAT, RFC 6598 (Tailscale and the like)
	netip.MustParsePrefix("::1/128"),        // loopback
	netip.MustParsePrefix("fc00::/7"),       // unique local, RFC 4193
}

var (
	linkLocal4 = netip.MustParsePrefix("169.254.0.0/16")
	linkLocal6 = netip.MustParsePrefix("fe80::/10")
)

func metadataName(ip netip.Addr) (deskkit.Text, bool) {
	for _, m := range metadataPrefixes {
		if m.Prefix.Contains(ip) {
			return m.Name, true
		}
	}
	return deskkit.Text{}, false
}

// names say in words what ssrf's prefixes are, for the refusal's Reason.
var names = map[netip.Prefix]deskkit.Text{
	netip.MustParsePrefix("0.0.0.0/8"):         deskkit.Textf("\"this network\""),
	netip.MustParsePrefix("10.0.0.0/8"):        deskkit.Textf("private network"),
	netip.MustParsePrefix("100.64.0.0/10"):     deskkit.Textf("shared address space (CGNAT)"),
	netip.MustParsePrefix("127.0.0.0/8"):       deskkit.Textf("loopback"),
	netip.MustParsePrefix("169.254.0.0/16"):    deskkit.Textf("link-local"),
	netip.MustParsePrefix("172.16.0.0/12"):     deskkit.Textf("private network"),
	netip.MustParsePrefix("192.0.0.0/24"):      deskkit.Textf("IETF protocol assignments"),
	netip.MustParsePrefix("192.0.2.0/24"):      deskkit.Textf("documentation"),
	netip.MustParsePrefix("192.31.196.0/24"):   deskkit.Textf("AS112"),
	netip.MustParsePrefix("192.52.193.0/24"):   deskkit.Textf("AMT"),
	netip.MustParsePrefix("192.88.99.0/24"):    deskkit.Textf("6to4 relay anycast"),
	netip.MustParsePrefix("192.168.0.0/16"):    deskkit.Textf("private network"),
	netip.MustParsePrefix("192.175.48.0/24"):   deskkit.Textf("AS112"),
	netip.MustParsePrefix("198.18.0.0/15"):     deskkit.Textf("benchmarking"),
	netip.MustParsePrefix("198.51.100.0/24"):   deskkit.Textf("documentation"),
	netip.MustParsePrefix("203.0.113.0/24"):    deskkit.Textf("documentation"),
	netip.MustParsePrefix("240.0.0.0/4"):       deskkit.Textf("reserved"),
	netip.MustParsePrefix("224.0.0.0/4"):       deskkit.Textf("multicast"),
	netip.MustParsePrefix("2001::/23"):         deskkit.Textf("IETF protocol assignments (Teredo and others)"),
	netip.MustParsePrefix("2001:db8::/32"):     deskkit.Textf("documentation"),
	netip.MustParsePrefix("2002::/16"):         deskkit.Textf("6to4"),
	netip.MustParsePrefix("2620:4f:8000::/48"): deskkit.Textf("AS112"),
	netip.MustParsePrefix("3fff::/20"):         deskkit.Textf("documentation"),
}

// outside6 names the usual IPv6 ranges outside global unicast; the first
// match wins, so the narrower come first.
var outside6 = []namedPrefix{
	{netip.MustParsePrefix("::/128"), deskkit.Textf("unspecified")},
	{netip.MustParsePrefix("::1/128"), deskkit.Textf("loopback")},
	{netip.MustParsePrefix("64:ff9b::/96"), deskkit.Textf("NAT64")},
	{netip.MustParsePrefix("64:ff9b:1::/48"), deskkit.Textf("local-use NAT64")},
	{netip.MustParsePrefix("::/96"), deskkit.Textf("IPv4-compatible")},
	{netip.MustParsePrefix("100::/64"), deskkit.Textf("discard-only")},
	{netip.MustParsePrefix("fc00::/7"), deskkit.Textf("unique local")},
	{netip.MustParsePrefix("fe80::/10"), deskkit.Textf("link-local")},
	{netip.MustParsePrefix("fec0::/10"), deskkit.Textf("site-local")},
	{netip.MustParsePrefix("ff00::/8"), deskkit.Textf("multicast")},
}

// reason says why ssrf refused ip (already unmapped): the range's name in
// words, then the range, as a message.
func reason(ip netip.Addr) deskkit.Text {
	if ip.Is4() {
		for _, p := range ssrf.IPv4DeniedPrefixes {
			if p.Contains(ip) {
				return describe(p)
			}
		}
		return deskkit.Textf("special-purpose address")
	}
	if !ssrf.IPv6GlobalUnicast.Contains(ip) {
		for _, m := range outside6 {
			if m.Prefix.Contains(ip) {
				return deskkit.Textf("%s %s", m.Name, m.Prefix.String())
			}
		}
		return deskkit.Textf("outside IPv6 global unicast %s", ssrf.IPv6GlobalUnicast.String())
	}
	for _, p := range ssrf.IPv6DeniedPrefixes {
		if p.Contains(ip) {
			return describe(p)
		}
	}
	return deskkit.Textf("special-purpose address")
}

func describe(p netip.Prefix) deskkit.Text {
	if n, ok := names[p]; ok {
		return deskkit.Textf("%s %s", n, p.String())
	}
	return deskkit.Textf("special-purpose range %s", p.String())
}
