package migrate

import "testing"

// A renamed name fits the column: the name is cut (by characters, never
// inside one) before the suffix, and no space is left before it.
func TestWithSuffix(t *testing.T) {
	for _, tc := range []struct {
		name, suffix string
		max          int
		want         string
	}{
		{"alice", " (2)", 128, "alice (2)"},
		{"abcdefgh", " (2)", 8, "abcd (2)"},
		{"ab cdefgh", " (12)", 8, "ab (12)"}, // cut to "ab ", its space trimmed
		{"ééééé", " (2)", 6, "éé (2)"},
		{"👩‍💻👩‍💻", " (2)", 5, "👩 (2)"},
		{"x", " (2)", 4, "(2)"}, // no room for the name: no leading space either
	} {
		if got := withSuffix(tc.name, tc.suffix, tc.max); got != tc.want {
			t.Errorf("withSuffix(%q, %q, %d) = %q, want %q", tc.name, tc.suffix, tc.max, got, tc.want)
		}
	}
}
