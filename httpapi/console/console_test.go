package console

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/trash/trashtest"
)

// fixture is a console over a fresh database with a directory, a trash and
// an admin's token, served by httptest.
type fixture struct {
	t     *testing.T
	db    *bun.DB
	clock *clocktest.Clock
	dir   *fakeDirectory
	trash *trash.Trash
	c     *Console
	srv   *httptest.Server
	token string
}

func setup(t *testing.T, db *bun.DB, tweak func(*Config), tls bool) *fixture {
	t.Helper()
	ctx := context.Background()
	for _, m := range []func(context.Context, *bun.DB) error{trash.Migrate, Migrate} {
		if err := m(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktest.New(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	dir := newFakeDirectory()
	tr, err := trash.New(db, &trashtest.Restorer{}, &trash.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{DB: db, Principals: dir, Authenticator: dir, TokenHash: fakeTokenHash, Trash: tr, Now: clk.Now, Logger: slog.New(slog.DiscardHandler)}
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, clock: clk, dir: dir, trash: tr, c: c}
	if tls {
		f.srv = httptest.NewTLSServer(c)
	} else {
		f.srv = httptest.NewServer(c)
	}
	t.Cleanup(f.srv.Close)
	f.token = f.issue("ada", true)
	return f
}

func (f *fixture) issue(username string, admin bool) string {
	f.t.Helper()
	return f.dir.issue(1, username, admin)
}

// answer is a response, its body read.
type answer struct {
	*http.Response
	body string
}

// do sends a request as a browser of this site would (Sec-Fetch-Site
// same-origin for unsafe methods), with the cookies given, following no
// redirect.
func (f *fixture) do(method, path string, form url.Values, cookies ...*http.Cookie) answer {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method != http.MethodGet {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	client := f.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{res, string(b)}
}

// signIn signs in with token and returns the session cookie.
func (f *fixture) signIn(token string) *http.Cookie {
	f.t.Helper()
	a := f.do(http.MethodPost, "/console/signin", url.Values{"token": {token}, "next": {"/console/trash?project=1"}})
	if a.StatusCode != http.StatusSeeOther || a.Header.Get("Location") != "/console/trash?project=1" {
		f.t.Fatalf("sign-in: %d to %q\n%s", a.StatusCode, a.Header.Get("Location"), a.body)
	}
	for _, c := range a.Cookies() {
		if strings.HasSuffix(c.Name, "deskkit-console") {
			return c
		}
	}
	f.t.Fatal("sign-in set no session cookie")
	return nil
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from a signed-in page.
func (f *fixture) csrf(ck *http.Cookie) string {
	f.t.Helper()
	a := f.do(http.MethodGet, "/console/", nil, ck)
	m := csrfField.FindStringSubmatch(a.body)
	if m == nil {
		f.t.Fatalf("no CSRF token on the home page (%d)", a.StatusCode)
	}
	return m[1]
}

func (f *fixture) sessions() int {
	f.t.Helper()
	n, err := f.db.NewSelect().Table("deskkit_console_sessions").Count(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func TestSessionStoredHashedAndEnds(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil, false)
		ck := f.signIn(f.token)
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure || ck.MaxAge != int((12*time.Hour)/time.Second) {
			t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over http, 12 h", ck)
		}
		var row sessionRow
		if err := db.NewRaw(`SELECT id_hash, token_hash, tenant_id, user_id, created_ms, expires_ms FROM deskkit_console_sessions`).Scan(context.Background(), &row); err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(ck.Value)
		sum := sha256.Sum256(raw)
		if row.IDHash != hex.EncodeToString(sum[:]) || strings.Contains(row.IDHash, ck.Value) {
			t.Errorf("stored id %q is not the SHA-256 of the cookie's id", row.IDHash)
		}
		if row.TokenHash != fakeTokenHash(f.token) {
			t.Error("the session does not keep its token's hash")
		}
		if got := time.UnixMilli(row.ExpiresMS).Sub(time.UnixMilli(row.CreatedMS)); got != 12*time.Hour {
			t.Errorf("session lives %s, want 12h", got)
		}
		if a := f.do(http.MethodGet, "/console/", nil, ck); a.StatusCode != http.StatusOK {
			t.Fatalf("signed in, /console/: %d", a.StatusCode)
		}
		// Signing in again from the same browser replaces its session.
		a := f.do(http.MethodPost, "/console/signin", url.Values{"token": {f.token}}, ck)
		if a.StatusCode != http.StatusSeeOther || f.sessions() != 1 {
			t.Fatalf("second sign-in: %d, %d sessions; want one", a.StatusCode, f.sessions())
		}
		if a := f.do(http.MethodGet, "/console/", nil, ck); a.StatusCode != http.StatusSeeOther {
			t.Errorf("the replaced session's cookie: %d", a.StatusCode)
		}
		ck = a.Cookies()[0]
		// 12 hours later the session is over.
		f.clock.Advance(12 * time.Hour)
		if a := f.do(http.MethodGet, "/console/", nil, ck); a.StatusCode != http.StatusSeeOther || !strings.HasPrefix(a.Header.Get("Location"), "/console/signin") {
			t.Errorf("after 12 h: %d to %q, want the sign-in page", a.StatusCode, a.Header.Get("Location"))
		}
	})
}

func TestRevokedTokenEndsSession(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil, false)
		ck := f.signIn(f.token)
		f.dir.revoke(f.token)
		a := f.do(http.MethodGet, "/console/trash", nil, ck)
		if a.StatusCode != http.StatusSeeOther || !strings.HasPrefix(a.Header.Get("Location"), "/console/signin") {
			t.Errorf("after revocation: %d to %q", a.StatusCode, a.Header.Get("Location"))
		}
		if n := f.sessions(); n != 0 {
			t.Errorf("%d sessions left after their token was revoked", n)
		}
		// A POST without a session changes nothing and says so.
		a = f.do(http.MethodPost, "/console/trash/1/clear", url.Values{"csrf": {"x"}}, ck)
		if a.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST signed out: %d", a.StatusCode)
		}
	})
}

