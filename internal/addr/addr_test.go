package addr

import (
	"errors"
	"strings"
	"testing"

	"github.com/deskkit/deskkit"
)

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.8.9.10": true, "::1": true,
		"10.0.0.1": false, "example.com": false, "": false, "localhost.example.com": false, "[::1]": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestIsE164(t *testing.T) {
	for s, want := range map[string]bool{
		"+8613800138000": true, "+12": true, "+123456789012345": true,
		"+1234567890123456": false, "+0123": false, "8613800138000": false, "+1": false, "+12a": false, "": false,
	} {
		if got := IsE164(s); got != want {
			t.Errorf("IsE164(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	for _, c := range []struct {
		in, want string
		rule     string // the error's rule, "" if accepted
	}{
		{"ann@example.com", "ann@example.com", ""},
		{"  Ann.Lee@Example.COM\t", "Ann.Lee@example.com", ""}, // trimmed; the local part keeps its case
		{"a+tag@sub.example.org", "a+tag@sub.example.org", ""},
		{"", "", "is required"},
		{"   ", "", "is required"},
		{"Ann <ann@example.com>", "", "must be an e-mail address such as ann@example.com, without a name or brackets"},
		{"<ann@example.com>", "", "must be an e-mail address such as ann@example.com, without a name or brackets"},
		{"ann", "", "must be an e-mail address such as ann@example.com, without a name or brackets"},
		{"ann@example.com (Ann)", "", "must be an e-mail address such as ann@example.com, without a name or brackets"},
		{`"a b"@example.com`, "", "must be an e-mail address such as ann@example.com, without a name or brackets"}, // quoted: not as written
		{"ann@localhost", "", "must have a domain name such as example.com"},
		{"ann@[127.0.0.1]", "", "must have a domain name such as example.com"},
		{"a\x00@example.com", "", "must not contain control characters"},
		{"\xffa@example.com", "", "must be valid UTF-8"},
		{strings.Repeat("a", 20) + "@example.com", "", "must be at most 24 characters"},
	} {
		got, err := NormalizeEmail("to", c.in, 24)
		if c.rule == "" {
			if err != nil || got != c.want {
				t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			continue
		}
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "to" || ie.Rule.String() != c.rule || !errors.Is(err, deskkit.ErrInvalid) {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want an input error for to: %s", c.in, got, err, c.rule)
		}
	}
}
