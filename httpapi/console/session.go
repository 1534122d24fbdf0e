package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/deskkit/deskkit"
)

// Session is a signed-in person's console session: the principal every
// page acts for, found again on each request from the token the session
// signed in with.
type consoleSession struct {
	// Principal is who the session acts for on this request: its user as
	// Config.Principals answers now, with the admin flag only when the
	// token (as the Authenticator answers it now) or the portal link has
	// it too.
	Principal deskkit.Principal
	// Scopes are the page groups the session may open: every one for a
	// token's session, the link's for a portal session.
	Scopes []Scope
	// Portal is a session opened by a portal link.
	Portal bool
	// UserName and TenantName are what the header shows (Config.Names),
	// the ids when no name is known.
	UserName, TenantName string
	// ReturnURL is the host's page the header's "Back to <product>" goes
	// to: the one the portal links carried, shown only while its origin is
	// one of Config.HostOrigins; "" for none.
	ReturnURL string
	// CSRF is the token every form that changes something carries in its
	// field "csrf" (the layout's template "csrf" writes it).
	CSRF      string
	ExpiresAt time.Time
	idHash    string
}

// pageFunc is a signed-in page: s is the session, its principal checked
// against the directory on this request, and for unsafe methods the CSRF
// token already checked.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *consoleSession)

// maxFormBytes bounds a console form's body.
const maxFormBytes = 64 << 10

// errNoSession is a request without a live session.
var errNoSession = errors.New("console: no session")

// page registers a signed-in page of scope at pattern (an http.ServeMux
// pattern with its method); scope "" is a page of every session. Without a
// live session a GET goes to the sign-in page and comes back after it;
// other methods are refused. A session without scope gets a 403 page.
func (c *Console) page(scope Scope, pattern string, h pageFunc) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if err != nil {
			c.signedOut(w, r, err)
			return
		}
		if r, err = c.withLocales(r, s.Principal); err != nil {
			c.fail(w, r, s, err)
			return
		}
		r = c.withHostZone(r, s.Principal)
		if scope != "" && !s.may(scope) {
			c.render(w, r, s, http.StatusForbidden, "error", errorView{Message: c.tr(r, "This page is not part of what you were given access to.")})
			return
		}
		if !safeMethod(r.Method) {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				c.render(w, r, s, http.StatusBadRequest, "error", errorView{Message: c.tr(r, "The form could not be read.")})
				return
			}
			if !validCSRF(s, r.PostForm.Get("csrf")) {
				c.render(w, r, s, http.StatusForbidden, "error", errorView{
					Message: c.tr(r, "The form's security token is missing or wrong, so nothing was changed. Reload the page and try again."),
				})
				return
			}
		}
		h(w, r, s)
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead
}

// signedOut answers a request to a signed-in page without a session. A
// portal session that ended (expired, or refused by the host) answers a
// page that says so, with the way back to the host when its links gave
// one: never the token sign-in page, which a portal's reader has no token
// for.
func (c *Console) signedOut(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, errNoSession) && !errors.Is(err, deskkit.ErrUnauthenticated) {
		c.fail(w, r, nil, err)
		return
	}
	if _, cerr := r.Cookie(sessionCookieName(r)); cerr == nil {
		c.clearSessionCookie(w, r)
	}
	if ended, ok := errors.AsType[*sessionEnded](err); ok && ended.portal {
		msg := c.tr(r, "Your session has expired.")
		if errors.Is(err, errNotAllowed) {
			msg = c.tr(r, "Your session ended: you may no longer use these pages.")
		}
		c.renderEnded(w, r, http.StatusUnauthorized, c.tr(r, "Session ended"), msg, ended.returnURL)
		return
	}
	if errors.Is(err, errNotAllowed) {
		setFlash(w, r, c.tr(r, "Your session ended: you may no longer use these pages."))
	} else if errors.Is(err, deskkit.ErrUnauthenticated) {
		setFlash(w, r, c.tr(r, "Your session ended: the token it signed in with was revoked or has expired."))
	}
	if safeMethod(r.Method) {
		redirect(w, r, c.base+"signin?next="+url.QueryEscape(r.URL.RequestURI()))
		return
	}
	c.render(w, r, nil, http.StatusUnauthorized, "error", errorView{Message: c.tr(r, "You are signed out, so nothing was changed. Sign in and try again.")})
}

