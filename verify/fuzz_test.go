package verify_test

import (
	"errors"
	"fmt"
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
		// The second time the answer comes from the cache of parsed
		// numbers: it must be the same answer.
		if m2, err2 := verify.NormalizeMobile(s, country); m2 != m || fmt.Sprint(err2) != fmt.Sprint(err) {
			t.Fatalf("NormalizeMobile(%q, %q) = %+v, %v, then %+v, %v", s, country, m, err, m2, err2)
		}
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

// TestNormalizeMobileRepeatedIsCheap: a number normalized again (its send,
// its check, its change) is not parsed again. phonenumbers allocates
// dozens of times per parse, running its regular expressions.
func TestNormalizeMobileRepeatedIsCheap(t *testing.T) {
	want, err := verify.NormalizeMobile("138 0013 8000", "CN")
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if m, err := verify.NormalizeMobile("138 0013 8000", "CN"); err != nil || m != want {
			t.Fatalf("again: %+v, %v", m, err)
		}
	})
	if allocs > 0 {
		t.Errorf("normalizing a number seen before took %.0f allocations, want none", allocs)
	}
	// Refusals are remembered too, and still name the field.
	_, err = verify.NormalizeMobile("12", "CN")
	var ie *deskkit.InputError
	if !errors.As(err, &ie) || ie.Field != "mobile" {
		t.Fatalf("12 in CN: %v", err)
	}
}

func BenchmarkNormalizeMobile(b *testing.B) {
	b.Run("repeated", func(b *testing.B) {
		for b.Loop() {
			if _, err := verify.NormalizeMobile("+86 138-0013-8000", "CN"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("distinct", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := verify.NormalizeMobile(fmt.Sprintf("+8613%09d", i%1_000_000_000), "CN"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
