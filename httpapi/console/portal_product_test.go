package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestPortalSessionHoldsEveryScope: a host's Trash button then its
// Webhooks button, followed in one browser for one principal, leave one
// session holding both scopes (the Trash tab keeps working), with a new id
// each time; the session still refuses the scope it was never given; a
// link for another user, or the same user with another admin flag,
// replaces the session and keeps nothing of it. Both databases.
func TestPortalSessionHoldsEveryScope(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret = testSecret; c.Channels = healthChannels{} }, false)
		ctx := context.Background()
		ada := deskkit.Principal{TenantID: 7, UserID: 41, Admin: true}
		link := func(p deskkit.Principal, s Scope) string {
			t.Helper()
			l, err := f.c.PortalLink(ctx, p, s)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		status := func(ck *http.Cookie, path string) int {
			t.Helper()
			return f.do(http.MethodGet, path, nil, ck).StatusCode
		}
		ck1 := sessionCookie(t, f.follow(link(ada, ScopeTrash)))
		if status(ck1, "/console/channels") != http.StatusForbidden {
			t.Fatal("a trash link opened the channels")
		}
		// The Webhooks button, in the same browser (its cookie sent).
		a := f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(t, link(ada, ScopeChannels))}}, ck1)
		if a.StatusCode != http.StatusSeeOther || a.Header.Get("Location") != "/console/channels" {
			t.Fatalf("second link: %d to %q", a.StatusCode, a.Header.Get("Location"))
		}
		ck2 := sessionCookie(t, a)
		if ck2.Value == ck1.Value {
			t.Error("the merged session kept the old id")
		}
		if got := status(ck1, "/console/trash"); got == http.StatusOK {
			t.Error("the replaced session id still opens pages")
		}
		for _, p := range []string{"/console/trash", "/console/channels"} {
			if got := status(ck2, p); got != http.StatusOK {
				t.Errorf("%s after both links: %d, want 200", p, got)
			}
		}
		home := f.do(http.MethodGet, "/console/", nil, ck2)
		if !strings.Contains(home.body, `href="/console/trash"`) || !strings.Contains(home.body, `href="/console/channels"`) {
			t.Errorf("the navigation lacks a scope:\n%s", home.body)
		}
		if f.sessions() != 1 {
			t.Errorf("%d sessions, want the one merged", f.sessions())
		}
		var scopes string
		if err := db.NewRaw(`SELECT scopes FROM deskkit_console_sessions`).Scan(ctx, &scopes); err != nil || scopes != "channels,trash" {
			t.Errorf("stored scopes %q, %v", scopes, err)
		}

		// Another user's link in this browser replaces the session.
		bob := deskkit.Principal{TenantID: 7, UserID: 42, Admin: true}
		a = f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(t, link(bob, ScopeChannels))}}, ck2)
		ck3 := sessionCookie(t, a)
		if status(ck3, "/console/trash") != http.StatusForbidden || status(ck3, "/console/channels") != http.StatusOK {
			t.Error("another user's link merged with the session it replaced")
		}
		// So does one of another tenant with the same user id.
		other := deskkit.Principal{TenantID: 8, UserID: 42, Admin: true}
		ck4 := sessionCookie(t, f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(t, link(other, ScopeTrash))}}, ck3))
		if status(ck4, "/console/channels") != http.StatusForbidden || status(ck4, "/console/trash") != http.StatusOK {
			t.Error("another tenant's link merged")
		}
		// And the same user without the admin flag.
		plain := deskkit.Principal{TenantID: 8, UserID: 42}
		ck5 := sessionCookie(t, f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(t, link(plain, ScopeChannels))}}, ck4))
		if status(ck5, "/console/trash") != http.StatusForbidden {
			t.Error("a link with another admin flag merged")
		}
		// A token sign-in keeps nothing of a portal session either, and a
		// portal link after it does not merge into the token's session.
		tok := f.signIn(f.token)
		if f.sessions() != 2 { // ck5's and the token's: separate browsers here
			t.Errorf("%d sessions", f.sessions())
		}
		ck6 := sessionCookie(t, f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(t, link(ada, ScopeTrash))}}, tok))
		if status(tok, "/console/trash") == http.StatusOK {
			t.Error("the token session survived a portal link in its browser")
		}
		if status(ck6, "/console/channels") != http.StatusForbidden {
			t.Error("a portal link merged into a token session")
		}
	})
}

