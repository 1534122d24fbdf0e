package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/limiter"
)

// Scope is a group of pages a portal link opens: a session opened by a
// link for ScopeTrash sees the trash and nothing else of the console.
type Scope string

// The scopes. A scope names pages the console serves only when the
// service behind them is configured (Config.Trash, Channels, Verifier).
const (
	ScopeTrash    Scope = "trash"
	ScopeChannels Scope = "channels"
	ScopeProfile  Scope = "profile"
)

// scopesAll is what a session signed in with a token may open.
var scopesAll = []Scope{ScopeTrash, ScopeChannels, ScopeProfile}

// ErrNoSecret is PortalLink's answer when Config.Secret is not set.
var ErrNoSecret = errors.New("console: Config.Secret is not set, so portal links cannot be signed")

// portalClaims is what a portal link carries, signed: which row of
// deskkit_console_portal_links it is (its nonce) and, so that a forged or
// stale link is refused before the database is asked, when it expires.
type portalClaims struct {
	Nonce     string `json:"n"`
	ExpiresMS int64  `json:"e"`
	// ReturnURL is the host's page the session goes back to, checked
	// against Config.HostOrigins when the link was made. Signed, so that
	// the expired and used-link pages may offer it too.
	ReturnURL string `json:"r,omitempty"`
}

// PortalRequest is what a portal link opens: a session for Principal
// limited to Scopes (at least one), going back to ReturnURL.
type PortalRequest struct {
	Principal deskkit.Principal
	Scopes    []Scope
	// ReturnURL, optional, is the host's page the reader goes back to:
	// an absolute http or https URL whose origin (scheme, host and port,
	// exactly) is one of Config.HostOrigins. The console's header shows it
	// as "Back to <product>" (Config.ProductName), and so do the pages
	// that say a session ended or a link expired or was used. A URL of
	// another origin is refused when the link is made, never dropped
	// silently; a stored one whose origin has left Config.HostOrigins since
	// is not shown.
	ReturnURL string
}

// maxReturnURL is the longest ReturnURL a link takes, in bytes.
const maxReturnURL = 2048

// PortalLink mints a link that opens a console session for p limited to
// scopes (at least one): the path and query to append to the console's
// origin, such as "/console/portal?t=...". The host calls it, server-side,
// for its signed-in user (a "Manage webhooks" button) and sends the browser
// there at once: the link works once and for Config.PortalLinkTTL. The
// session it opens acts for p's user as Config.Principals answers on each
// request (as the API would for a token naming them; with the admin flag
// only if p has it too), is asked about through Config.Allow, and ends
// after Config.SessionTTL.
//
// Errors: ErrNoSecret without Config.Secret; an error wrapping
// deskkit.ErrInvalid for a principal without tenant or user, no scope, or
// a scope whose pages this console does not serve; a database error
// otherwise.
func (c *Console) PortalLink(ctx context.Context, p deskkit.Principal, scopes ...Scope) (string, error) {
	return c.PortalLinkFor(ctx, PortalRequest{Principal: p, Scopes: scopes})
}

// PortalLinkFor is PortalLink with the options of req: its ReturnURL too.
// A ReturnURL that breaks PortalRequest's rule is an error wrapping
// deskkit.ErrInvalid (a *deskkit.InputError naming returnUrl), and no link
// is made.
func (c *Console) PortalLinkFor(ctx context.Context, req PortalRequest) (string, error) {
	p, scopes := req.Principal, req.Scopes
	if c.cfg.Secret == nil {
		return "", ErrNoSecret
	}
	if p.TenantID < 1 || p.UserID < 1 {
		return "", fmt.Errorf("console: a portal link needs a principal with a tenant and a user: %w", deskkit.ErrInvalid)
	}
	if len(scopes) == 0 {
		return "", fmt.Errorf("console: a portal link needs at least one scope: %w", deskkit.ErrInvalid)
	}
	for _, s := range scopes {
		if !c.serves(s) {
			return "", fmt.Errorf("console: scope %q is not one this console serves (%s): %w", s, c.servedScopes(), deskkit.ErrInvalid)
		}
	}
	if req.ReturnURL != "" {
		if err := c.checkReturnURL(req.ReturnURL); err != nil {
			return "", err
		}
	}
	raw := make([]byte, linkCodeBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("console: random nonce: %w", err)
	}
	nonce := base64.RawURLEncoding.EncodeToString(raw)
	now := c.cfg.Now()
	expires := now.Add(c.cfg.PortalLinkTTL)
	_, err := c.cfg.DB.NewRaw(`INSERT INTO deskkit_console_portal_links (nonce_hash, tenant_id, user_id, admin, scopes, created_ms, expires_ms)
VALUES (?, ?, ?, ?, ?, ?, ?)`, hashHex([]byte(nonce)), p.TenantID, p.UserID, boolInt(p.Admin), joinScopes(scopes),
		now.UnixMilli(), expires.UnixMilli()).Exec(ctx)
	if err != nil {
		return "", fmt.Errorf("console: store portal link: %w", err)
	}
	return c.base + "portal?t=" + url.QueryEscape(c.signClaims(portalClaims{Nonce: nonce, ExpiresMS: expires.UnixMilli(), ReturnURL: req.ReturnURL})), nil
}