func TestAdminFlagFollowsTheDirectory(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil, false)
		ck := f.signIn(f.token)
		if a := f.do(http.MethodGet, "/console/", nil, ck); !strings.Contains(a.body, "Role: administrator") {
			t.Fatal("the admin is not shown as one")
		}
		f.dir.setAdmin("ada", false)
		if a := f.do(http.MethodGet, "/console/", nil, ck); strings.Contains(a.body, "Role: administrator") {
			t.Error("the session still acts as an admin after the directory took the role away")
		}
	})
}

func TestCSRFAndCrossSite(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil, false)
		ck := f.signIn(f.token)
		token := f.csrf(ck)
		other := f.signIn(f.token)
		for _, tc := range []struct {
			name string
			form url.Values
		}{
			{"none", url.Values{}},
			{"empty", url.Values{"csrf": {""}}},
			{"wrong", url.Values{"csrf": {strings.Repeat("A", len(token))}}},
			{"another session's", url.Values{"csrf": {f.csrf(other)}}},
		} {
			if a := f.do(http.MethodPost, "/console/signout", tc.form, ck); a.StatusCode != http.StatusForbidden || !strings.Contains(a.body, "security token") {
				t.Errorf("%s CSRF token: %d", tc.name, a.StatusCode)
			}
		}
		// From another site, with the right token even: refused by origin.
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/console/signout", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.AddCookie(ck)
		res, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST: %d", res.StatusCode)
		}
		if n := f.sessions(); n != 2 {
			t.Fatalf("%d sessions after refused sign-outs, want 2", n)
		}
		a := f.do(http.MethodPost, "/console/signout", url.Values{"csrf": {token}}, ck)
		if a.StatusCode != http.StatusSeeOther || f.sessions() != 1 {
			t.Errorf("sign-out: %d, %d sessions left", a.StatusCode, f.sessions())
		}
		if a := f.do(http.MethodGet, "/console/", nil, ck); a.StatusCode != http.StatusSeeOther {
			t.Errorf("the signed-out cookie: %d", a.StatusCode)
		}
	})
}

func TestSecureCookieUnderTLS(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t), nil, true)
	ck := f.signIn(f.token)
	if ck.Name != "__Host-deskkit-console" || !ck.Secure || ck.Path != "/" || ck.Domain != "" {
		t.Errorf("cookie over TLS: %+v; want __Host-deskkit-console, Secure, Path=/, no Domain", ck)
	}
}

func TestOneTimeLink(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil, false)
		ctx := context.Background()
		code, err := CreateLink(ctx, db, fakeTokenHash(f.token), f.clock.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := db.NewRaw(`SELECT code_hash FROM deskkit_console_links`).Scan(ctx, &stored); err != nil || stored == code || strings.Contains(stored, code) {
			t.Fatalf("stored code %q, %v: want its hash", stored, err)
		}
		// The GET (a mail scanner's, say) does not use the link up.
		for range 2 {
			if a := f.do(http.MethodGet, LinkPath(code), nil); a.StatusCode != http.StatusOK || !strings.Contains(a.body, "data-autosubmit") {
				t.Fatalf("link page: %d", a.StatusCode)
			}
		}
		a := f.do(http.MethodPost, "/console/link", url.Values{"code": {code}})
		if a.StatusCode != http.StatusSeeOther || len(a.Cookies()) == 0 {
			t.Fatalf("redeem: %d", a.StatusCode)
		}
		if a := f.do(http.MethodPost, "/console/link", url.Values{"code": {code}}); a.StatusCode != http.StatusUnauthorized {
			t.Errorf("second use: %d, want 401", a.StatusCode)
		}
		// A link dies 10 minutes after it was made.
		late, err := CreateLink(ctx, db, fakeTokenHash(f.token), f.clock.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(10 * time.Minute)
		if a := f.do(http.MethodPost, "/console/link", url.Values{"code": {late}}); a.StatusCode != http.StatusUnauthorized {
			t.Errorf("after 10 minutes: %d, want 401", a.StatusCode)
		}
	})
}

