package deskkit

import (
	"strings"
	"unicode"
)

// FullName is the full name a profile shows for a person whose given and
// family names are given, the rule verify.Verifier.UpdateProfile follows
// when an update sets firstName or lastName without fullName: the given
// name, a space, the family name ("Ada Lovelace"); but the family name
// first and no space ("王小明", "山田太郎", "김민준") when either part holds a
// letter of a CJK script (Han, Hiragana, Katakana or Hangul), as Chinese,
// Japanese and Korean names are written, mixed ones included ("Wang" and
// "小明" give "Wang小明"). Each part is trimmed of surrounding white space;
// an empty part is left out with its space, so one part alone is the full
// name, and two empty ones give "".
//
// A host that sets names by other paths (an import, a sign-up) calls it
// for the same result.
func FullName(given, family string) string {
	given, family = strings.TrimSpace(given), strings.TrimSpace(family)
	switch {
	case given == "":
		return family
	case family == "":
		return given
	case isCJK(given) || isCJK(family):
		return family + given
	}
	return given + " " + family
}

// cjk are the scripts whose names are written family name first, without
// a space.
var cjk = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul}

func isCJK(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsOneOf(cjk, r) })
}
