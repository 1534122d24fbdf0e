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
	for _, s := range []string{"13800138000", "+86 138-0013-8000", "+86013800138000", "+86121312345678", "ann@Example.COM", `"a b"@x.com`, "+", "0", "a@b", "\x00@x.com", "١٣٨"} {
		f.Add(s, "CN")
	}
	f.Add("2015550123", "us")
	f.Add("+39 0612345678", "IT")
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

// TestNormalizeMobileAnswers pins accepted and refused numbers, with the
// messages, including those a hand-written E.164 reader once took apart
// from phonenumbers.Parse: a national prefix or a carrier code after the
// calling code (CN "0", "12593"), Italian leading zeros, calling codes
// shared by regions (1, 7), non-geographical codes and bounds of Parse.
func TestNormalizeMobileAnswers(t *testing.T) {
	tests := []struct {
		mobile, country string
		want            verify.Mobile
		err             string
	}{
		{"+8613800138000", "CN", verify.Mobile{E164: "+8613800138000", Country: "CN", ITC: 86}, ""},
		{"13800138000", "CN", verify.Mobile{E164: "+8613800138000", Country: "CN", ITC: 86}, ""},
		{"+86 138-0013-8000", "cn", verify.Mobile{E164: "+8613800138000", Country: "CN", ITC: 86}, ""},
		{"(+86) 138 0013 8000", "CN", verify.Mobile{E164: "+8613800138000", Country: "CN", ITC: 86}, ""},
		{"+86013800138000", "CN", verify.Mobile{E164: "+8613800138000", Country: "CN", ITC: 86}, ""},
		{"+86 0 138 0013 8000", "CN", verify.Mobile{E164: "+8613800138000", Country: "CN", ITC: 86}, ""},
		{"+86121312345678", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"+861791234567", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"+86 12593 13800138000", "CN", verify.Mobile{E164: "+8613800138000", Country: "CN", ITC: 86}, ""},
		{"+8610 6552 9988", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"010 6552 9988", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"+86 400 810 8888", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"+8613800138000", "US", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of US"},
		{"+8613800138000", "HK", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of HK"},
		{"+12015550123", "US", verify.Mobile{E164: "+12015550123", Country: "US", ITC: 1}, ""},
		{"2015550123", "us", verify.Mobile{E164: "+12015550123", Country: "US", ITC: 1}, ""},
		{"+12015550123", "CA", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CA"},
		{"+1 800 555 0199", "US", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"+39 3123456789", "IT", verify.Mobile{E164: "+393123456789", Country: "IT", ITC: 39}, ""},
		{"+39 0612345678", "IT", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"+390612345678", "IT", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"0612345678", "IT", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"+447400123456", "GB", verify.Mobile{E164: "+447400123456", Country: "GB", ITC: 44}, ""},
		{"+44 07400 123456", "GB", verify.Mobile{E164: "+447400123456", Country: "GB", ITC: 44}, ""},
		{"07400 123456", "GB", verify.Mobile{E164: "+447400123456", Country: "GB", ITC: 44}, ""},
		{"+448001234567", "GB", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a mobile number: a text message cannot reach it"},
		{"+80012345678", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"+882 3421 2345", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"+1", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a phone number of CN"},
		{"+12", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a phone number of CN"},
		{"+123", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"+0123456", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a phone number of CN"},
		{"+999123456", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a phone number of CN"},
		{"+86", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a phone number of CN"},
		{"12", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"0", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a phone number of CN"},
		{"138001380001", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"+86138001380001", "CN", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of CN"},
		{"+7 912 345 67 89", "RU", verify.Mobile{E164: "+79123456789", Country: "RU", ITC: 7}, ""},
		{"+7 912 345 67 89", "KZ", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of KZ"},
		{"+33 6 12 34 56 78", "FR", verify.Mobile{E164: "+33612345678", Country: "FR", ITC: 33}, ""},
		{"+33612345678", "FR", verify.Mobile{E164: "+33612345678", Country: "FR", ITC: 33}, ""},
		{"+61 4 1234 5678", "AU", verify.Mobile{E164: "+61412345678", Country: "AU", ITC: 61}, ""},
		{"+5491123456789", "AR", verify.Mobile{E164: "+5491123456789", Country: "AR", ITC: 54}, ""},
		{"+52 1 55 1234 5678", "MX", verify.Mobile{E164: "", Country: "", ITC: 0}, "mobile must be a valid phone number of MX"},
		{"+525512345678", "MX", verify.Mobile{E164: "+525512345678", Country: "MX", ITC: 52}, ""},
		{"+8613800138000", "ZZ", verify.Mobile{E164: "", Country: "", ITC: 0}, "country must be an ISO 3166-1 region code such as CN or US"},
	}
	for _, tt := range tests {
		m, err := verify.NormalizeMobile(tt.mobile, tt.country)
		if got := fmt.Sprint(err); m != tt.want || (err == nil) != (tt.err == "") || (err != nil && got != tt.err) {
			t.Errorf("NormalizeMobile(%q, %q) = %+v, %v; want %+v, %q", tt.mobile, tt.country, m, err, tt.want, tt.err)
		}
	}
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
