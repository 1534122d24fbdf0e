package deskkit

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// The validation helpers every service and the reference host share, so that
// one rule decides what a name is everywhere: what Add accepts is exactly
// what the database stores and what Get returns.

// CheckName checks a required name of at most maxRunes characters: valid
// UTF-8, not blank, and without control characters (NUL, line breaks, tabs,
// escapes: PostgreSQL cannot store NUL, and no name needs the others) or
// bidirectional controls (see CheckText). It returns an *InputError naming
// field.
//
// Other invisible characters pass: a task name may hold an emoji sequence
// joined by U+200D (ZERO WIDTH JOINER), such as "👩‍💻". Names that must be
// unique without case use CheckUniqueName, which refuses them.
func CheckName(field, s string, maxRunes int) error {
	if strings.TrimSpace(s) == "" {
		return Invalid(field, "is required")
	}
	return CheckText(field, s, maxRunes)
}

// CheckText checks an optional text as CheckName does a name, except that
// the empty string passes.
//
// Bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066
// to U+2069) are refused: they reorder how the text after them is shown, so
// "txt.exe" can be made to read "exe.txt", and no name needs them (the
// Unicode bidirectional algorithm orders mixed scripts without help). The
// marks U+200E, U+200F and U+061C pass here, as right-to-left text may need
// them beside digits and they move nothing but their neighbour; names that
// must be unique refuse them with every other invisible character.
func CheckText(field, s string, maxRunes int) error {
	switch {
	case !utf8.ValidString(s):
		return Invalid(field, "must be valid UTF-8")
	case utf8.RuneCountInString(s) > maxRunes:
		return Invalid(field, "must be at most %d characters", maxRunes)
	case strings.ContainsFunc(s, unicode.IsControl):
		return Invalid(field, "must not contain control characters")
	}
	if i := strings.IndexFunc(s, isBidiControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return Invalid(field, "must not contain bidirectional control characters (U+%04X): they reorder how the text is shown", r)
	}
	return nil
}

// isBidiControl reports whether r is a bidirectional embedding, override or
// isolate (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI).
func isBidiControl(r rune) bool {
	return ('\u202A' <= r && r <= '\u202E') || ('\u2066' <= r && r <= '\u2069')
}

// CheckUniqueName checks a name that must be unique without case, such as a
// username, a tenant name or a channel name: CheckName's rules, and besides
//
//   - no space (any Unicode white space) at the start or the end: "wh2 "
//     would look like "wh2";
//   - no invisible character: format characters (general category Cf, such
//     as U+200B ZERO WIDTH SPACE, U+200C and U+200D, U+2060 WORD JOINER,
//     U+FEFF, U+00AD SOFT HYPHEN and the bidirectional marks U+200E, U+200F
//     and U+061C), the other default-ignorable code points (U+034F, the
//     Hangul fillers U+115F, U+1160 and U+3164, ...) and variation
//     selectors, but for U+FE0E and U+FE0F right after a symbol, which
//     choose how an emoji is drawn ("⚠️").
//
// Two names are the same name when FoldName gives the same key.
func CheckUniqueName(field, s string, maxRunes int) error {
	if err := CheckName(field, s, maxRunes); err != nil {
		return err
	}
	if s != strings.TrimFunc(s, unicode.IsSpace) {
		return Invalid(field, "must not begin or end with a space")
	}
	prev := rune(-1)
	for _, r := range s {
		if invisible(r) && !(isEmojiStyle(r) && unicode.Is(unicode.So, prev)) {
			return Invalid(field, "must not contain invisible characters such as zero-width spaces (U+%04X)", r)
		}
		prev = r
	}
	return nil
}

// invisible reports whether r is drawn as nothing: a format character, a
// default-ignorable code point or a variation selector.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// isEmojiStyle reports whether r is VARIATION SELECTOR-15 or -16, which ask
// for the text or the emoji presentation of the symbol before them.
func isEmojiStyle(r rune) bool { return r == '\uFE0E' || r == '\uFE0F' }

// FoldName returns the key under which a name is unique: two names that
// people would read as the same name have the same key. It is the name in
// Unicode normalization form C (golang.org/x/text/unicode/norm), case-folded
// with Unicode full case folding (golang.org/x/text/cases.Fold: "ALICE",
// "Alice" and "alice" are one name, and so are "STRASSE" and "straße"),
// normalized to NFC again (folding may leave a string unnormalized), with
// the invisible characters CheckUniqueName refuses removed, the spaces at
// either end trimmed and every run of white space inside written as one
// space. Names stored before these rules held fold to the key of what they
// look like ("wh2\u200b" to "wh2").
//
// The folding follows the Unicode version of golang.org/x/text; a later
// version may fold a character that an earlier one did not (only characters
// new to Unicode are affected).
func FoldName(s string) string {
	s = norm.NFC.String(s)
	s = cases.Fold().String(s) // a Caser is not safe for concurrent use: one per call
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case invisible(r):
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// CheckID checks that id, named field, is a positive integer.
func CheckID(field string, id int64) error {
	if id < 1 {
		return Invalid(field, "must be a positive integer")
	}
	return nil
}
