package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/deskkit/deskkit"
)

// TestHostPrincipals: the host tells the console who a user is now, from
// its users table and the role its keys give; a user gone from the table
// ends the console's session at the next request.
func TestHostPrincipals(t *testing.T) {
	srv, db := startHost(t)
	ctx := context.Background()
	hp := hostPrincipals{db: db, keys: apiKeys{"key-ada": {TenantID: 1, UserID: 1, Admin: true}}}
	if p, err := hp.Principal(ctx, 1, 1); err != nil || p != (deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}) {
		t.Errorf("Ada: %+v, %v", p, err)
	}
	demoted := hostPrincipals{db: db, keys: apiKeys{"key-ada": {TenantID: 1, UserID: 1}}}
	if p, err := demoted.Principal(ctx, 1, 1); err != nil || p.Admin {
		t.Errorf("Ada without an admin's key: %+v, %v", p, err)
	}
	for _, q := range [][2]int64{{1, 99}, {2, 1}} {
		if _, err := hp.Principal(ctx, q[0], q[1]); !errors.Is(err, deskkit.ErrNotFound) {
			t.Errorf("tenant %d, user %d: %v, want ErrNotFound", q[0], q[1], err)
		}
	}

	// Through the host's pages: Ada signs in, opens the trash, and is then
	// removed from the host's users.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	post := func(path string, form url.Values) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	post("/app/signin", url.Values{"key": {"key-ada"}})
	res, err := browser.Get(srv.URL + "/app/manage/trash")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Request.URL.Path != "/manage/portal" {
		t.Fatalf("the Trash button led to %s", res.Request.URL)
	}
	if res := post("/manage/portal", url.Values{"t": {res.Request.URL.Query().Get("t")}}); res.Request.URL.Path != "/manage/trash" || res.StatusCode != http.StatusOK {
		t.Fatalf("the portal link opened %s: %d", res.Request.URL.Path, res.StatusCode)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM users WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	res, err = browser.Get(srv.URL + "/manage/trash")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// The session ends: the page says so (401), and is no trash page.
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "Your session ended") {
		t.Errorf("a removed user's console session went on to %s: %d", res.Request.URL.Path, res.StatusCode)
	}
}
