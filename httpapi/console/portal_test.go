package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// portalToken is the t= value of a minted link.
func portalToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Path != "/console/portal" {
		t.Fatalf("link %q: want /console/portal?t=...", link)
	}
	return u.Query().Get("t")
}

// follow opens link as a browser does: the GET shows a page with a form,
// whose POST opens the session. It returns the POST's answer.
func (f *fixture) follow(link string) answer {
	f.t.Helper()
	if a := f.do(http.MethodGet, link, nil); a.StatusCode != http.StatusOK || !strings.Contains(a.body, "data-autosubmit") {
		f.t.Fatalf("GET %s: %d\n%s", link, a.StatusCode, a.body)
	}
	return f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(f.t, link)}})
}

func sessionCookie(t *testing.T, a answer) *http.Cookie {
	t.Helper()
	for _, c := range a.Cookies() {
		if strings.HasSuffix(c.Name, "deskkit-console") && c.Value != "" {
			return c
		}
	}
	t.Fatalf("no session cookie (%d %s)", a.StatusCode, a.body)
	return nil
}

func TestPortalLink(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		var allowed atomic.Bool
		allowed.Store(true)
		var asked atomic.Int64
		f := setup(t, db, func(c *Config) {
			c.Secret = testSecret
			c.Allow = func(_ context.Context, p deskkit.Principal) error {
				asked.Add(1)
				if !allowed.Load() || p.UserID != 41 {
					return errors.New("host: signed out")
				}
				return nil
			}
		}, false)
		ctx := context.Background()
		p := deskkit.Principal{TenantID: 7, UserID: 41}
		link, err := f.c.PortalLink(ctx, p, ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		a := f.follow(link)
		if a.StatusCode != http.StatusSeeOther || a.Header.Get("Location") != "/console/trash" {
			t.Fatalf("redeem: %d to %q\n%s", a.StatusCode, a.Header.Get("Location"), a.body)
		}
		ck := sessionCookie(t, a)
		// The row stored is the principal and scope, and no token.
		var row sessionRow
		if err := db.NewRaw(`SELECT id_hash, token_hash, tenant_id, user_id, admin, scopes, created_ms, expires_ms FROM deskkit_console_sessions`).Scan(ctx, &row); err != nil {
			t.Fatal(err)
		}
		if row.TokenHash != "" || row.TenantID != 7 || row.UserID != 41 || row.Admin != 0 || row.Scopes != "trash" {
			t.Errorf("session row %+v", row)
		}
		// Single use: the second POST of the same link opens nothing.
		if a := f.do(http.MethodPost, "/console/portal", url.Values{"t": {portalToken(t, link)}}); a.StatusCode != http.StatusUnauthorized {
			t.Errorf("second use: %d, want 401", a.StatusCode)
		}
		// The session is the principal's, within its scope; the navigation
		// offers only the trash, and no API reference.
		home := f.do(http.MethodGet, "/console/", nil, ck)
		if home.StatusCode != http.StatusOK || !strings.Contains(home.body, `href="/console/trash"`) ||
			strings.Contains(home.body, `href="/docs"`) || !strings.Contains(home.body, "User: 41</span> · <span class=\"who-tenant\">Tenant: 7") {
			t.Errorf("home: %d\n%s", home.StatusCode, home.body)
		}
		if a := f.do(http.MethodGet, "/console/trash", nil, ck); a.StatusCode != http.StatusOK {
			t.Errorf("trash: %d", a.StatusCode)
		}
		before := asked.Load()
		f.do(http.MethodGet, "/console/trash", nil, ck)
		if asked.Load() != before+1 {
			t.Errorf("Allow asked %d times for one request, want 1", asked.Load()-before)
		}
		// The host withdraws access: the next request ends the session.
		allowed.Store(false)
		a = f.do(http.MethodGet, "/console/trash", nil, ck)
		// A portal session's end is a page that says so, not the token
		// sign-in its reader has no token for.
		if a.StatusCode != http.StatusUnauthorized || !strings.Contains(a.body, "Your session ended: you may no longer use these pages.") ||
			strings.Contains(a.body, "/console/signin") {
			t.Errorf("after Allow refused: %d to %q\n%s", a.StatusCode, a.Header.Get("Location"), a.body)
		}
		if n := f.sessions(); n != 0 {
			t.Errorf("%d sessions after Allow refused, want 0", n)
		}
		allowed.Store(true)
		if a := f.do(http.MethodGet, "/console/trash", nil, ck); a.StatusCode != http.StatusSeeOther {
			t.Errorf("the ended session came back: %d", a.StatusCode)
		}
		// A link for a principal Allow refuses opens no session.
		other, err := f.c.PortalLink(ctx, deskkit.Principal{TenantID: 7, UserID: 42}, ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		if a := f.follow(other); a.StatusCode != http.StatusForbidden || f.sessions() != 0 {
			t.Errorf("refused principal: %d, %d sessions", a.StatusCode, f.sessions())
		}
	})
}

