package main

import (
	"net/http"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestProfileFullNameFollowsParts: through the API, a profile update that
// sets firstName and lastName without fullName stores fullName joined from
// them (given, space, family; family then given without a space in a CJK
// script), in the directory's display name too; the trash and the console
// show users by it.
func TestProfileFullNameFollowsParts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		type detail struct {
			FirstName string `json:"firstName"`
			LastName  string `json:"lastName"`
			FullName  string `json:"fullName"`
		}
		for _, c := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"firstName": "Ada", "lastName": "Lovelace"}, "Ada Lovelace"},
			{map[string]any{"firstName": "小明", "lastName": "王"}, "王小明"},
			{map[string]any{"lastName": "Wang"}, "Wang小明"},
			{map[string]any{"firstName": "Ming", "fullName": "Ming W."}, "Ming W."},
		} {
			var d detail
			f.ok(f.member, http.MethodPatch, "/api/v1/user/current", c.body, &d)
			var again detail
			f.ok(f.member, http.MethodGet, "/api/v1/user/current", nil, &again)
			if d.FullName != c.want || again.FullName != c.want {
				t.Errorf("PATCH %v: fullName %q, then %q, want %q", c.body, d.FullName, again.FullName, c.want)
			}
		}
		p, err := f.app.dir.Authenticate(t.Context(), f.member)
		if err != nil {
			t.Fatal(err)
		}
		u, err := f.app.dir.User(t.Context(), p.TenantID, p.UserID)
		if err != nil {
			t.Fatal(err)
		}
		if u.DisplayName != "Ming W." {
			t.Errorf("the directory's display name is %q, want the full name", u.DisplayName)
		}
	})
}