// sessionCookieName is the session cookie's name: with the __Host- prefix
// when the client came over https (secure), which makes browsers insist on
// Secure, Path=/ and no Domain.
func sessionCookieName(r *http.Request) string {
	if secure(r) {
		return "__Host-deskkit-console"
	}
	return "deskkit-console"
}

// sessionRow is a row of deskkit_console_sessions.
type sessionRow struct {
	IDHash     string `bun:"id_hash"`
	TokenHash  string `bun:"token_hash"`
	TenantID   int64  `bun:"tenant_id"`
	UserID     int64  `bun:"user_id"`
	Admin      int    `bun:"admin"`
	Scopes     string `bun:"scopes"`
	UserName   string `bun:"user_name"`
	TenantName string `bun:"tenant_name"`
	CreatedMS  int64  `bun:"created_ms"`
	ExpiresMS  int64  `bun:"expires_ms"`
	ReturnURL  string `bun:"return_url"`
}

// sessionEnded is a session that ended on this request (expired, or
// refused): its row is deleted. It wraps why (errNoSession for an expiry).
type sessionEnded struct {
	err       error
	portal    bool   // opened by a portal link
	returnURL string // the host's page it went back to, "" for none
}

func (e *sessionEnded) Error() string { return e.err.Error() }
func (e *sessionEnded) Unwrap() error { return e.err }

// may tells whether s may open pages of scope.
func (s *consoleSession) may(scope Scope) bool {
	return slices.Contains(s.Scopes, scope)
}

// errNotAllowed is the host's refusal (Config.Principals or Allow), which
// ends a session.
var errNotAllowed = fmt.Errorf("console: the host no longer allows this principal: %w", deskkit.ErrUnauthenticated)

// session finds r's live session and checks its principal again: a
// revoked or expired token ends the session (the row is deleted), and so
// does a refusal of Config.Principals or Config.Allow. The session acts
// with the admin flag only when its token or link had it and Principals
// answers it now.
func (c *Console) session(r *http.Request) (*consoleSession, error) {
	ck, err := r.Cookie(sessionCookieName(r))
	if err != nil {
		return nil, errNoSession
	}
	raw, ok := decodeStrict(ck.Value)
	if !ok || len(raw) != sessionIDBytes {
		return nil, errNoSession
	}
	ctx := r.Context()
	idHash := hashHex(raw)
	row, err := c.readSession(ctx, idHash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, err
	}
	ended := func(why error) error {
		return &sessionEnded{err: why, portal: row.TokenHash == "", returnURL: c.returnURL(row.ReturnURL)}
	}
	if row.ExpiresMS <= c.cfg.Now().UnixMilli() {
		// Read to say "expired" and the way back rather than "who are
		// you?"; sign-ins purge the rows that nobody comes back for.
		if err := c.deleteSession(ctx, idHash); err != nil {
			return nil, err
		}
		return nil, ended(errNoSession)
	}
	p := deskkit.Principal{TenantID: row.TenantID, UserID: row.UserID, Admin: row.Admin != 0}
	if row.TokenHash != "" {
		if c.cfg.Authenticator == nil {
			err = fmt.Errorf("console: token sign-in is off: %w", deskkit.ErrUnauthenticated)
		} else {
			p, err = c.cfg.Authenticator.AuthenticateHash(ctx, row.TokenHash)
		}
		if err == nil && (p.TenantID != row.TenantID || p.UserID != row.UserID) {
			err = fmt.Errorf("console: the session's token names another user now: %w", deskkit.ErrUnauthenticated)
		}
	}
	if err == nil {
		if p, err = c.current(ctx, p); errors.Is(err, errRefused) {
			c.cfg.Logger.InfoContext(ctx, "console: session ended by the host", "tenant", row.TenantID, "user", row.UserID, "reason", err.Error())
			err = errNotAllowed
		} else if err != nil {
			return nil, err
		}
	}
	if errors.Is(err, deskkit.ErrUnauthenticated) {
		if derr := c.deleteSession(ctx, idHash); derr != nil {
			return nil, derr
		}
		return nil, ended(err)
	}
	if err != nil {
		return nil, fmt.Errorf("console: authenticate session: %w", err)
	}
	return &consoleSession{Principal: p, Scopes: splitScopes(row.Scopes), Portal: row.TokenHash == "",
		UserName: row.UserName, TenantName: row.TenantName, ReturnURL: c.returnURL(row.ReturnURL),
		CSRF: csrfToken(raw), ExpiresAt: time.UnixMilli(row.ExpiresMS).UTC(), idHash: idHash}, nil
}