func TestPortalLinkExpiresAndForgeries(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret = testSecret }, false)
		ctx := context.Background()
		p := deskkit.Principal{TenantID: 7, UserID: 41, Admin: true}
		link, err := f.c.PortalLink(ctx, p, ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		tok := portalToken(t, link)
		f.clock.Advance(DefaultPortalLinkTTL - time.Millisecond)
		fresh, err := f.c.PortalLink(ctx, p, ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Millisecond)
		// Two minutes after it was made, the link is dead, page and POST.
		if a := f.do(http.MethodGet, link, nil); a.StatusCode != http.StatusUnauthorized {
			t.Errorf("expired link's page: %d", a.StatusCode)
		}
		if a := f.do(http.MethodPost, "/console/portal", url.Values{"t": {tok}}); a.StatusCode != http.StatusUnauthorized {
			t.Errorf("expired link: %d", a.StatusCode)
		}
		// A link changed by a byte, or signed with another key, is refused.
		ft := portalToken(t, fresh)
		body, sig, _ := strings.Cut(ft, ".")
		flipped := []byte(sig)
		flipped[0] ^= 1
		other, _ := New(&Config{DB: db, Principals: f.dir, Secret: []byte(strings.Repeat("x", 32)), Now: f.clock.Now, Trash: f.trash})
		otherLink, err := other.PortalLink(ctx, p, ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		for _, forged := range []string{body + "." + string(flipped), body, "", "x.y", portalToken(t, otherLink)} {
			if a := f.do(http.MethodPost, "/console/portal", url.Values{"t": {forged}}); a.StatusCode != http.StatusUnauthorized {
				t.Errorf("forged %q: %d", forged, a.StatusCode)
			}
		}
		if a := f.follow(fresh); a.StatusCode != http.StatusSeeOther {
			t.Errorf("the fresh link: %d", a.StatusCode)
		}
		// Minting refuses what it cannot serve.
		for _, tc := range []struct {
			p      deskkit.Principal
			scopes []Scope
		}{
			{p, nil},
			{p, []Scope{ScopeChannels}}, // no registry in this console
			{p, []Scope{"admin"}},
			{deskkit.Principal{UserID: 1}, []Scope{ScopeTrash}},
		} {
			if _, err := f.c.PortalLink(ctx, tc.p, tc.scopes...); !errors.Is(err, deskkit.ErrInvalid) {
				t.Errorf("PortalLink(%+v, %v): %v, want ErrInvalid", tc.p, tc.scopes, err)
			}
		}
		noSecret := setup(t, db, nil, false)
		if _, err := noSecret.c.PortalLink(ctx, p, ScopeTrash); !errors.Is(err, ErrNoSecret) {
			t.Errorf("without a secret: %v", err)
		}
	})
}

func TestPortalOnlyConsole(t *testing.T) {
	// A host with its own authentication: no Authenticator, so no token
	// sign-in; the sign-in page says where to come from.
	db := dbtest.OpenSQLite(t)
	f := setup(t, db, func(c *Config) { c.Authenticator, c.TokenHash, c.Secret = nil, nil, testSecret }, false)
	a := f.do(http.MethodGet, "/console/signin", nil)
	if a.StatusCode != http.StatusOK || strings.Contains(a.body, `name="token"`) || !strings.Contains(a.body, "application that gave you access") {
		t.Errorf("sign-in page: %d\n%s", a.StatusCode, a.body)
	}
	if a := f.do(http.MethodPost, "/console/signin", url.Values{"token": {f.token}}); a.StatusCode == http.StatusSeeOther {
		t.Error("token sign-in works without an Authenticator")
	}
	link, err := f.c.PortalLink(context.Background(), deskkit.Principal{TenantID: 1, UserID: 1}, ScopeTrash)
	if err != nil {
		t.Fatal(err)
	}
	if a := f.follow(link); a.StatusCode != http.StatusSeeOther {
		t.Errorf("portal link: %d", a.StatusCode)
	}
}

