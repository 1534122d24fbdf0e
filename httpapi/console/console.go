package console

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// Paths of the console and of the API reference.
const (
	Prefix   = "/console/"
	DocsPath = "/docs"
)

// Defaults of Config.
const (
	DefaultSessionTTL   = 12 * time.Hour
	DefaultLinkTTL      = 10 * time.Minute
	DefaultSignInWindow = 10 * time.Minute
	// DefaultSignInsPerClient bounds sign-in attempts from one client
	// address per DefaultSignInWindow: a person mistypes a few times, a
	// guesser needs billions of tries against a 256-bit token.
	DefaultSignInsPerClient = 20
	// DefaultSignInsPerTenant bounds the sessions one tenant opens per
	// window, so that a leaked token cannot fill the sessions table.
	DefaultSignInsPerTenant = 200
	// DefaultSignInsGlobal bounds attempts of all clients together per
	// window: the ceiling of a guesser spread over many addresses.
	DefaultSignInsGlobal = 2000
)

// Authenticator turns a bearer token into the principal it names, as the
// API's does, and checks a token again by its stored hash on every request
// of a session. *directory.Directory implements it.
type Authenticator interface {
	httpapi.Authenticator
	// AuthenticateHash returns the principal of the token whose hash
	// (Config.TokenHash) is hash, or an error wrapping
	// deskkit.ErrUnauthenticated once the token is revoked or expired.
	AuthenticateHash(ctx context.Context, hash string) (deskkit.Principal, error)
}

// Config is what the console serves from: the database of its sessions, the
// authenticator and the service objects the API mounts.
type Config struct {
	DB            *bun.DB       // required; Migrate must have run
	Authenticator Authenticator // required: the API's
	// TokenHash is the stored form of a token, the one Authenticator's
	// AuthenticateHash takes (directory.TokenHash). Required.
	TokenHash func(token string) string
	Trash     *trash.Trash             // the trash page; nil hides it
	Verifier  *verify.Verifier         // the profile pages; nil hides them
	Channels  *channel.ChannelRegistry // the channel pages; nil hides them
	Logger    *slog.Logger             // slog.Default if nil
	Now       func() time.Time         // time.Now if nil

	SessionTTL time.Duration // DefaultSessionTTL if 0
	LinkTTL    time.Duration // DefaultLinkTTL if 0
	// Sign-in limits: attempts per window per client address, sessions
	// per tenant, attempts of all clients. 0 means the default; negative
	// turns a limit off.
	SignInWindow     time.Duration
	SignInsPerClient int
	SignInsPerTenant int
	SignInsGlobal    int
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.LinkTTL == 0 {
		c.LinkTTL = DefaultLinkTTL
	}
	if c.SignInWindow == 0 {
		c.SignInWindow = DefaultSignInWindow
	}
	if c.SignInsPerClient == 0 {
		c.SignInsPerClient = DefaultSignInsPerClient
	}
	if c.SignInsPerTenant == 0 {
		c.SignInsPerTenant = DefaultSignInsPerTenant
	}
	if c.SignInsGlobal == 0 {
		c.SignInsGlobal = DefaultSignInsGlobal
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.DB == nil:
		return errors.New("console: Config.DB is required")
	case c.Authenticator == nil:
		return errors.New("console: Config.Authenticator is required")
	case c.TokenHash == nil:
		return errors.New("console: Config.TokenHash is required")
	case c.SessionTTL < 0 || c.LinkTTL < 0 || c.SignInWindow < 0:
		return errors.New("console: durations must not be negative")
	}
	return nil
}

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate creates the console's tables (sessions, one-time links, sign-in
// limits) under the migrations table deskkit_console_migrations.
func Migrate(ctx context.Context, db *bun.DB) error {
	return migrate.Run(ctx, db, "deskkit_console_migrations", migrations)
}

// Console is the web console and the API reference: an http.Handler for
// the paths under Prefix and DocsPath.
type Console struct {
	cfg      Config
	mux      *http.ServeMux
	pages    map[string]*pageTemplate
	assets   *assets
	cop      *http.CrossOriginProtection
	sections sections // what the navigation offers: set by the route groups
}

// sections are the page groups registered, which the navigation and the
// home page link to. Each group's routes function sets its own.
type sections struct {
	Trash    bool
	Channels bool // shown to admins only
	Profile  bool
}

// New builds the console from cfg.
func New(cfg *Config) (*Console, error) {
	if cfg == nil {
		return nil, errors.New("console: Config is required")
	}
	c := &Console{cfg: cfg.withDefaults(), mux: http.NewServeMux(), cop: http.NewCrossOriginProtection()}
	if err := c.cfg.validate(); err != nil {
		return nil, err
	}
	var err error
	if c.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	if c.pages, err = parsePages(c.assets); err != nil {
		return nil, err
	}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.plainError(w, r, http.StatusForbidden, "This request came from another site, and the console refuses it.")
	}))
	c.routes()
	return c, nil
}