// signClaims writes claims as base64url(JSON) "." base64url(HMAC).
func (c *Console) signClaims(cl portalClaims) string {
	b, _ := json.Marshal(cl) // plain fields: cannot fail
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(c.mac(body))
}

func (c *Console) mac(body string) []byte {
	m := hmac.New(sha256.New, c.cfg.Secret)
	m.Write([]byte("deskkit console portal link\x00"))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// verifyClaims checks t's signature and expiry, and returns its claims.
func (c *Console) verifyClaims(t string) (portalClaims, bool) {
	cl, ok := c.signedClaims(t)
	return cl, ok && cl.ExpiresMS > c.cfg.Now().UnixMilli()
}

// signedClaims checks t's signature, not its expiry, and returns its
// claims.
func (c *Console) signedClaims(t string) (portalClaims, bool) {
	var cl portalClaims
	if c.cfg.Secret == nil {
		return cl, false
	}
	body, sig, ok := strings.Cut(t, ".")
	if !ok {
		return cl, false
	}
	// Strict base64: a link is accepted as it was minted, byte for byte,
	// not in another spelling of the same bytes (other low bits in the
	// last character, line breaks).
	got, ok := decodeStrict(sig)
	if !ok || !hmac.Equal(got, c.mac(body)) {
		return cl, false
	}
	b, ok := decodeStrict(body)
	if !ok || json.Unmarshal(b, &cl) != nil || cl.Nonce == "" {
		return portalClaims{}, false
	}
	return cl, true
}

// checkReturnURL checks a link's return URL by PortalRequest's rule.
func (c *Console) checkReturnURL(s string) error {
	return CheckReturnURL(s, c.cfg.HostOrigins)
}

// CheckReturnURL checks s as PortalLinkFor checks a PortalRequest's
// ReturnURL against hostOrigins (Config.HostOrigins): an absolute http or
// https URL of at most 2048 bytes, without user information, whose origin
// is exactly one of hostOrigins. A host checks a URL with it before it
// does anything else (the reference server's token command does); the
// error is a *deskkit.InputError naming returnUrl.
func CheckReturnURL(s string, hostOrigins []string) error {
	origin, ok := urlOrigin(s)
	if !ok {
		return deskkit.Invalid("returnUrl", "must be an absolute http or https URL of at most %d bytes, without user name or password", maxReturnURL)
	}
	if !slices.ContainsFunc(hostOrigins, func(o string) bool { return strings.EqualFold(o, origin) }) {
		if len(hostOrigins) == 0 {
			return deskkit.Invalid("returnUrl", "is not accepted: the console lists no host origins to return to (Config.HostOrigins)")
		}
		return deskkit.Invalid("returnUrl", "must be on one of the host's origins: %s", strings.Join(hostOrigins, ", "))
	}
	return nil
}

// urlOrigin is the origin (scheme://host[:port], lower case) of s, an
// absolute http or https URL without user information or control
// characters and at most maxReturnURL bytes long.
func urlOrigin(s string) (string, bool) {
	if len(s) > maxReturnURL || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' || r == '\\' }) {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" || u.Hostname() == "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// returnURL is s if a page may show it: its origin is still one of
// Config.HostOrigins; else "".
func (c *Console) returnURL(s string) string {
	if s == "" {
		return ""
	}
	if CheckReturnURL(s, c.cfg.HostOrigins) == nil {
		return s
	}
	return ""
}

// endedView is the page of a session or link that opens nothing (any
// more): what happened, and the way back to the host.
type endedView struct {
	Title, Message string
	Return         string // the host's page, "" when unknown
}

// renderEnded answers the page of a session or link that ended, signed
// out: no sign-in form (a portal's reader has no token), the way back to
// the host when its link named one.
func (c *Console) renderEnded(w http.ResponseWriter, r *http.Request, status int, title, msg, returnURL string) {
	c.render(w, r, nil, status, "ended", endedView{Title: title, Message: msg, Return: c.returnURL(returnURL)})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func joinScopes(ss []Scope) string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !slices.Contains(out, string(s)) {
			out = append(out, string(s))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// splitScopes reads a stored list; "" is every scope.
func splitScopes(s string) []Scope {
	if s == "" {
		return scopesAll
	}
	var out []Scope
	for p := range strings.SplitSeq(s, ",") {
		out = append(out, Scope(p))
	}
	return out
}

// serves tells whether the console registered the pages of scope s.
func (c *Console) serves(s Scope) bool {
	switch s {
	case ScopeTrash:
		return c.sections.Trash
	case ScopeChannels:
		return c.sections.Channels
	case ScopeProfile:
		return c.sections.Profile
	}
	return false
}

func (c *Console) servedScopes() string {
	var out []string
	for _, s := range scopesAll {
		if c.serves(s) {
			out = append(out, string(s))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// portalRoutes registers the portal link's page and its redemption.
func (c *Console) portalRoutes() {
	c.mux.HandleFunc("GET "+c.base+"portal", c.portalPage)
	c.mux.HandleFunc("POST "+c.base+"portal", c.redeemPortal)
}

// portalView is the portal link page's data.
type portalView struct {
	Token string
}

// portalPage only shows a page that POSTs the link's token, as the
// one-time link does: a prefetch does not use the link up, and the
// session cookie is set by a request of this site.
func (c *Console) portalPage(w http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("t")
	if _, ok := c.verifyClaims(t); !ok {
		c.linkEnded(w, r, t)
		return
	}
	c.render(w, r, nil, http.StatusOK, "portal", portalView{Token: t})
}

const msgPortalInvalid = "This link is not valid: it was used already, has expired or is mistyped."

// linkEnded answers a link that opens nothing, saying why as far as its
// signature lets the console tell: expired (signed, past its time), used
// (signed, its row gone) or not valid (anything else), with the way back
// to the host its signed claims name.
func (c *Console) linkEnded(w http.ResponseWriter, r *http.Request, t string) {
	cl, ok := c.signedClaims(t)
	switch {
	case !ok:
		c.renderEnded(w, r, http.StatusUnauthorized, c.tr(r, "Link not valid"), c.tr(r, msgPortalInvalid), "")
	case cl.ExpiresMS <= c.cfg.Now().UnixMilli():
		c.renderEnded(w, r, http.StatusUnauthorized, c.tr(r, "Link expired"), c.tr(r, "This link has expired: a link works for a short time after it is made."), cl.ReturnURL)
	default:
		c.renderEnded(w, r, http.StatusUnauthorized, c.tr(r, "Link used"), c.tr(r, "This link was used already: a link opens these pages once."), cl.ReturnURL)
	}
}

// portalRow is a row of deskkit_console_portal_links.
type portalRow struct {
	TenantID int64  `bun:"tenant_id"`
	UserID   int64  `bun:"user_id"`
	Admin    int    `bun:"admin"`
	Scopes   string `bun:"scopes"`
}

// errLinkUsed is a link another request used up meanwhile.
var errLinkUsed = errors.New("console: the link was used meanwhile")

// redeemPortal uses up a portal link and opens its session, checking in
// this order: the signature and expiry, which ask no database (an invalid
// link costs its sender's address one attempt of a limit of its own and
// nothing else); the link's row, read and kept; the user's limit of
// redemptions; the host (Config.Principals, then Allow); then, in one
// transaction, the tenant's limit of sessions and the link used up: its
// row is deleted by a statement that fails if another request deleted it
// first, so two POSTs of one link, on one replica or two, open one session
// between them. A refusal before that leaves the link as it was.
func (c *Console) redeemPortal(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.plainError(w, r, http.StatusBadRequest, c.tr(r, "The form could not be read."))
		return
	}
	ctx := r.Context()
	t := r.PostForm.Get("t")
	cl, ok := c.verifyClaims(t)
	if !ok {
		c.invalidLink(w, r, t)
		return
	}
	nonceHash := hashHex([]byte(cl.Nonce))
	var row portalRow
	err := c.cfg.DB.NewRaw(`SELECT tenant_id, user_id, admin, scopes FROM deskkit_console_portal_links WHERE nonce_hash = ? AND expires_ms > ?`,
		nonceHash, c.cfg.Now().UnixMilli()).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		c.invalidLink(w, r, t) // used already: its sender pays as a forger does
		return
	}
	if err != nil {
		c.fail(w, r, nil, fmt.Errorf("console: read portal link: %w", err))
		return
	}
	if err := c.takeUserAttempt(ctx, row.TenantID, row.UserID); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	p, err := c.current(ctx, deskkit.Principal{TenantID: row.TenantID, UserID: row.UserID, Admin: row.Admin != 0})
	if errors.Is(err, errRefused) {
		c.renderEnded(w, r, http.StatusForbidden, c.tr(r, "Not allowed"), c.tr(r, msgNotAllowed), cl.ReturnURL)
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	err = c.open(ctx, w, r, p, "", row.Scopes, c.returnURL(cl.ReturnURL), func(ctx context.Context, tx bun.Tx) error {
		return useRow(ctx, tx, `DELETE FROM deskkit_console_portal_links WHERE nonce_hash = ? AND expires_ms > ?`, nonceHash, c.cfg.Now().UnixMilli())
	})
	if errors.Is(err, errLinkUsed) {
		c.linkEnded(w, r, t)
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	redirect(w, r, c.firstPage(splitScopes(row.Scopes)))
}

// useRow runs a DELETE of one link's row, and answers errLinkUsed when it
// deleted none: another request, here or on another replica, used the
// link first.
func useRow(ctx context.Context, tx bun.Tx, query string, args ...any) error {
	res, err := tx.NewRaw(query, args...).Exec(ctx)
	if err != nil {
		return fmt.Errorf("console: use link: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("console: use link: %w", err)
	} else if n == 0 {
		return errLinkUsed
	}
	return nil
}

// invalidLink answers a portal link that opens nothing (forged, altered,
// expired, used): 401, after counting one attempt against the sender's
// address in a limit of its own (SignInsPerClient per SignInWindow), and
// 429 once that is spent. Valid links, limited per user, never pay for
// these.
func (c *Console) invalidLink(w http.ResponseWriter, r *http.Request, t string) {
	n, win := c.cfg.SignInsPerClient, c.cfg.SignInWindow
	limits := []limiter.Limit{{Key: "invalid-link:" + clientAddress(r), Max: n, Window: win,
		Msg: deskkit.Textf(text("at most %d invalid links from one address every %s"), n, deskkit.DurationText(win))}}
	err := deskkit.RunInTx(r.Context(), c.cfg.DB, nil, func(ctx context.Context, tx bun.Tx) error {
		return limiter.Take(ctx, tx, limitsTable, c.cfg.Now().UnixMilli(), limits)
	})
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	c.linkEnded(w, r, t)
}

// takeUserAttempt counts a redemption of a valid portal link against its
// user's limit (SignInsPerUser per SignInWindow), whatever the client's
// address: 25 people behind one address each open their own links.
func (c *Console) takeUserAttempt(ctx context.Context, tenantID, userID int64) error {
	n, win := c.cfg.SignInsPerUser, c.cfg.SignInWindow
	limits := []limiter.Limit{{Key: "user:" + strconv.FormatInt(tenantID, 10) + ":" + strconv.FormatInt(userID, 10), Max: n, Window: win,
		Msg: deskkit.Textf(text("at most %d console sign-ins per user every %s"), n, deskkit.DurationText(win))}}
	return deskkit.RunInTx(ctx, c.cfg.DB, nil, func(ctx context.Context, tx bun.Tx) error {
		return limiter.Take(ctx, tx, limitsTable, c.cfg.Now().UnixMilli(), limits)
	})
}

// errRefused is the host's refusal (Config.Principals, Config.Allow) at
// sign-in.
var errRefused = errors.New("console: refused by the host")

const msgNotAllowed = "You may not use these pages (any more)."

// firstPage is where a new portal session starts: its one scope's page,
// or the home page listing several.
func (c *Console) firstPage(scopes []Scope) string {
	if len(scopes) == 1 {
		return c.base + string(scopes[0])
	}
	return c.base
}

// current asks the host who p's user is now: Config.Principals, then
// Config.Allow with its answer. The principal it returns is Principals'
// with the admin flag only when p (the link's, the token's) has it too. A
// refusal wraps errRefused; an outage (deskkit.ErrUnavailable) and the
// other errors of Principals come back as they are.
func (c *Console) current(ctx context.Context, p deskkit.Principal) (deskkit.Principal, error) {
	cur, err := c.cfg.Principals.Principal(ctx, p.TenantID, p.UserID)
	switch {
	case errors.Is(err, deskkit.ErrUnavailable):
		return deskkit.Principal{}, err
	case errors.Is(err, deskkit.ErrUnauthenticated), errors.Is(err, deskkit.ErrForbidden), errors.Is(err, deskkit.ErrNotFound):
		return deskkit.Principal{}, fmt.Errorf("console: %s: %w", err.Error(), errRefused)
	case err != nil:
		return deskkit.Principal{}, fmt.Errorf("console: Config.Principals: %w", err)
	case cur.TenantID != p.TenantID || cur.UserID != p.UserID:
		return deskkit.Principal{}, fmt.Errorf("console: Config.Principals answered user %d of tenant %d for user %d of tenant %d: %w",
			cur.UserID, cur.TenantID, p.UserID, p.TenantID, errRefused)
	}
	cur.Admin = cur.Admin && p.Admin
	if c.cfg.Allow != nil {
		if err := c.cfg.Allow(ctx, cur); err != nil {
			if errors.Is(err, deskkit.ErrUnavailable) {
				return deskkit.Principal{}, err
			}
			return deskkit.Principal{}, fmt.Errorf("console: %s: %w", err.Error(), errRefused)
		}
	}
	return cur, nil
}