type fakeNames struct{}

func (fakeNames) Names(_ context.Context, p deskkit.Principal) (string, string, error) {
	if p.UserID == 2 {
		return "", "", errors.New("directory down")
	}
	return "Ada Lovelace", "Acme & Co", nil
}

func (fakeNames) ProjectNames(_ context.Context, tenant int64, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	for _, id := range ids {
		if id == 1 && tenant == 1 {
			out[id] = "Launch <plan>"
		}
	}
	return out, nil
}

func TestNamesAndTheming(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	f := setup(t, db, func(c *Config) {
		c.Names, c.Projects = fakeNames{}, fakeNames{}
		c.ProductName, c.LogoURL, c.AccentColor = "Acme Desk", "https://cdn.acme.example/logo.svg", "#7a1fa2"
		c.FrameAncestors = []string{"https://app.acme.example", "http://localhost:3000"}
	}, false)
	ck := f.signIn(f.token)
	a := f.do(http.MethodGet, "/console/", nil, ck)
	for _, want := range []string{`<span class="who-user">User: Ada Lovelace</span> · <span class="who-tenant">Tenant: Acme &amp; Co</span> · <span class="who-role">Role: administrator</span>`, "<title>Home · Acme Desk</title>",
		`<img class="logo" src="https://cdn.acme.example/logo.svg"`, `style="--accent: #7a1fa2"`} {
		if !strings.Contains(a.body, want) {
			t.Errorf("home lacks %q\n%s", want, a.body)
		}
	}
	csp := a.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors https://app.acme.example http://localhost:3000;") ||
		!strings.Contains(csp, "img-src 'self' data: https://cdn.acme.example;") || a.Header.Get("X-Frame-Options") != "" {
		t.Errorf("headers: CSP %q, X-Frame-Options %q", csp, a.Header.Get("X-Frame-Options"))
	}
	// Projects show their names where the host knows them, ids otherwise.
	ctx := context.Background()
	ada := deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}
	for i, pid := range []int64{1, 2} {
		if _, err := f.trash.Add(ctx, db, ada, trash.NewEntry{ProjectID: pid, TargetType: trash.TargetTask, TargetID: int64(10 + i), TargetName: "T", CreatedBy: 1}); err != nil {
			t.Fatal(err)
		}
	}
	a = f.do(http.MethodGet, "/console/trash", nil, ck)
	if !strings.Contains(a.body, `<td data-label="Project">Launch &lt;plan&gt;</td>`) || !strings.Contains(a.body, `<td data-label="Project">2</td>`) {
		t.Errorf("project cells:\n%s", a.body)
	}
	a = f.do(http.MethodGet, "/console/trash?project=1", nil, ck)
	if !strings.Contains(a.body, "Clear project Launch &lt;plan&gt;&#39;s trash") {
		t.Errorf("project actions:\n%s", a.body)
	}
	// A failing Names shows the ids.
	tok := f.dir.issue(1, "bob", false)
	a = f.do(http.MethodGet, "/console/", nil, f.signIn(tok))
	if !strings.Contains(a.body, `<span class="who-user">User: 2</span> · <span class="who-tenant">Tenant: 1</span></span>`) {
		t.Errorf("without names: %s", regexp.MustCompile(`<span class="who">.*`).FindString(a.body))
	}
}

