package deskkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/deskkit/deskkit"
)

// ruleOf returns the rule of err's *InputError for field, or "" for nil.
func ruleOf(t *testing.T, field string, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ie *deskkit.InputError
	if !errors.As(err, &ie) || !errors.Is(err, deskkit.ErrInvalid) {
		t.Fatalf("error %v is not an *InputError", err)
	}
	if ie.Field != field {
		t.Fatalf("error names field %q, want %q", ie.Field, field)
	}
	return ie.Rule.String()
}

func TestCheckNameRefusesBidiControls(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		want    string // a part of the rule; "" passes
	}{
		{"plain", "Write docs", ""},
		{"ZWJ emoji sequence", "Fix 👩\u200d💻 laptop", ""},
		{"family emoji", "👨\u200d👩\u200d👧", ""},
		{"right-to-left text with a mark", "שלום\u200f 123", ""},
		{"RLO", "report\u202Egpj.exe", "bidirectional control characters (U+202E)"},
		{"LRE", "a\u202Ab", "U+202A"},
		{"PDF", "a\u202Cb", "U+202C"},
		{"RLI", "a\u2067b", "U+2067"},
		{"PDI", "a\u2069b", "U+2069"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ruleOf(t, "name", deskkit.CheckName("name", tc.s, 100))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("CheckName(%q) = %q, want a rule containing %q", tc.s, got, tc.want)
			}
			// CheckText is the rule of every optional name.
			if got := ruleOf(t, "name", deskkit.CheckText("name", tc.s, 100)); (tc.want == "") != (got == "") {
				t.Fatalf("CheckText(%q) = %q, want a rule containing %q", tc.s, got, tc.want)
			}
		})
	}
}

func TestCheckUniqueName(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		want    string
	}{
		{"plain", "alice", ""},
		{"inner space", "dev ops", ""},
		{"accents", "Zoë", ""},
		{"emoji with VS16", "⚠️ alerts", ""},
		{"zero-width space", "wh2\u200b", "invisible characters such as zero-width spaces (U+200B)"},
		{"ZWNJ", "wh\u200c2", "U+200C"},
		{"ZWJ", "wh\u200d2", "U+200D"},
		{"word joiner", "wh\u20602", "U+2060"},
		{"BOM", "\ufeffwh2", "U+FEFF"},
		{"soft hyphen", "al\u00adice", "U+00AD"},
		{"RLM", "alice\u200f", "U+200F"},
		{"Arabic letter mark", "alice\u061c", "U+061C"},
		{"Hangul filler", "alice\u3164", "U+3164"},
		{"VS16 after a letter", "alice\ufe0f", "U+FE0F"},
		{"trailing space", "wh2 ", "must not begin or end with a space"},
		{"leading space", " wh2", "must not begin or end with a space"},
		{"trailing no-break space", "wh2\u00a0", "must not begin or end with a space"},
		{"RLO", "ali\u202Eecila", "bidirectional control characters (U+202E)"},
		{"blank", "  ", "is required"},
		{"too long", strings.Repeat("a", 11), "at most 10 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ruleOf(t, "username", deskkit.CheckUniqueName("username", tc.s, 10))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("CheckUniqueName(%q) = %q, want a rule containing %q", tc.s, got, tc.want)
			}
		})
	}
}

func TestFoldName(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"ALICE", "alice"},
		{"Alice", "aLICE"},
		{"STRASSE", "straße"},
		{"Zoe\u0308", "ZOË"}, // decomposed and composed
		{"ΣΊΣΥΦΟΣ", "σίσυφος"},
		{"wh2\u200b", "wh2"},
		{"wh2 ", "wh2"},
		{"dev  ops", "dev ops"},
		{"dev\u00a0ops", "dev ops"},
		{"⚠️ alerts", "⚠ alerts"},
	} {
		if fa, fb := deskkit.FoldName(tc.a), deskkit.FoldName(tc.b); fa != fb {
			t.Errorf("FoldName(%q) = %q, FoldName(%q) = %q; want the same key", tc.a, fa, tc.b, fb)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"alice", "alice2"},
		{"dev ops", "devops"},
		{"résumé", "resume"}, // accents make another name
	} {
		if deskkit.FoldName(tc.a) == deskkit.FoldName(tc.b) {
			t.Errorf("FoldName(%q) = FoldName(%q); want different keys", tc.a, tc.b)
		}
	}
	if got := deskkit.FoldName("ALICE"); got != "alice" {
		t.Errorf("FoldName(ALICE) = %q, want alice", got)
	}
}
