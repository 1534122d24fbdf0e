package console

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate creates the console's tables (sessions, one-time links, portal
// links, sign-in limits) under the migrations table
// deskkit_console_migrations. New refuses a database it has not run on.
func Migrate(ctx context.Context, db *bun.DB) error {
	return migrate.Run(ctx, db, migrationSet.Table, migrationSet.FS)
}

// tables are the console's tables, the newest first: the one a database
// migrated by an older deskkit lacks is named first.
var tables = []string{"deskkit_console_portal_links", "deskkit_console_limits", "deskkit_console_links", "deskkit_console_sessions"}

// migrationSet is what Migrate applies, and New checks (migrate.Check):
// a host that forgot Migrate, or upgraded without running it again, learns
// so from New rather than from a 500 at the first link.
var migrationSet = migrate.Set{Table: "deskkit_console_migrations", FS: migrations}

// Console is the web console and the API reference: an http.Handler for
// the paths under Config.BasePath and Config.DocsPath (Handles tells them).
type Console struct {
	cfg      Config
	base     string // Config.BasePath
	csp      string // the Content-Security-Policy of every answer
	xfo      string // X-Frame-Options: DENY, or "" when origins may frame
	mux      *http.ServeMux
	pages    map[language.Tag]map[string]*pageTemplate // by language, by name
	i18n     *i18n
	assets   *assets
	cop      *http.CrossOriginProtection
	proxies  httpapi.Proxies // Config.TrustedProxies
	sections sections        // what the navigation offers: set by the route groups
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
	c.base = c.cfg.BasePath
	c.csp, c.xfo = securityPolicy(c.cfg)
	c.proxies, _ = httpapi.ParseProxies(c.cfg.TrustedProxies) // validated
	var err error
	if err = migrate.Check(c.cfg.DB, "console.New", "console.Migrate", tables, migrationSet); err != nil {
		return nil, err
	}
	if c.assets, err = loadAssets(c.base); err != nil {
		return nil, err
	}
	if c.i18n, err = newI18n(c.cfg); err != nil {
		return nil, err
	}
	c.pages = map[language.Tag]map[string]*pageTemplate{}
	for _, tag := range c.i18n.messages().Languages() {
		if c.pages[tag], err = c.parsePages(c.assets, tag); err != nil {
			return nil, err
		}
	}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.plainError(w, r, http.StatusForbidden, c.tr(r, "This request came from another site, and the console refuses it."))
	}))
	c.routes()
	return c, nil
}

// Handles tells whether path is the console's or the API reference's, for
// the host's router.
func (c *Console) Handles(path string) bool {
	return path == strings.TrimSuffix(c.base, "/") || strings.HasPrefix(path, c.base) || (!c.cfg.NoDocs && path == c.cfg.DocsPath)
}

// routes registers every page: one line per page group, each group in its
// own file.
func (c *Console) routes() {
	c.mux.HandleFunc("GET "+strings.TrimSuffix(c.base, "/"), func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, c.base, http.StatusSeeOther)
	})
	c.mux.HandleFunc("GET "+c.base+"static/{version}/{name}", c.serveAsset)
	c.authRoutes()
	c.portalRoutes()
	c.page("", "GET "+c.base+"{$}", c.homePage)
	if !c.cfg.NoDocs {
		c.docsRoutes()
	}
	if httpapi.Mounted(c.cfg.Trash) {
		c.trashRoutes()
	}
	if httpapi.Mounted(c.cfg.Channels) {
		c.channelRoutes()
	}
	if httpapi.Mounted(c.cfg.Verifier) {
		c.profileRoutes()
	}
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.plainError(w, r, http.StatusNotFound, c.tr(r, "There is no such page in the console."))
	})
}

// ServeHTTP answers a console or /docs request: the security headers on
// every answer, unclean paths refused rather than redirected, unsafe
// methods only from this site.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.setSecurityHeaders(w.Header())
	r = c.withClient(r)
	c.switchLanguage(w, r)
	r = c.withLanguage(r)
	r = c.switchZone(w, r)
	if !cleanPath(r) {
		// A ServeMux would redirect to the cleaned path, which may leave the
		// console (/console/../api/v1/...): answer 404 instead, as the API does.
		c.plainError(w, r, http.StatusNotFound, c.tr(r, "There is no such page in the console."))
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

// securityPolicy is the Content-Security-Policy of cfg and the
// X-Frame-Options that agrees with it. The policy allows scripts, styles,
// images, fonts, fetches and workers from the console's own origin only: no
// inline or eval'd script. Inline style attributes are allowed
// ('unsafe-inline' in style-src): Redoc writes its styles at run time, and
// the accent colour is one. blob: workers are Redoc's search. Images may
// come from the logo's origin too; frames may hold the pages only within
// Config.FrameAncestors. X-Frame-Options cannot name several origins, so
// with any listed it is left out (browsers with CSP ignore it anyway) and
// DENY otherwise.
func securityPolicy(cfg Config) (csp, xfo string) {
	img := "'self' data:"
	if o, _ := logoOrigin(cfg.LogoURL); o != "" {
		img += " " + o
	}
	frames := "'none'"
	xfo = "DENY"
	if len(cfg.FrameAncestors) > 0 {
		frames = strings.Join(cfg.FrameAncestors, " ")
		xfo = ""
	}
	csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src " + img + "; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; " +
		"form-action 'self'; frame-ancestors " + frames + "; base-uri 'none'"
	return csp, xfo
}

func (c *Console) setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", c.csp)
	if c.xfo != "" {
		h.Set("X-Frame-Options", c.xfo)
	}
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// plainError answers status with msg in the layout, signed in or not.
func (c *Console) plainError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, nil, status, "error", errorView{Message: msg})
}

