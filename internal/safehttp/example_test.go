package safehttp_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/deskkit/deskkit/internal/safehttp"
)

// CheckHost refuses literal addresses in any spelling when a URL is saved;
// names wait for the dial-time check.
func ExampleClient_CheckHost() {
	c := safehttp.New(safehttp.Config{})
	for _, host := range []string{"127.1", "0xa9fea9fe", "[::ffff:10.0.0.1]", "1.2.3.4.5", "hooks.example.com", "8.8.8.8"} {
		err := c.CheckHost(host)
		var blocked *safehttp.BlockedError
		if errors.As(err, &blocked) {
			fmt.Printf("%s: blocked (%s)\n", host, blocked.Reason)
			continue
		}
		fmt.Printf("%s: ok\n", host)
	}
	// Output:
	// 127.1: blocked (loopback 127.0.0.0/8)
	// 0xa9fea9fe: blocked (cloud metadata endpoint: AWS, GCP, Azure, OCI, DigitalOcean, OpenStack instance metadata)
	// [::ffff:10.0.0.1]: blocked (private network 10.0.0.0/8)
	// 1.2.3.4.5: blocked (numeric host that is not a valid IPv4 address)
	// hooks.example.com: ok
	// 8.8.8.8: ok
}

// With AllowPrivateNetworks a development webhook on loopback or the LAN is
// reachable, but metadata endpoints are not.
func ExampleConfig_allowPrivateNetworks() {
	c := safehttp.New(safehttp.Config{AllowPrivateNetworks: true})
	for _, s := range []string{"127.0.0.1", "192.168.1.20", "169.254.169.254", "100.100.100.200"} {
		fmt.Println(s, c.CheckAddr(netip.MustParseAddr(s)) == nil)
	}
	// Output:
	// 127.0.0.1 true
	// 192.168.1.20 true
	// 169.254.169.254 false
	// 100.100.100.200 false
}