func TestConfigValidation(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	for name, tweak := range map[string]func(*Config){
		"base without slash":      func(c *Config) { c.BasePath = "/portal" },
		"base root":               func(c *Config) { c.BasePath = "/" },
		"base dot-dot":            func(c *Config) { c.BasePath = "/a/../b/" },
		"docs under base":         func(c *Config) { c.DocsPath = "/console/docs" },
		"accent name":             func(c *Config) { c.AccentColor = "red" },
		"accent css injection":    func(c *Config) { c.AccentColor = "#fff; background: url(x)" },
		"frame ancestor wildcard": func(c *Config) { c.FrameAncestors = []string{"https://*.example.com"} },
		"frame ancestor path":     func(c *Config) { c.FrameAncestors = []string{"https://app.example.com/x"} },
		"frame ancestor none":     func(c *Config) { c.FrameAncestors = []string{"'none'"} },
		"frame ancestor two":      func(c *Config) { c.FrameAncestors = []string{"https://a.example https://b.example"} },
		"logo javascript":         func(c *Config) { c.LogoURL = "javascript:alert(1)" },
		"logo http":               func(c *Config) { c.LogoURL = "http://cdn.example/logo.png" },
		"short secret":            func(c *Config) { c.Secret = []byte("short") },
		"token hash missing":      func(c *Config) { c.Authenticator = newFakeDirectory() },
		"principals missing":      func(c *Config) { c.Principals = nil },
		"trusted proxy name":      func(c *Config) { c.TrustedProxies = []string{"10.0.0.0/8", "proxy.internal"} },
		"trusted proxy bad mask":  func(c *Config) { c.TrustedProxies = []string{"10.0.0.0/33"} },
		"trusted proxy zone":      func(c *Config) { c.TrustedProxies = []string{"fe80::1%eth0"} },
	} {
		cfg := Config{DB: db, Principals: newFakeDirectory()}
		tweak(&cfg)
		if _, err := New(&cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	// The errors name the field.
	for field, cfg := range map[string]Config{
		"Config.Principals":        {DB: db},
		"Config.TrustedProxies[1]": {DB: db, Principals: newFakeDirectory(), TrustedProxies: []string{"10.0.0.0/8", "proxy.internal"}},
	} {
		if _, err := New(&cfg); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("New's error %v does not name %s", err, field)
		}
	}
	if _, err := New(&Config{DB: db, Principals: newFakeDirectory(), TrustedProxies: []string{"10.0.0.0/8", "192.0.2.7", "::1", "2001:db8::/32", " 172.16.0.0/12 "}}); err != nil {
		t.Errorf("good TrustedProxies refused: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) accepted")
	}
}

func TestBasePath(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	f := setup(t, db, func(c *Config) { c.BasePath, c.DocsPath, c.Secret = "/help/desk/", "/help/api", testSecret }, false)
	if !f.c.Handles("/help/desk/trash") || !f.c.Handles("/help/desk") || !f.c.Handles("/help/api") || f.c.Handles("/console/") || f.c.Handles("/docs") {
		t.Error("Handles does not follow BasePath and DocsPath")
	}
	link, err := f.c.PortalLink(context.Background(), deskkit.Principal{TenantID: 1, UserID: 1}, ScopeTrash)
	if err != nil || !strings.HasPrefix(link, "/help/desk/portal?t=") {
		t.Fatalf("link %q, %v", link, err)
	}
	u, _ := url.Parse(link)
	a := f.do(http.MethodGet, link, nil)
	if !strings.Contains(a.body, `action="/help/desk/portal"`) || !strings.Contains(a.body, `/help/desk/static/`) {
		t.Errorf("portal page under the base path:\n%s", a.body)
	}
	a = f.do(http.MethodPost, "/help/desk/portal", url.Values{"t": {u.Query().Get("t")}})
	if a.StatusCode != http.StatusSeeOther || a.Header.Get("Location") != "/help/desk/trash" {
		t.Fatalf("redeem: %d to %q", a.StatusCode, a.Header.Get("Location"))
	}
	page := f.do(http.MethodGet, "/help/desk/trash", nil, sessionCookie(t, a))
	if page.StatusCode != http.StatusOK || strings.Contains(page.body, `"/console/`) || !strings.Contains(page.body, `action="/help/desk/trash"`) {
		t.Errorf("trash under the base path: %d\n%s", page.StatusCode, page.body)
	}
	if a := f.do(http.MethodGet, "/help/api", nil); a.StatusCode != http.StatusOK {
		t.Errorf("docs: %d", a.StatusCode)
	}
}

// An attempt whose far end answered nothing shows "(empty)", and one that
// answered shows the reply.
func TestEmptyReply(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t), nil, false)
	rec := httptest.NewRecorder()
	s := &consoleSession{Principal: deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}, Scopes: scopesAll, CSRF: "x"}
	f.c.render(rec, httptest.NewRequest(http.MethodGet, "/console/deliveries/1", nil), s, http.StatusOK, "channels_delivery",
		deliveryView{ID: 1, Attempts: []attemptView{
			{AttemptDetail: channel.AttemptDetail{AttemptNo: 2, Response: channel.AttemptResponse{StatusCode: 200, Body: "ok"}}, ResponseBody: "ok"},
			{AttemptDetail: channel.AttemptDetail{AttemptNo: 1, Response: channel.AttemptResponse{StatusCode: 204}}}}})
	body := rec.Body.String()
	if !strings.Contains(body, `<p class="note">(empty)</p>`) || !strings.Contains(body, `<pre class="reply" tabindex="0">ok</pre>`) {
		t.Errorf("replies:\n%s", body)
	}
}