// TestPortalReturnURL: a link's return URL must be on one of
// Config.HostOrigins (exactly: scheme, host and port), or the link is
// refused naming returnUrl; an accepted one is the header's "Back to
// <product>" and the way back on the pages of a used or expired link and
// of an ended session; one whose origin left the list is not shown.
func TestPortalReturnURL(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		tweak := func(c *Config) {
			c.Secret = testSecret
			c.ProductName = "Acme"
			c.HostOrigins = []string{"https://app.acme.example", "http://localhost:3000"}
		}
		f := setup(t, db, tweak, false)
		ctx := context.Background()
		p := deskkit.Principal{TenantID: 7, UserID: 41}
		for _, bad := range []string{
			"https://evil.example/app", "http://app.acme.example/app", "https://app.acme.example:8443/app",
			"https://app.acme.example.evil.example/", "http://localhost:3001/", "javascript:alert(1)", "/app",
			"//app.acme.example/app", "https://user:pw@app.acme.example/", "https://app.acme.example/a\nb",
			"https://app.acme.example/" + strings.Repeat("a", 2048),
		} {
			_, err := f.c.PortalLinkFor(ctx, PortalRequest{Principal: p, Scopes: []Scope{ScopeTrash}, ReturnURL: bad})
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != "returnUrl" || !errors.Is(err, deskkit.ErrInvalid) {
				t.Errorf("return URL %q: %v, want an input error naming returnUrl", bad, err)
			}
		}
		if n, _ := db.NewSelect().Table("deskkit_console_portal_links").Count(ctx); n != 0 {
			t.Errorf("%d links stored by refused requests", n)
		}
		const back = "https://app.acme.example/projects?tab=trash"
		mint := func() string {
			t.Helper()
			l, err := f.c.PortalLinkFor(ctx, PortalRequest{Principal: p, Scopes: []Scope{ScopeTrash}, ReturnURL: back})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		backLink := `id="back-to-host" href="https://app.acme.example/projects?tab=trash"`
		link := mint()
		a := f.follow(link)
		ck := sessionCookie(t, a)
		page := f.do(http.MethodGet, "/console/trash", nil, ck)
		if !strings.Contains(page.body, backLink) || !strings.Contains(page.body, ">Back to Acme</a>") {
			t.Errorf("the header lacks the way back:\n%s", page.body)
		}
		// The used link's page.
		used := f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(t, link)}})
		if used.StatusCode != http.StatusUnauthorized || !strings.Contains(used.body, "This link was used already") || !strings.Contains(used.body, backLink) ||
			strings.Contains(used.body, "Back to the console") {
			t.Errorf("used link: %d\n%s", used.StatusCode, used.body)
		}
		// The expired link's page, in Chinese too.
		late := mint()
		f.clock.Advance(DefaultPortalLinkTTL + time.Second)
		exp := f.do(http.MethodGet, late, nil)
		if exp.StatusCode != http.StatusUnauthorized || !strings.Contains(exp.body, "This link has expired") || !strings.Contains(exp.body, backLink) {
			t.Errorf("expired link: %d\n%s", exp.StatusCode, exp.body)
		}
		zh := f.do(http.MethodGet, late+"&lang=zh-CN", nil)
		if !strings.Contains(zh.body, "此链接已过期") || !strings.Contains(zh.body, "返回Acme</a>") {
			t.Errorf("expired link in Chinese:\n%s", zh.body)
		}
		// A forged link has no way back (its claims are not the console's).
		forged := f.do(http.MethodGet, "/console/portal?t=x.y", nil)
		if forged.StatusCode != http.StatusUnauthorized || strings.Contains(forged.body, "back-to-host") ||
			!strings.Contains(forged.body, "Go back to the application that sent you here") {
			t.Errorf("forged link: %d\n%s", forged.StatusCode, forged.body)
		}
		// The session expires: its page says so and leads back.
		f.clock.Advance(DefaultSessionTTL)
		ended := f.do(http.MethodGet, "/console/trash", nil, ck)
		if ended.StatusCode != http.StatusUnauthorized || !strings.Contains(ended.body, "Your session has expired.") || !strings.Contains(ended.body, backLink) ||
			strings.Contains(ended.body, "/console/signin") {
			t.Errorf("ended session: %d\n%s", ended.StatusCode, ended.body)
		}
		if f.sessions() != 0 {
			t.Error("the expired session's row is kept")
		}

		// A console whose HostOrigins no longer lists the origin shows no
		// way back for the sessions it stored.
		ck = sessionCookie(t, f.follow(mint()))
		g := setup(t, db, func(c *Config) { tweak(c); c.HostOrigins = []string{"https://other.acme.example"} }, false)
		page = g.do(http.MethodGet, "/console/trash", nil, ck)
		if page.StatusCode != http.StatusOK || strings.Contains(page.body, "back-to-host") {
			t.Errorf("a return URL of an origin no longer listed is shown: %d", page.StatusCode)
		}
		// Without HostOrigins a link takes no return URL at all.
		h := setup(t, db, func(c *Config) { c.Secret = testSecret }, false)
		if _, err := h.c.PortalLinkFor(ctx, PortalRequest{Principal: p, Scopes: []Scope{ScopeTrash}, ReturnURL: back}); !errors.Is(err, deskkit.ErrInvalid) ||
			!strings.Contains(err.Error(), "Config.HostOrigins") {
			t.Errorf("a return URL without HostOrigins: %v", err)
		}
	})
}

func TestHostOriginsValidated(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"https://app.example/", "app.example", "ftp://app.example", "https://*.example"} {
		_, err := New(&Config{DB: db, Principals: newFakeDirectory(), HostOrigins: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "Config.HostOrigins[0]") {
			t.Errorf("HostOrigins %q: %v", bad, err)
		}
	}
}

// FuzzReturnURL: whatever a host passes as a return URL, the check never
// panics, and what it accepts is an http(s) URL on a listed origin that
// the pages then show as it is.
func FuzzReturnURL(f *testing.F) {
	for _, s := range []string{"https://app.acme.example/x?y=1#z", "http://localhost:3000/", "https://app.acme.example:443/",
		"javascript:alert(1)", "//app.acme.example", "https://app.acme.example\\@evil.example/", "https://APP.acme.example/", "", "\x00"} {
		f.Add(s)
	}
	c := &Console{cfg: Config{HostOrigins: []string{"https://app.acme.example", "http://localhost:3000"}}}
	f.Fuzz(func(t *testing.T, s string) {
		err := c.checkReturnURL(s)
		if err == nil {
			u, perr := url.Parse(s)
			if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
				t.Fatalf("accepted %q", s)
			}
			if o := strings.ToLower(u.Scheme + "://" + u.Host); o != "https://app.acme.example" && o != "http://localhost:3000" {
				t.Fatalf("accepted %q of origin %q", s, o)
			}
			if c.returnURL(s) != s {
				t.Fatalf("accepted %q but would not show it", s)
			}
		} else if c.returnURL(s) != "" {
			t.Fatalf("refused %q but would show it", s)
		}
	})
}
