package console

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/limiter"
)

// limitsTable holds the sign-in limits.
const limitsTable = "deskkit_console_limits"

// authRoutes registers sign-in, the one-time link and sign-out.
// Without an Authenticator the sign-in page only says where to come from.
func (c *Console) authRoutes() {
	c.mux.HandleFunc("GET "+c.base+"signin", c.signInPage)
	if c.cfg.Authenticator != nil {
		c.mux.HandleFunc("POST "+c.base+"signin", c.signIn)
		c.mux.HandleFunc("GET "+c.base+"link", c.linkPage)
		c.mux.HandleFunc("POST "+c.base+"link", c.redeemLink)
	}
	c.page("", "POST "+c.base+"signout", c.signOut)
}

// signInView is the sign-in page's data.
type signInView struct {
	Next         string
	Tokens       bool   // token sign-in is on
	TokenCommand string // how to get a token (Config.TokenCommand)
	LinkCommand  string // how to get a one-time link (Config.LinkCommand)
}

func (c *Console) signInView(next string) signInView {
	return signInView{Next: next, Tokens: c.cfg.Authenticator != nil, TokenCommand: c.cfg.TokenCommand, LinkCommand: c.cfg.LinkCommand}
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, err := c.session(r); err == nil {
		redirect(w, r, c.safeNext(r.URL.Query().Get("next")))
		return
	}
	c.render(w, r, nil, http.StatusOK, "signin", c.signInView(c.safeNext(r.URL.Query().Get("next"))))
}

// signIn signs in with a pasted bearer token, authenticated by the API's
// Authenticator.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.plainError(w, r, http.StatusBadRequest, c.tr(r, "The form could not be read."))
		return
	}
	next := c.safeNext(r.PostForm.Get("next"))
	again := func(status int, msg string) {
		c.renderMsg(w, r, nil, status, "signin", c.signInView(next), msg)
	}
	refused := func(err error) {
		c.renderProblem(w, r, nil, "signin", c.signInView(next), c.problem(r, err))
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" {
		again(http.StatusBadRequest, c.tr(r, "Paste a bearer token to sign in."))
		return
	}
	ctx := r.Context()
	if err := c.holdInvalid(ctx, r); err != nil {
		refused(err)
		return
	}
	p, err := c.cfg.Authenticator.Authenticate(ctx, token)
	if errors.Is(err, deskkit.ErrUnauthenticated) {
		err = c.takeInvalid(ctx, r)
	}
	if errors.Is(err, deskkit.ErrUnauthenticated) {
		again(http.StatusUnauthorized, c.tr(r, "This token is not valid: it is mistyped, revoked or expired."))
		return
	}
	if err == nil {
		err = c.takeUserAttempt(ctx, p.TenantID, p.UserID)
	}
	if err != nil {
		refused(err)
		return
	}
	p, err = c.current(ctx, p)
	if err == nil {
		err = c.open(ctx, w, r, p, c.cfg.TokenHash(token), "", "", nil)
	}
	if errors.Is(err, errRefused) {
		again(http.StatusForbidden, c.tr(r, msgNotAllowed))
		return
	} else if err != nil {
		refused(err)
		return
	}
	redirect(w, r, next)
}