func TestSignInLimits(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.SignInsPerClient = 3; c.SignInsPerTenant = 2; c.SignInsPerUser = 3 }, false)
		// A valid token counts against its user, not the address.
		f.signIn(f.token)
		for i := range 3 {
			if a := f.do(http.MethodPost, "/console/signin", url.Values{"token": {"dk_wrong"}}); a.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong token %d: %d, want 401", i+1, a.StatusCode)
			}
		}
		// The address spent its invalid attempts: the next, a valid token
		// too, is refused before it is looked up.
		a := f.do(http.MethodPost, "/console/signin", url.Values{"token": {f.token}})
		if a.StatusCode != http.StatusTooManyRequests || !strings.Contains(a.body, "most 3 sign-in attempts from one address every 10 minutes.") || !strings.Contains(a.body, "Try again in 10 minutes.") {
			t.Errorf("after three wrong tokens: %d\n%s", a.StatusCode, a.body)
		}
		// A new window; the tenant may open two sessions per window.
		f.clock.Advance(10 * time.Minute)
		f.signIn(f.token)
		f.signIn(f.token)
		if a := f.do(http.MethodPost, "/console/signin", url.Values{"token": {f.token}}); a.StatusCode != http.StatusTooManyRequests || !strings.Contains(a.body, "per tenant") {
			t.Errorf("third session of the tenant: %d", a.StatusCode)
		}
	})
}

func TestPathsAndHeaders(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t), nil, false)
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/console/", http.StatusSeeOther},
		{"/console", http.StatusSeeOther},
		{"/console/signin", http.StatusOK},
		{"/docs", http.StatusOK},
		{"/console/nope", http.StatusNotFound},
		{"/console/../api/v1/task/trash/search", http.StatusNotFound},
		{"/console//trash", http.StatusNotFound},
		{"/console/./trash", http.StatusNotFound},
		{"/console/%2e%2e/api/v1/x", http.StatusNotFound},
		{"/console/trash%2F1", http.StatusNotFound},
		{"/console/static/" + f.c.assets.version + "/htmx.min.js", http.StatusOK},
		{"/console/static/0000/htmx.min.js", http.StatusNotFound},
		{"/console/static/" + f.c.assets.version + "/README.md", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+tc.path, nil)
		req.URL.RawPath = "" // sent as written: http.NewRequest parsed it
		req.URL.Opaque = tc.path
		client := f.srv.Client()
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("GET %s: %d, want %d (Location %q)", tc.path, res.StatusCode, tc.status, res.Header.Get("Location"))
		}
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") ||
			res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("Referrer-Policy") != "no-referrer" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", tc.path, res.Header)
		}
		if strings.HasPrefix(tc.path, "/console/static/") && res.StatusCode == http.StatusOK &&
			(res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || res.Header.Get("Content-Type") != "text/javascript; charset=utf-8") {
			t.Errorf("static file: %v", res.Header)
		}
	}
}

