package verify_test

import (
	"errors"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// FuzzNormalize: the address parsers never panic, refuse only with an
// input error naming their field, and what they accept is a fixed point.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"13800138000", "+86 138-0013-8000", "ann@Example.COM", `"a b"@x.com`, "+", "0", "a@b", "\x00@x.com", "١٣٨"} {
		f.Add(s, "CN")
	}
	f.Add("2015550123", "us")
	f.Fuzz(func(t *testing.T, s, country string) {
		m, err := verify.NormalizeMobile(s, country)
		var ie *deskkit.InputError
		if err != nil {
			if !errors.As(err, &ie) || (ie.Field != "mobile" && ie.Field != "country") {
				t.Fatalf("NormalizeMobile(%q, %q): %v", s, country, err)
			}
		} else {
			again, err := verify.NormalizeMobile(m.E164, m.Country)
			if err != nil || again != m {
				t.Fatalf("NormalizeMobile(%q, %q) = %+v, but its E.164 gives %+v, %v", s, country, m, again, err)
			}
		}
		e, err := verify.NormalizeEmail("email", s)
		if err != nil {
			if !errors.As(err, &ie) || ie.Field != "email" {
				t.Fatalf("NormalizeEmail(%q): %v", s, err)
			}
			return
		}
		if again, err := verify.NormalizeEmail("email", e); err != nil || again != e {
			t.Fatalf("NormalizeEmail(%q) = %q, but again gives %q, %v", s, e, again, err)
		}
	})
}