// open starts a session for p, the host's current principal (current),
// of the token whose hash is tokenHash, or of a portal link's scopes,
// within the tenant's limit of sessions, and purges what has expired. use,
// if not nil, runs in the limit's transaction: the link the session comes
// from, used up (errLinkUsed if another request used it first), so that a
// refusal by the limit leaves the link unused.
func (c *Console) open(ctx context.Context, w http.ResponseWriter, r *http.Request, p deskkit.Principal, tokenHash, scopes, returnURL string, use func(context.Context, bun.Tx) error) error {
	now := c.cfg.Now().UnixMilli()
	var limits []limiter.Limit
	if n := c.cfg.SignInsPerTenant; n > 0 {
		limits = append(limits, limiter.Limit{
			Key: "tenant:" + strconv.FormatInt(p.TenantID, 10), Max: n, Window: c.cfg.SignInWindow,
			Msg: deskkit.Textf(text("at most %d console sign-ins per tenant every %s"), n, deskkit.DurationText(c.cfg.SignInWindow)),
		})
	}
	if len(limits) > 0 || use != nil {
		err := deskkit.RunInTx(ctx, c.cfg.DB, nil, func(ctx context.Context, tx bun.Tx) error {
			if len(limits) > 0 {
				if err := limiter.Take(ctx, tx, limitsTable, now, limits); err != nil {
					return err
				}
			}
			if use != nil {
				return use(ctx, tx)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := c.startSession(ctx, w, r, p, tokenHash, scopes, returnURL); err != nil {
		return err
	}
	c.purgeExpired(ctx, now)
	return nil
}

// purgeExpired deletes sessions, links and limit windows that have ended:
// at each sign-in, which is when rows are added. A failure is logged; the
// rows are dead either way.
func (c *Console) purgeExpired(ctx context.Context, now int64) {
	for _, q := range []string{
		`DELETE FROM deskkit_console_sessions WHERE expires_ms <= ?`,
		`DELETE FROM deskkit_console_links WHERE expires_ms <= ?`,
		`DELETE FROM deskkit_console_portal_links WHERE expires_ms <= ?`,
	} {
		if _, err := c.cfg.DB.NewRaw(q, now).Exec(ctx); err != nil {
			c.cfg.Logger.WarnContext(ctx, "console: purge expired rows", slog.Any("error", err))
			return
		}
	}
	if _, err := limiter.Purge(ctx, c.cfg.DB, limitsTable, now); err != nil {
		c.cfg.Logger.WarnContext(ctx, "console: purge expired rows", slog.Any("error", err))
	}
}

// holdInvalid refuses a token sign-in or one-time link from a client
// address that has spent its invalid attempts (SignInsPerClient per
// SignInWindow) before the token or link is looked up, so that one address
// guesses at most that many times a window. It counts nothing: only an
// invalid attempt does (takeInvalid), and a valid token or link is limited
// per user (takeUserAttempt), so that nobody's garbage, from however many
// addresses, refuses another client's valid token. The limits are in the
// database, so that they hold across replicas; the address is the
// client's (clientAddress): the connection's, or behind
// Config.TrustedProxies the one they give.
func (c *Console) holdInvalid(ctx context.Context, r *http.Request) error {
	limits := c.invalidLimits(r)
	return deskkit.RunInTx(ctx, c.cfg.DB, nil, func(ctx context.Context, tx bun.Tx) error {
		return limiter.Hold(ctx, tx, limitsTable, c.cfg.Now().UnixMilli(), limits[0])
	})
}

// takeInvalid counts an invalid token or one-time link against its
// client's address and against all clients' invalid attempts together
// (SignInsGlobal), and answers deskkit.ErrUnauthenticated, or the refusal
// of a limit that is spent. The overall limit refuses invalid attempts
// only: once it is spent they answer 429 instead of 401 for the rest of
// the window, while valid tokens and links still open sessions.
func (c *Console) takeInvalid(ctx context.Context, r *http.Request) error {
	limits := c.invalidLimits(r)
	err := deskkit.RunInTx(ctx, c.cfg.DB, nil, func(ctx context.Context, tx bun.Tx) error {
		return limiter.Take(ctx, tx, limitsTable, c.cfg.Now().UnixMilli(), limits)
	})
	if err != nil {
		return err
	}
	return deskkit.ErrUnauthenticated
}

// invalidLimits are the limits of invalid token sign-ins and one-time
// links: the client address's first, then all clients'.
func (c *Console) invalidLimits(r *http.Request) []limiter.Limit {
	w := c.cfg.SignInWindow
	return []limiter.Limit{
		{Key: "client:" + clientAddress(r), Max: c.cfg.SignInsPerClient, Window: w,
			Msg: deskkit.Textf(text("at most %d sign-in attempts from one address every %s"), c.cfg.SignInsPerClient, deskkit.DurationText(w))},
		{Key: "global", Max: c.cfg.SignInsGlobal, Window: w,
			Msg: deskkit.Plain(text("too many sign-in attempts to this server just now"))},
	}
}

// safeNext is where to go after signing in: a path of the console, never
// another site ("//evil.example", "https://...") nor an unclean path.
func (c *Console) safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.Scheme != "" || u.Host != "" || u.User != nil ||
		!strings.HasPrefix(u.Path, c.base) || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) ||
		strings.HasPrefix(u.Path, c.base+"signin") || strings.HasPrefix(u.Path, c.base+"link") {
		return c.base
	}
	r := &http.Request{URL: u}
	if !cleanPath(r) {
		return c.base
	}
	return u.RequestURI()
}

// signOut ends the session in the database and clears its cookie.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s *consoleSession) {
	if err := c.deleteSession(r.Context(), s.idHash); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.clearSessionCookie(w, r)
	setFlash(w, r, c.tr(r, "You are signed out."))
	redirect(w, r, c.base+"signin")
}

// One-time links.
//
// server token -console stores a link (CreateLink) and prints its URL. The
// link's GET only shows a page, so that a mail scanner or a preview that
// fetches it does not use it up; that page POSTs the code (console.js
// submits the form at once; without script a person presses the button).
// The POST comes from the console's own page, so the session cookie it
// sets, SameSite=Strict, goes with the redirect after it: a chain of
// redirects started by a link in another site would go without it.

// linkCodeBytes is the size of a link's code: 256 random bits.
const linkCodeBytes = 32

// LinkPath is the path of the one-time link with code, to append to the
// server's base URL,
// under DefaultBasePath; Console.LinkPath is the same under its BasePath.
func LinkPath(code string) string {
	return DefaultBasePath + "link?code=" + url.QueryEscape(code)
}

// LinkPath is the path of the one-time link with code under c's BasePath.
func (c *Console) LinkPath(code string) string {
	return c.base + "link?code=" + url.QueryEscape(code)
}

// CreateLink stores a one-time sign-in link for the token whose hash is
// tokenHash, valid for ttl (DefaultLinkTTL if 0) from now, and returns its
// code, which only the link carries: the database keeps its SHA-256.
func CreateLink(ctx context.Context, db bun.IDB, tokenHash string, now time.Time, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	raw := make([]byte, linkCodeBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("console: random link code: %w", err)
	}
	code := base64.RawURLEncoding.EncodeToString(raw)
	_, err := db.NewRaw(`INSERT INTO deskkit_console_links (code_hash, token_hash, created_ms, expires_ms) VALUES (?, ?, ?, ?)`,
		hashHex([]byte(code)), tokenHash, now.UnixMilli(), now.Add(ttl).UnixMilli()).Exec(ctx)
	if err != nil {
		return "", fmt.Errorf("console: store link: %w", err)
	}
	return code, nil
}

// linkView is the link page's data.
type linkView struct {
	Code string
}

func (c *Console) linkPage(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	if code == "" {
		c.plainError(w, r, http.StatusBadRequest, c.tr(r, "This sign-in link has no code. Ask for a new one (server token -console)."))
		return
	}
	c.render(w, r, nil, http.StatusOK, "link", linkView{Code: code})
}

// redeemLink uses up a link and signs in with its token: once the
// client's address may still try (holdInvalid), the link is looked up (an
// unknown one counts against the address, takeInvalid), its user's limit
// taken, the token and the host are asked before the link is used, in the transaction of the tenant's limit, by a statement
// that fails if another request used it first; so two POSTs of one link
// open one session between them, and a refusal leaves the link unused.
func (c *Console) redeemLink(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		c.plainError(w, r, http.StatusBadRequest, c.tr(r, "The form could not be read."))
		return
	}
	ctx := r.Context()
	if err := c.holdInvalid(ctx, r); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	codeHash := hashHex([]byte(r.PostForm.Get("code")))
	var tokenHash string
	err := c.cfg.DB.NewRaw(`SELECT token_hash FROM deskkit_console_links WHERE code_hash = ? AND expires_ms > ?`,
		codeHash, c.cfg.Now().UnixMilli()).Scan(ctx, &tokenHash)
	if errors.Is(err, sql.ErrNoRows) {
		if err := c.takeInvalid(ctx, r); !errors.Is(err, deskkit.ErrUnauthenticated) {
			c.fail(w, r, nil, err)
			return
		}
		c.plainError(w, r, http.StatusUnauthorized, c.tr(r, msgLinkInvalid))
		return
	}
	if err != nil {
		c.fail(w, r, nil, fmt.Errorf("console: read link: %w", err))
		return
	}
	p, err := c.cfg.Authenticator.AuthenticateHash(ctx, tokenHash)
	if err == nil {
		err = c.takeUserAttempt(ctx, p.TenantID, p.UserID)
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if p, err = c.current(ctx, p); err == nil {
		err = c.open(ctx, w, r, p, tokenHash, "", "", func(ctx context.Context, tx bun.Tx) error {
			return useRow(ctx, tx, `DELETE FROM deskkit_console_links WHERE code_hash = ? AND expires_ms > ?`, codeHash, c.cfg.Now().UnixMilli())
		})
	}
	switch {
	case errors.Is(err, errRefused):
		c.plainError(w, r, http.StatusForbidden, c.tr(r, msgNotAllowed))
		return
	case errors.Is(err, errLinkUsed):
		c.plainError(w, r, http.StatusUnauthorized, c.tr(r, msgLinkInvalid))
		return
	case err != nil:
		c.fail(w, r, nil, err)
		return
	}
	redirect(w, r, c.base)
}

const msgLinkInvalid = "This sign-in link is not valid: it was used already, has expired (links last 10 minutes) or is mistyped. Ask for a new one."
