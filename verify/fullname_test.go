package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
)

// TestProfileFullNameFollowsParts: an update that sets firstName or
// lastName without fullName sets fullName from the parts (the one it
// leaves as stored), by deskkit.FullName; one that sets fullName keeps it;
// parts joined past 100 characters are refused naming fullName, and
// change nothing.
func TestProfileFullNameFollowsParts(t *testing.T) {
	ctx := context.Background()
	f := setup(t, dbtest.OpenSQLite(t), nil)
	s := func(s string) *string { return &s }
	for _, c := range []struct {
		name string
		p    verify.Profile
		want string
	}{
		{"both parts", verify.Profile{FirstName: s("Ada"), LastName: s("Lovelace")}, "Ada Lovelace"},
		{"the given name, the family name as stored", verify.Profile{FirstName: s("Augusta Ada")}, "Augusta Ada Lovelace"},
		{"the family name, the given name as stored", verify.Profile{LastName: s("King")}, "Augusta Ada King"},
		{"a full name given wins", verify.Profile{FirstName: s("Ada"), FullName: s("Countess of Lovelace")}, "Countess of Lovelace"},
		{"a part cleared", verify.Profile{LastName: s("")}, "Ada"},
		{"han", verify.Profile{FirstName: s("小明"), LastName: s("王")}, "王小明"},
		{"mixed", verify.Profile{FirstName: s("Wei")}, "王Wei"},
		{"hangul", verify.Profile{FirstName: s("민준"), LastName: s("김")}, "김민준"},
		{"both cleared", verify.Profile{FirstName: s(""), LastName: s("")}, ""},
		{"no part, no change", verify.Profile{FullName: s("Ann"), Title: s("Engineer")}, "Ann"},
		{"only another field", verify.Profile{Title: s("Lead")}, "Ann"},
	} {
		d, err := f.v.UpdateProfile(ctx, f.ann, c.p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d.FullName != c.want || f.dir.Get(1).FullName != c.want {
			t.Errorf("%s: fullName %q (stored %q), want %q", c.name, d.FullName, f.dir.Get(1).FullName, c.want)
		}
	}
	_, err := f.v.UpdateProfile(ctx, f.ann, verify.Profile{FirstName: s(strings.Repeat("a", 60)), LastName: s(strings.Repeat("b", 60))})
	var ie *deskkit.InputError
	if !errors.As(err, &ie) || ie.Field != "fullName" || ie.Rule.String() != "must be at most 100 characters, firstName and lastName joined; send fullName" {
		t.Errorf("parts joined past 100 characters: %v, want a refusal naming fullName", err)
	}
	if got := f.dir.Get(1); got.FirstName != "" || got.LastName != "" || got.FullName != "Ann" {
		t.Errorf("the refused update changed the user: %+v", got)
	}
}