func TestSafeNext(t *testing.T) {
	c := &Console{base: DefaultBasePath}
	for in, want := range map[string]string{
		"":                           "/console/",
		"/console/trash?project=1":   "/console/trash?project=1",
		"//evil.example/console/":    "/console/",
		"https://evil.example/":      "/console/",
		"/console/../api/v1/x":       "/console/",
		"/api/v1/task/trash/search":  "/console/",
		`/console/\evil`:             "/console/",
		"/console/signin?next=x":     "/console/",
		"javascript:alert(1)":        "/console/",
		"/console/trash?name=a%20b":  "/console/trash?name=a%20b",
		"/console/link?code=secret1": "/console/",
	} {
		if got := c.safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProblem checks that a page answers an error as the API does: its
// status, eKey and message (httpapi.ProblemOf), with the console's line of
// guidance where the status calls for one, and never an unexpected error's
// text.
func TestProblem(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t), nil, false)
	r := httptest.NewRequest(http.MethodGet, "/console/", nil)
	for _, tc := range []struct {
		err  error
		want shownProblem
	}{
		{deskkit.Invalid("projectId", "must be a positive integer"), shownProblem{400, 0, errorView{"projectId must be a positive integer.", httpapi.KeyValidation}}},
		{fmt.Errorf("x: %w", deskkit.ErrUnauthenticated), shownProblem{401, 0, errorView{"A valid bearer token is required. Sign in again.", httpapi.KeyUnauthorized}}},
		{fmt.Errorf("x: %w", deskkit.ErrForbidden), shownProblem{403, 0, errorView{"You may not do this.", httpapi.KeyForbidden}}},
		{fmt.Errorf("x: %w", deskkit.ErrNotFound), shownProblem{404, 0, errorView{"The resource does not exist.", httpapi.KeyNotFound}}},
		{&deskkit.RateLimitError{Message: deskkit.Plain("at most 3"), RetryAfter: 90 * time.Second}, shownProblem{429, 90, errorView{"At most 3. Try again in 1 minute 30 seconds.", httpapi.KeyTooManyRequests}}},
		{&deskkit.RateLimitError{Message: deskkit.Plain("at most 3"), RetryAfter: time.Hour}, shownProblem{429, 3600, errorView{"At most 3. Try again in 1 hour.", httpapi.KeyTooManyRequests}}},
		{fmt.Errorf("x: %w", deskkit.ErrUnavailable), shownProblem{503, 5, errorView{"The service is temporarily unavailable; retry after 5 seconds.", httpapi.KeyServiceUnavailable}}},
		{errors.New("boom: secret detail"), shownProblem{500, 0, errorView{"Internal server error.", httpapi.KeyInternal}}},
	} {
		got := f.c.problem(r, tc.err)
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(shownProblem{})); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.err, diff)
		}
		if api := httpapi.ProblemOf(r.Context(), tc.err); api.Status != got.Status || api.Key != got.Key || api.RetryAfter != got.RetryAfter {
			t.Errorf("%v: the page answers %d %s (Retry-After %d), the API %d %s (%d)", tc.err, got.Status, got.Key, got.RetryAfter, api.Status, api.Key, api.RetryAfter)
		}
	}
}

func TestTrashPageInput(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t), nil, false)
	ck := f.signIn(f.token)
	for q, want := range map[string]string{
		"project=x":          "project must be a positive integer. <code class=\"ekey\" data-ekey=\"param_validation_error\">",
		"project=05":         "project must be written as plain decimal digits",
		"type=FOO":           "Type must be Tasks or Sprints",
		"deleted=24.11.2026": "Deleted on must be a date",
		"sort=random":        "Sort must be one of",
		"size=5000":          "size must be an integer between 1 and 100.",
		"page=0":             "page must be an integer between 1 and 100000.",
	} {
		a := f.do(http.MethodGet, "/console/trash?"+q, nil, ck)
		if a.StatusCode != http.StatusBadRequest || !strings.Contains(a.body, want) {
			t.Errorf("%s: %d, want 400 saying %q", q, a.StatusCode, want)
		}
	}
	// A confirmation whose count no longer holds asks again.
	token := f.csrf(ck)
	a := f.do(http.MethodPost, "/console/trash/project/1/clear", url.Values{"csrf": {token}, "count": {"5"}}, ck)
	if a.StatusCode != http.StatusConflict || !strings.Contains(a.body, "The number of entries changed since you confirmed") ||
		!strings.Contains(a.body, "Project 1 has nothing in the trash: there is nothing to do.") || strings.Contains(a.body, `id="confirm"`) {
		t.Errorf("stale count: %d\n%s", a.StatusCode, a.body)
	}
}

// TestSentence checks that a message gets its full stop and a capital,
// and that a field name that opens it keeps the API's spelling.
func TestSentence(t *testing.T) {
	for _, tc := range []struct {
		in    string
		upper bool
		want  string
	}{
		{"you may not do this", true, "You may not do this."},
		{"verificationCode is wrong; 4 attempts are left", true, "verificationCode is wrong; 4 attempts are left."},
		{"channelType WEBHOOK: the tenant has 5 channels", true, "channelType WEBHOOK: the tenant has 5 channels."},
		{"name must be at most 100 characters", false, "name must be at most 100 characters."},
		{"at most 3", true, "At most 3."},
		{"名称已被占用", true, "名称已被占用。"},
		{"Done!", true, "Done!"},
		{"  ", true, ""},
	} {
		if got := sentence(tc.in, tc.upper); got != tc.want {
			t.Errorf("sentence(%q, %v) = %q, want %q", tc.in, tc.upper, got, tc.want)
		}
	}
}

// setupChannels is setup with a channel registry over db (migrated) as
// Config.Channels, on the fixture's clock.
func setupChannels(t *testing.T, db *bun.DB) (*fixture, *channel.ChannelRegistry) {
	t.Helper()
	if err := channel.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	var reg *channel.ChannelRegistry
	f := setup(t, db, func(c *Config) {
		var err error
		reg, err = channel.New(db, []byte("0123456789abcdef0123456789abcdef-console"), nil,
			&channel.Config{Now: c.Now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		c.Channels = reg
	}, false)
	return f, reg
}