// Two replicas (two Consoles on one database) redeem one link at the same
// moment: one session opens, the other is refused.
func TestPortalLinkOnceAcrossReplicas(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret = testSecret }, false)
		other, err := New(&Config{DB: db, Principals: f.dir, Secret: testSecret, Trash: f.trash, Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		second := httptest.NewServer(other)
		t.Cleanup(second.Close)
		for range 5 {
			link, err := f.c.PortalLink(context.Background(), deskkit.Principal{TenantID: 1, UserID: 1}, ScopeTrash)
			if err != nil {
				t.Fatal(err)
			}
			tok := portalToken(t, link)
			statuses := make(chan int, 2)
			for _, base := range []string{f.srv.URL, second.URL} {
				go func() {
					req, _ := http.NewRequest(http.MethodPost, base+"/console/portal", strings.NewReader(url.Values{"t": {tok}}.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
					res, err := client.Do(req)
					if err != nil {
						statuses <- 0
						return
					}
					res.Body.Close()
					statuses <- res.StatusCode
				}()
			}
			got := []int{<-statuses, <-statuses}
			if !(got[0] == http.StatusSeeOther && got[1] == http.StatusUnauthorized || got[1] == http.StatusSeeOther && got[0] == http.StatusUnauthorized) {
				t.Errorf("one link on two replicas at once: %v, want one 303 and one 401", got)
			}
		}
		if n := f.sessions(); n != 5 {
			t.Errorf("%d sessions from 5 links, want 5", n)
		}
	})
}

// TestPortalSignatureStrict: a portal link is accepted only as it was
// minted. Other spellings of the same bytes, which a lenient base64
// decoder takes (other low bits in the last character, a trailing
// newline, CR LF inside, padding), open nothing; the link itself then
// still works. Both databases.
func TestPortalSignatureStrict(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret = testSecret }, false)
		link, err := f.c.PortalLink(context.Background(), deskkit.Principal{TenantID: 1, UserID: 1}, ScopeTrash)
		if err != nil {
			t.Fatal(err)
		}
		tok := portalToken(t, link)
		body, sig, _ := strings.Cut(tok, ".")
		// 32 bytes are 43 characters, whose last carries 2 bits of data
		// and 4 that must be 0: flip one of those.
		last := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", sig[len(sig)-1])
		lowBits := sig[:len(sig)-1] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last^1])
		for name, spelling := range map[string]string{
			"other low bits":     body + "." + lowBits,
			"trailing newline":   tok + "\n",
			"CR LF in signature": body + "." + sig[:20] + "\r\n" + sig[20:],
			"CR LF in body":      body[:10] + "\r\n" + body[10:] + "." + sig,
			"newline in body":    body[:10] + "\n" + body[10:] + "." + sig,
			"padded signature":   tok + "=",
			"trailing CR LF":     tok + "\r\n",
			"standard alphabet":  strings.NewReplacer("-", "+", "_", "/").Replace(tok),
		} {
			if spelling == tok {
				continue // the standard alphabet spelled it the same
			}
			if a := f.do(http.MethodGet, "/console/portal?t="+url.QueryEscape(spelling), nil); a.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: the link's page answers %d, want 401", name, a.StatusCode)
			}
			if a := f.do(http.MethodPost, "/console/portal", url.Values{"t": {spelling}}); a.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: redeemed with %d, want 401", name, a.StatusCode)
			}
		}
		if n := f.sessions(); n != 0 {
			t.Errorf("%d sessions opened by other spellings", n)
		}
		if a := f.follow(link); a.StatusCode != http.StatusSeeOther {
			t.Errorf("the link as minted: %d, want 303", a.StatusCode)
		}
	})
}