// Handles tells whether path is the console's or the API reference's, for
// the host's router.
func Handles(path string) bool {
	return path == "/console" || strings.HasPrefix(path, Prefix) || path == DocsPath
}

// routes registers every page: one line per page group, each group in its
// own file.
func (c *Console) routes() {
	c.mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
	})
	c.mux.HandleFunc("GET /console/static/{version}/{name}", c.serveAsset)
	c.authRoutes()
	c.page("GET /console/{$}", c.homePage)
	c.docsRoutes()
	if c.cfg.Trash != nil {
		c.trashRoutes()
	}
	if c.cfg.Channels != nil {
		c.channelRoutes()
	}
	if c.cfg.Verifier != nil {
		c.profileRoutes()
	}
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.plainError(w, r, http.StatusNotFound, "There is no such page in the console.")
	})
}

// ServeHTTP answers a console or /docs request: the security headers on
// every answer, unclean paths refused rather than redirected, unsafe
// methods only from this site.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if !cleanPath(r) {
		// A ServeMux would redirect to the cleaned path, which may leave the
		// console (/console/../api/v1/...): answer 404 instead, as the API does.
		c.plainError(w, r, http.StatusNotFound, "There is no such page in the console.")
		return
	}
	c.cop.Handler(c.mux).ServeHTTP(w, r)
}

// cleanPath reports whether r's path is written the one way the console
// serves it: no empty, "." or ".." segment, no escapes.
func cleanPath(r *http.Request) bool {
	p := r.URL.EscapedPath()
	if p != r.URL.Path || strings.Contains(p, "//") {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// contentSecurityPolicy allows scripts, styles, images, fonts, fetches and
// workers from the console's own origin only: no inline or eval'd script.
// Inline style attributes are allowed ('unsafe-inline' in style-src): Redoc
// writes its styles at run time. blob: workers are Redoc's search.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// plainError answers status with msg in the layout, signed in or not.
func (c *Console) plainError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, nil, status, "error", errorView{Message: msg})
}

// errorView is the error page's data.
type errorView struct {
	Message string
}

// fail answers err as a readable message in the layout: the status and
// words of messageFor. Unexpected errors are logged; their text stays
// here.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *Session, err error) {
	status, msg := c.messageFor(r, err)
	c.render(w, r, s, status, "error", errorView{Message: msg})
}

// messageFor turns a service's error into a status and a sentence for a
// person, as httpapi's error table turns it into an envelope.
func (c *Console) messageFor(r *http.Request, err error) (int, string) {
	var cm deskkit.ClientMessager
	own := ""
	if errors.As(err, &cm) {
		own = cm.ClientMessage()
	}
	with := func(base string) string {
		if own != "" && !strings.EqualFold(strings.TrimSuffix(own, "."), strings.TrimSuffix(base, ".")) {
			return base + " " + sentence(own)
		}
		return base
	}
	switch {
	case errors.Is(err, deskkit.ErrInvalid):
		if own == "" {
			own = "The request is not valid."
		}
		return http.StatusBadRequest, sentence(own)
	case errors.Is(err, deskkit.ErrUnauthenticated):
		return http.StatusUnauthorized, "Your sign-in is no longer valid (the token was revoked or has expired). Sign in again."
	case errors.Is(err, deskkit.ErrForbidden):
		return http.StatusForbidden, with("You are not allowed to do this.")
	case errors.Is(err, deskkit.ErrNotFound):
		return http.StatusNotFound, "Not found: it does not exist, someone else restored or cleared it, or you may not see it."
	case errors.Is(err, deskkit.ErrConflict):
		return http.StatusConflict, with("This conflicts with the current state.")
	case errors.Is(err, deskkit.ErrRateLimited):
		msg := with("Too many requests.")
		var ra deskkit.RetryAfterer
		if errors.As(err, &ra) && ra.RetryAfterDuration() > 0 {
			msg += " Try again in " + readable(ra.RetryAfterDuration()) + "."
		}
		return http.StatusTooManyRequests, msg
	case errors.Is(err, deskkit.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "The service cannot answer right now (the database is busy or down). Try again in a few seconds."
	}
	c.cfg.Logger.ErrorContext(r.Context(), "console: unexpected error", slog.String("path", r.URL.Path), slog.Any("error", err))
	return http.StatusInternalServerError, "Something went wrong on the server; it has been logged."
}

// readable writes d to the second as a person reads it: "10m", "1h30m",
// "45s", rather than "10m0s".
func readable(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sentence makes s start upper case and end with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "!") {
		s += "."
	}
	return s
}

// homePage is the console's start page.
func (c *Console) homePage(w http.ResponseWriter, r *http.Request, s *Session) {
	c.render(w, r, s, http.StatusOK, "home", c.navFor(s))
}

// navFor is what the navigation offers s: the registered sections, Channels
// to admins only (the API refuses the rest anyway).
func (c *Console) navFor(s *Session) sections {
	n := c.sections
	n.Channels = n.Channels && s.Principal.Admin
	return n
}
