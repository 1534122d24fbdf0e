package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// TestPrincipalIsTheHostsNow: a session acts with its user as the host's
// PrincipalResolver answers now, on every request. An admin's portal
// session loses admin rights at the request after the demotion; a link
// minted for an admin and redeemed after the demotion opens a non-admin's
// session; a link minted for a non-admin never opens an admin's; a token
// session follows the demotion too; a user the host no longer has ends the
// session. Admin rights show as the header's "admin" and as restoring
// another user's trash entry (which the trash lets admins only). Both
// databases.
func TestPrincipalIsTheHostsNow(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret = testSecret }, false) // ada: user 1, admin
		ctx := context.Background()
		f.issue("bob", false) // user 2
		var ids []int64
		for i := range 4 {
			e, err := f.trash.Add(ctx, db, deskkit.Principal{TenantID: 1, UserID: 2}, trash.NewEntry{
				ProjectID: 1, TargetType: trash.TargetTask, TargetID: int64(10 + i), TargetName: fmt.Sprintf("Bob's task %d", i), CreatedBy: 2})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
		}
		ada := deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}
		link := func(p deskkit.Principal) string {
			t.Helper()
			l, err := f.c.PortalLink(ctx, p, ScopeTrash)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		isAdmin := func(ck *http.Cookie) bool {
			t.Helper()
			a := f.do(http.MethodGet, "/console/", nil, ck)
			if a.StatusCode != http.StatusOK {
				t.Fatalf("home: %d", a.StatusCode)
			}
			return strings.Contains(a.body, "Role: administrator</span>")
		}
		restore := func(ck *http.Cookie, id int64) int {
			t.Helper()
			return f.do(http.MethodPost, fmt.Sprintf("/console/trash/%d/restore", id), url.Values{"csrf": {f.csrf(ck)}}, ck).StatusCode
		}

		// (a) An admin's link, redeemed; then the user is demoted.
		ck := sessionCookie(t, f.follow(link(ada)))
		if !isAdmin(ck) {
			t.Fatal("the admin's portal session is not an admin's")
		}
		if status := restore(ck, ids[0]); status != http.StatusSeeOther {
			t.Fatalf("the admin restores Bob's entry: %d, want 303", status)
		}
		f.dir.setAdmin("ada", false)
		if isAdmin(ck) {
			t.Error("after the demotion the portal session still shows an admin")
		}
		if status := restore(ck, ids[1]); status != http.StatusForbidden {
			t.Errorf("after the demotion, restoring Bob's entry: %d, want 403", status)
		}

		// (b) Minted for an admin, the user demoted, then redeemed.
		f.dir.setAdmin("ada", true)
		minted := link(ada)
		f.dir.setAdmin("ada", false)
		ck2 := sessionCookie(t, f.follow(minted))
		if isAdmin(ck2) {
			t.Error("a link minted before the demotion opens an admin's session")
		}
		if status := restore(ck2, ids[1]); status != http.StatusForbidden {
			t.Errorf("a link minted before the demotion restores Bob's entry: %d, want 403", status)
		}

		// A link minted for a non-admin opens no admin's session, even for
		// a user the host makes an admin: never more than the link.
		f.dir.setAdmin("ada", true)
		ck3 := sessionCookie(t, f.follow(link(deskkit.Principal{TenantID: 1, UserID: 1})))
		if isAdmin(ck3) || restore(ck3, ids[2]) != http.StatusForbidden {
			t.Error("a non-admin's link acts as an admin")
		}

		// A token session follows the demotion as well.
		tok := f.issue("carol", true)
		ck4 := f.signIn(tok)
		if !isAdmin(ck4) {
			t.Fatal("carol's token session is not an admin's")
		}
		f.dir.setAdmin("carol", false)
		if isAdmin(ck4) {
			t.Error("after the demotion the token session still shows an admin")
		}

		// The host no longer has the user: the next request ends the
		// session (a page saying so, not the sign-in page: the row
		// deleted), and a link of theirs opens nothing.
		left := link(ada)
		before := f.sessions()
		f.dir.remove("ada")
		a := f.do(http.MethodGet, "/console/trash", nil, ck)
		if a.StatusCode != http.StatusUnauthorized || !strings.Contains(a.body, "Your session ended") {
			t.Errorf("a removed user's session: %d to %q", a.StatusCode, a.Header.Get("Location"))
		}
		if n := f.sessions(); n >= before {
			t.Errorf("%d sessions after the user was removed, had %d", n, before)
		}
		if a := f.follow(left); a.StatusCode != http.StatusForbidden {
			t.Errorf("a removed user's link: %d, want 403", a.StatusCode)
		}
		// Bob's entries the demoted sessions tried are still in the trash.
		for _, id := range ids[1:3] {
			if _, err := f.trash.Get(ctx, deskkit.Principal{TenantID: 1, UserID: 2}, id); err != nil {
				t.Errorf("entry %d: %v", id, err)
			}
		}
	})
}
