package deskkit

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The validation helpers every service and the reference host share, so that
// one rule decides what a name is everywhere: what Add accepts is exactly
// what the database stores and what Get returns.

// CheckName checks a required name of at most maxRunes characters: valid
// UTF-8, not blank, and without control characters (NUL, line breaks, tabs,
// escapes: PostgreSQL cannot store NUL, and no name needs the others). It
// returns an *InputError naming field.
func CheckName(field, s string, maxRunes int) error {
	if strings.TrimSpace(s) == "" {
		return Invalid(field, "is required")
	}
	return CheckText(field, s, maxRunes)
}

// CheckText checks an optional text as CheckName does a name, except that
// the empty string passes.
func CheckText(field, s string, maxRunes int) error {
	switch {
	case !utf8.ValidString(s):
		return Invalid(field, "must be valid UTF-8")
	case utf8.RuneCountInString(s) > maxRunes:
		return Invalid(field, "must be at most %d characters", maxRunes)
	case strings.ContainsFunc(s, unicode.IsControl):
		return Invalid(field, "must not contain control characters")
	}
	return nil
}

// CheckID checks that id, named field, is a positive integer.
func CheckID(field string, id int64) error {
	if id < 1 {
		return Invalid(field, "must be a positive integer")
	}
	return nil
}
