package deskkit_test

import (
	"testing"

	"github.com/deskkit/deskkit"
)

// TestFullName: given then family name with a space; family then given
// without one when either is in a CJK script; an empty part left out.
func TestFullName(t *testing.T) {
	for _, c := range []struct {
		name, given, family, want string
	}{
		{"latin", "Ada", "Lovelace", "Ada Lovelace"},
		{"latin, accents", "José", "Núñez", "José Núñez"},
		{"latin, two given names", "Mary Ann", "Evans", "Mary Ann Evans"},
		{"han", "小明", "王", "王小明"},
		{"han, compound family name", "修", "欧阳", "欧阳修"},
		{"hiragana and han", "さくら", "山田", "山田さくら"},
		{"katakana", "アリス", "スミス", "スミスアリス"},
		{"hangul", "민준", "김", "김민준"},
		{"mixed: latin given, han family", "Wei", "张", "张Wei"},
		{"mixed: han given, latin family", "小明", "Wang", "Wang小明"},
		{"mixed: katakana given, latin family", "アリス", "Smith", "Smithアリス"},
		{"cyrillic is not cjk", "Лев", "Толстой", "Лев Толстой"},
		{"given only", "Ada", "", "Ada"},
		{"family only", "", "Lovelace", "Lovelace"},
		{"family only, han", "", "王", "王"},
		{"both empty", "", "", ""},
		{"surrounding spaces", " Ada ", "  Lovelace", "Ada Lovelace"},
		{"a blank part is empty", "  ", "王", "王"},
	} {
		if got := deskkit.FullName(c.given, c.family); got != c.want {
			t.Errorf("%s: FullName(%q, %q) = %q, want %q", c.name, c.given, c.family, got, c.want)
		}
	}
}