// sessionIDBytes is the size of a session id: 256 random bits.
const sessionIDBytes = 32

// readSession reads the session row whose id hashes to idHash, expired or
// not.
func (c *Console) readSession(ctx context.Context, idHash string) (sessionRow, error) {
	var row sessionRow
	err := c.cfg.DB.NewRaw(`SELECT id_hash, token_hash, tenant_id, user_id, admin, scopes, user_name, tenant_name, created_ms, expires_ms, return_url
FROM deskkit_console_sessions WHERE id_hash = ?`, idHash).Scan(ctx, &row)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return row, fmt.Errorf("console: read session: %w", err)
	}
	return row, err
}

// startSession opens a session for the principal p of the token whose
// hash is tokenHash, or ("" and scopes) of a portal link, going back to
// returnURL, and sets its cookie.
//
// A session the browser held already ends: one browser, one session, and
// an id planted before sign-in (session fixation) never gains rights. A
// portal link for the principal of the browser's live portal session (the
// same tenant, user and admin flag) opens a session holding that session's
// scopes and its own, so that a host's Trash and Webhooks buttons keep
// each other's pages open; its return URL, if it has none, is the old
// session's. A link for anyone else, and every token sign-in, replaces the
// session and keeps nothing of it. Either way the new session has a new
// id: scopes are never added to an id that existed before.
func (c *Console) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request, p deskkit.Principal, tokenHash, scopes, returnURL string) error {
	raw := make([]byte, sessionIDBytes)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("console: random session id: %w", err)
	}
	now := c.cfg.Now()
	if ck, err := r.Cookie(sessionCookieName(r)); err == nil {
		if old, ok := decodeStrict(ck.Value); ok && len(old) == sessionIDBytes {
			oldHash := hashHex(old)
			if tokenHash == "" {
				row, err := c.readSession(ctx, oldHash)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				if err == nil && row.TokenHash == "" && row.ExpiresMS > now.UnixMilli() &&
					row.TenantID == p.TenantID && row.UserID == p.UserID && row.Admin == boolInt(p.Admin) {
					scopes = joinScopes(append(splitScopes(row.Scopes), splitScopes(scopes)...))
					if returnURL == "" {
						returnURL = row.ReturnURL
					}
				}
			}
			if err := c.deleteSession(ctx, oldHash); err != nil {
				return err
			}
		}
	}
	userName, tenantName := c.names(ctx, p)
	expires := now.Add(c.cfg.SessionTTL)
	_, err := c.cfg.DB.NewRaw(`INSERT INTO deskkit_console_sessions (id_hash, token_hash, tenant_id, user_id, admin, scopes, user_name, tenant_name, created_ms, expires_ms, return_url)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, hashHex(raw), tokenHash, p.TenantID, p.UserID, boolInt(p.Admin), scopes, userName, tenantName,
		now.UnixMilli(), expires.UnixMilli(), returnURL).Exec(ctx)
	if err != nil {
		return fmt.Errorf("console: store session: %w", err)
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookieName(r),
		Value:    base64.RawURLEncoding.EncodeToString(raw),
		Path:     "/",
		MaxAge:   int(c.cfg.SessionTTL / time.Second),
		HttpOnly: true,
		Secure:   secure(r),
		SameSite: http.SameSiteStrictMode,
	})
	return nil
}

func (c *Console) deleteSession(ctx context.Context, idHash string) error {
	if _, err := c.cfg.DB.NewRaw(`DELETE FROM deskkit_console_sessions WHERE id_hash = ?`, idHash).Exec(ctx); err != nil {
		return fmt.Errorf("console: end session: %w", err)
	}
	return nil
}

func (c *Console) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode,
	})
}

// csrfToken is the session's CSRF token: an HMAC of a fixed label under the
// session id, so it needs no storage and the database (which holds only
// the id's hash) cannot tell it.
func csrfToken(sessionID []byte) string {
	m := hmac.New(sha256.New, sessionID)
	m.Write([]byte("deskkit console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validCSRF compares a form's token with the session's in constant time.
func validCSRF(s *consoleSession, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

// decodeStrict decodes s from unpadded base64url written the one way
// the console writes it: no padding, no line breaks (which the standard
// decoder skips), no other low bits in the last character.
func decodeStrict(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(s) != base64.RawURLEncoding.EncodedLen(len(b)) {
		return nil, false
	}
	return b, true
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