// errorView is the error page's data: a message, and the eKey the API
// answers for the same error ("" for the console's own refusals).
type errorView struct {
	Message string
	Key     string
}

// fail answers err as the error page, with the status, message and eKey
// the API answers (problem).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *consoleSession, err error) {
	p := c.problem(r, err)
	c.renderProblem(w, r, s, "error", p.errorView, p)
}

// shownProblem is an error as a page shows it.
type shownProblem struct {
	Status     int
	RetryAfter int // the API's Retry-After, in seconds; 0 for none
	errorView
}

// problem is err as the API answers it (httpapi.ProblemOf: the error
// table's status and eKey, its message in r's language), and a line of the
// console's own for what a person does next where the status calls for one.
// Unexpected errors are logged, and answered with the API's generic
// message; a sign-in limit's message is the console's text of it.
func (c *Console) problem(r *http.Request, err error) shownProblem {
	p := httpapi.ProblemOf(r.Context(), err)
	if p.Unexpected {
		c.cfg.Logger.ErrorContext(r.Context(), "console: unexpected error", slog.String("path", r.URL.Path), slog.Any("error", err))
	}
	msg := c.localizer(r).Write(p.Message)
	var ie *deskkit.InputError
	msg = sentence(msg, !errors.As(err, &ie))
	switch {
	case p.Status == http.StatusUnauthorized:
		msg = joinSentences(msg, c.tr(r, "Sign in again."))
	case p.Status == http.StatusTooManyRequests && p.RetryAfter > 0:
		msg = joinSentences(msg, c.tr(r, "Try again in %s.", deskkit.DurationText(time.Duration(p.RetryAfter)*time.Second)))
	}
	return shownProblem{Status: p.Status, RetryAfter: p.RetryAfter, errorView: errorView{Message: msg, Key: p.Key}}
}

// joinSentences writes b after a, with a space unless a ends with a
// full-width mark (Chinese text takes none after 。 or ？).
func joinSentences(a, b string) string {
	if last, _ := utf8.DecodeLastRuneInString(a); last >= 0x2E80 {
		return a + b
	}
	return a + " " + b
}

// capital is s with its first letter in upper case when its first word is
// lower-case letters alone: "a Feishu robot URL" but not "projectId must".
func capital(s string) string {
	if word, _, _ := strings.Cut(s, " "); word != "" && strings.IndexFunc(word, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// sentence makes s end with a full stop ("。" after Chinese, Japanese or
// Korean) and, when upper is set, start upper case: only when its first
// word is a plain lower-case word, never a field name (projectId,
// verificationCode stay as the API spells them). An input error starts
// with its field whatever the field's case: its caller passes false.
func sentence(s string, upper bool) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	if upper {
		s = capital(s)
	}
	last, _ := utf8.DecodeLastRuneInString(s)
	switch {
	case strings.ContainsRune(".?!。？！", last):
	case last >= 0x2E80:
		s += "。"
	default:
		s += "."
	}
	return s
}

// homePage is the console's start page.
func (c *Console) homePage(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	c.render(w, r, s, http.StatusOK, "home", c.navFor(s))
}

// navFor is what the navigation offers s: the registered sections within
// its scopes, Channels to admins only (the API refuses the rest anyway).
func (c *Console) navFor(s *consoleSession) sections {
	n := c.sections
	n.Trash = n.Trash && s.may(ScopeTrash)
	n.Channels = n.Channels && s.may(ScopeChannels) && s.Principal.Admin
	n.Profile = n.Profile && s.may(ScopeProfile)
	return n
}

// names asks Config.Names for the names of p's user and tenant, once,
// when a session opens: "" for what it does not give (the ids are shown).
// Names longer than the session's columns are cut.
func (c *Console) names(ctx context.Context, p deskkit.Principal) (user, tenant string) {
	if c.cfg.Names == nil {
		return "", ""
	}
	user, tenant, err := c.cfg.Names.Names(ctx, p)
	if err != nil {
		c.cfg.Logger.WarnContext(ctx, "console: names of the session's user and tenant", slog.Any("error", err))
		return "", ""
	}
	return cut(user, maxNameRunes), cut(tenant, maxNameRunes)
}

// maxNameRunes is the most of a name a session keeps.
const maxNameRunes = 200

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// nameSession fills the names the header shows for s, each after its
// label (User: Ann Lee · Tenant: Acme): the session's, or the ids.
func (c *Console) nameSession(r *http.Request, s *consoleSession) {
	if s.UserName == "" {
		s.UserName = strconv.FormatInt(s.Principal.UserID, 10)
	}
	if s.TenantName == "" {
		s.TenantName = strconv.FormatInt(s.Principal.TenantID, 10)
	}
}

// projectNames asks Config.Projects for the names of ids in tenant; nil
// without the hook or on an error (logged).
func (c *Console) projectNames(ctx context.Context, tenant int64, ids []int64) map[int64]string {
	if c.cfg.Projects == nil || len(ids) == 0 {
		return nil
	}
	names, err := c.cfg.Projects.ProjectNames(ctx, tenant, ids)
	if err != nil {
		c.cfg.Logger.WarnContext(ctx, "console: project names", slog.Any("error", err))
		return nil
	}
	return names
}
