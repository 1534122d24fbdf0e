package channel

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deskkit/deskkit"
)

// FuzzNormalizeAddress: the address validators never panic, refuse only
// with an input error naming address or with ErrAddressBlocked, and what
// they accept is bounded and a fixed point: normalising it again gives it
// back unchanged, so what is stored is what a replace with the listed
// address stores again.
func FuzzNormalizeAddress(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hook", "http://127.1:8080/", "http://[::ffff:127.0.0.1]/", "http://0x7f000001/",
		"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k", "https://oapi.dingtalk.com/robot/send?access_token=t",
		"https://u:p@example.com/", "https://example.com/#x", "https://[fe80::1%25eth0]/", "https://exa%C3%A4mple.com/",
		"ann@example.com, Bob@Example.ORG ,ann@example.com", "a@x.io,,b@x.io", `"a,b"@x.io`, "Ann <ann@x.io>",
		"http://localhost./", "HTTP://EXAMPLE.COM:65535/", "https://example.com:99999/", "\u00a0https://example.com/\u2028",
	} {
		for _, t := range Types() {
			f.Add(string(t), s)
		}
	}
	f.Fuzz(func(t *testing.T, typ, address string) {
		ty := Type(typ)
		if !slices.Contains(Types(), ty) {
			ty = Types()[len(typ)%len(Types())]
		}
		got, err := normalizeAddress(addrGuard, ty, address)
		if err != nil {
			var ie *deskkit.InputError
			if !errors.Is(err, ErrAddressBlocked) && !(errors.As(err, &ie) && ie.Field == "address") {
				t.Fatalf("%s %q: unexpected error %v", ty, address, err)
			}
			if got != "" {
				t.Fatalf("%s %q: refused with %v but returned %q", ty, address, err, got)
			}
			return
		}
		if got == "" || len(got) > MaxAddressBytes || len(got) > len(address) || strings.ContainsAny(got, " \t\r\n") {
			t.Fatalf("%s %q: accepted as %q: empty, too long, longer than the input or with blanks", ty, address, got)
		}
		if ty == Email && strings.Count(got, ",") >= MaxEmailAddrs {
			t.Fatalf("%s %q: accepted as %q: more than %d addresses", ty, address, got, MaxEmailAddrs)
		}
		again, err := normalizeAddress(addrGuard, ty, got)
		if err != nil || again != got {
			t.Fatalf("%s %q: accepted as %q, but that gives %q, %v", ty, address, got, again, err)
		}
	})
}
