package main

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"sync"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// The host's web pages and deskkit's console in them.
//
// The host signs its users in with its own sessions (here: an API key
// typed into /app/signin, kept as a cookie naming an in-memory session).
// Its page /app has "Trash" and "Webhooks" buttons; each asks the server
// for a portal link of deskkit's console, minted for the signed-in user
// and one scope, and the browser follows it to the console's page under
// /manage/. The console asks the host on every request who the user is
// now (hostPrincipals: gone from the users table ends the session, and the
// admin flag is the one the host gives now) and whether the user may still
// use it (Allow): signing out of the host ends the console's session too.

// consoleBase is where the host mounts deskkit's console.
const consoleBase = "/manage/"

// hostSessions are the host's own signed-in browsers: a random id (the
// cookie) per principal. A real host keeps them in its database.
type hostSessions struct {
	mu   sync.Mutex
	byID map[string]deskkit.Principal
}

const hostCookie = "embed-session"

func (s *hostSessions) start(p deskkit.Principal) string {
	id := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[id] = p
	return id
}

func (s *hostSessions) of(r *http.Request) (deskkit.Principal, bool) {
	ck, err := r.Cookie(hostCookie)
	if err != nil {
		return deskkit.Principal{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.byID[ck.Value]
	return p, ok
}

func (s *hostSessions) end(r *http.Request) {
	if ck, err := r.Cookie(hostCookie); err == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.byID, ck.Value)
	}
}

// signedIn tells whether p has a host session: the console's Allow.
func (s *hostSessions) signedIn(p deskkit.Principal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.byID {
		if q.TenantID == p.TenantID && q.UserID == p.UserID {
			return true
		}
	}
	return false
}

// newConsole builds deskkit's console over the host's services: no token
// sign-in (the host has its own), portal links signed with a key derived
// from the server secret, the host's names, and the host's look.
func newConsole(db *bun.DB, secret []byte, sessions *hostSessions, tr *trash.Trash, v *verify.Verifier, chans *channel.ChannelRegistry, o appOptions) (*console.Console, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, "embed console portal links", 32)
	if err != nil {
		return nil, err
	}
	// The host's own origin is where the console's "Back to Embed" may
	// lead; the console refuses a link's return URL of any other.
	var origins []string
	if o.AppURL != "" {
		u, err := url.Parse(o.AppURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("embed: AppURL %q must be an http(s) URL such as http://127.0.0.1:8081", o.AppURL)
		}
		origins = []string{u.Scheme + "://" + u.Host}
	}
	return console.New(&console.Config{
		DB: db, Secret: key,
		Principals: hostPrincipals{db: db, keys: o.Keys},
		Allow: func(_ context.Context, p deskkit.Principal) error {
			if !sessions.signedIn(p) {
				return errors.New("embed: the user signed out of the host")
			}
			return nil
		},
		Names:    hostNames{db},
		Projects: hostProjects{},
		Trash:    tr, Verifier: v, Channels: chans, Logger: o.Logger, Now: o.Now,
		BasePath: consoleBase, NoDocs: true,
		ProductName: "Embed", AccentColor: "#6a1b9a",
		FrameAncestors: o.ConsoleFrameAncestors,
		HostOrigins:    origins,
	})
}

// hostPrincipals tells the console who a user is now: a user of the host's
// users table, an admin when the host's API keys make them one (this
// host's only store of roles; a host with a role column reads it in the
// same statement). One read by the primary key, on every console request.
type hostPrincipals struct {
	db   *bun.DB
	keys apiKeys
}

var _ console.PrincipalResolver = hostPrincipals{}

func (h hostPrincipals) Principal(ctx context.Context, tenantID, userID int64) (deskkit.Principal, error) {
	ok, err := h.db.NewSelect().Model((*userRow)(nil)).Where("u.id = ? AND u.tenant_id = ?", userID, tenantID).Exists(ctx)
	if err != nil {
		return deskkit.Principal{}, fmt.Errorf("users: read user: %w", err)
	}
	if !ok {
		return deskkit.Principal{}, fmt.Errorf("users: no user %d of tenant %d: %w", userID, tenantID, deskkit.ErrNotFound)
	}
	p := deskkit.Principal{TenantID: tenantID, UserID: userID}
	for _, k := range h.keys {
		p.Admin = p.Admin || k.TenantID == tenantID && k.UserID == userID && k.Admin
	}
	return p, nil
}

// hostNames names the console's user and tenant from the host's tables.
type hostNames struct{ db *bun.DB }

var _ console.Namer = hostNames{}

func (n hostNames) Names(ctx context.Context, p deskkit.Principal) (string, string, error) {
	u, err := hostUsers(n).User(ctx, p.TenantID, p.UserID)
	if err != nil {
		return "", "", err
	}
	t, err := hostUsers(n).Tenant(ctx, p.TenantID)
	if err != nil {
		return "", "", err
	}
	return u.FullName, t.Name, nil
}

// hostProjects names the host's projects (fixed here; a real host reads
// its projects table, always within the tenant).
type hostProjects struct{}

var _ console.ProjectNamer = hostProjects{}

func (hostProjects) ProjectNames(_ context.Context, tenant int64, ids []int64) (map[int64]string, error) {
	known := map[int64]map[int64]string{1: {1: "Launch"}}
	out := map[int64]string{}
	for _, id := range ids {
		if n, ok := known[tenant][id]; ok {
			out[id] = n
		}
	}
	return out, nil
}

// appPages are the host's pages: sign-in, the app with its buttons, the
// buttons' portal links, sign-out.
type appPages struct {
	h        *host
	sessions *hostSessions
	console  *console.Console
	logger   *slog.Logger
	appURL   string // appOptions.AppURL: the return URL's base
}

var appPage = template.Must(template.New("app").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Embed</title></head>
<body><main>
{{if .Signed}}
<h1>Embed</h1>
<p>Signed in as user {{.P.UserID}}.</p>
<ul>
<li><a id="open-trash" href="/app/manage/trash">Trash</a></li>
<li><a id="open-channels" href="/app/manage/channels">Webhooks</a></li>
</ul>
<form method="post" action="/app/signout"><button id="host-signout" type="submit">Sign out</button></form>
{{else}}
<h1>Sign in to Embed</h1>
<form method="post" action="/app/signin">
<label for="key">API key</label> <input id="key" name="key" type="password">
<button id="host-signin" type="submit">Sign in</button>
</form>
{{end}}
</main></body></html>`))

func (a *appPages) routes(mux *http.ServeMux) {
	cop := http.NewCrossOriginProtection()
	mux.HandleFunc("GET /app", a.home)
	mux.Handle("POST /app/signin", cop.Handler(http.HandlerFunc(a.signIn)))
	mux.Handle("POST /app/signout", cop.Handler(http.HandlerFunc(a.signOut)))
	mux.HandleFunc("GET /app/manage/{scope}", a.manage)
}

func (a *appPages) home(w http.ResponseWriter, r *http.Request) {
	p, ok := a.sessions.of(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = appPage.Execute(w, struct {
		Signed bool
		P      deskkit.Principal
	}{ok, p})
}

func (a *appPages) signIn(w http.ResponseWriter, r *http.Request) {
	p, err := a.h.keys.Authenticate(r.Context(), r.PostFormValue("key"))
	if err != nil {
		http.Error(w, "that key is not valid", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: hostCookie, Value: a.sessions.start(p), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/app", http.StatusSeeOther)
}

func (a *appPages) signOut(w http.ResponseWriter, r *http.Request) {
	a.sessions.end(r)
	http.SetCookie(w, &http.Cookie{Name: hostCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true})
	http.Redirect(w, r, "/app", http.StatusSeeOther)
}

// manage is a button of the app: it mints a portal link for the signed-in
// user and the page's scope, server-side, and sends the browser there.
func (a *appPages) manage(w http.ResponseWriter, r *http.Request) {
	p, ok := a.sessions.of(r)
	if !ok {
		http.Redirect(w, r, "/app", http.StatusSeeOther)
		return
	}
	var scope console.Scope
	switch r.PathValue("scope") {
	case "trash":
		scope = console.ScopeTrash
	case "channels":
		scope = console.ScopeChannels
	default:
		http.NotFound(w, r)
		return
	}
	// The link leads back to the host's app page; following Trash then
	// Webhooks in one browser keeps both tabs open (one console session
	// holds every scope its links opened for the same user).
	req := console.PortalRequest{Principal: p, Scopes: []console.Scope{scope}}
	if a.appURL != "" {
		req.ReturnURL = a.appURL + "/app"
	}
	link, err := a.console.PortalLinkFor(r.Context(), req)
	if err != nil {
		a.logger.ErrorContext(r.Context(), "embed: portal link", slog.Any("error", err))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, link, http.StatusSeeOther)
}
