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
	"time"

	"github.com/deskkit/deskkit"
)

// Session is a signed-in person's console session: the principal every
// page acts for, found again on each request from the token the session
// signed in with.
type Session struct {
	// Principal is who the session acts for: the principal the sign-in
	// token names now (its user's current admin flag), exactly what the
	// API would answer for that token.
	Principal deskkit.Principal
	// CSRF is the token every form that changes something carries in its
	// field "csrf" (the layout's template "csrf" writes it).
	CSRF      string
	ExpiresAt time.Time
	idHash    string
}

// PageFunc is a signed-in page: s is the session, its principal checked
// against the directory on this request, and for unsafe methods the CSRF
// token already checked.
type PageFunc func(w http.ResponseWriter, r *http.Request, s *Session)

// maxFormBytes bounds a console form's body.
const maxFormBytes = 64 << 10

// errNoSession is a request without a live session.
var errNoSession = errors.New("console: no session")

// page registers a signed-in page at pattern (an http.ServeMux pattern
// with its method). Without a live session a GET goes to the sign-in page
// and comes back after it; other methods are refused.
func (c *Console) page(pattern string, h PageFunc) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if err != nil {
			c.signedOut(w, r, err)
			return
		}
		if !safeMethod(r.Method) {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				c.render(w, r, s, http.StatusBadRequest, "error", errorView{Message: "The form could not be read."})
				return
			}
			if !validCSRF(s, r.PostForm.Get("csrf")) {
				c.render(w, r, s, http.StatusForbidden, "error", errorView{
					Message: "The form's security token is missing or wrong, so nothing was changed. Reload the page and try again.",
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

// signedOut answers a request to a signed-in page without a session.
func (c *Console) signedOut(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, errNoSession) && !errors.Is(err, deskkit.ErrUnauthenticated) {
		c.fail(w, r, nil, err)
		return
	}
	if _, cerr := r.Cookie(sessionCookieName(r)); cerr == nil {
		c.clearSessionCookie(w, r)
	}
	if errors.Is(err, deskkit.ErrUnauthenticated) {
		setFlash(w, r, "Your session ended: the token it signed in with was revoked or has expired.")
	}
	if safeMethod(r.Method) {
		redirect(w, r, Prefix+"signin?next="+url.QueryEscape(r.URL.RequestURI()))
		return
	}
	c.render(w, r, nil, http.StatusUnauthorized, "error", errorView{Message: "You are signed out, so nothing was changed. Sign in and try again."})
}

// sessionCookieName is the session cookie's name: with the __Host- prefix
// under TLS, which makes browsers insist on Secure, Path=/ and no Domain.
func sessionCookieName(r *http.Request) string {
	if r.TLS != nil {
		return "__Host-deskkit-console"
	}
	return "deskkit-console"
}

// sessionRow is a row of deskkit_console_sessions.
type sessionRow struct {
	IDHash    string `bun:"id_hash"`
	TokenHash string `bun:"token_hash"`
	TenantID  int64  `bun:"tenant_id"`
	UserID    int64  `bun:"user_id"`
	CreatedMS int64  `bun:"created_ms"`
	ExpiresMS int64  `bun:"expires_ms"`
}

// session finds r's live session and checks its token again: a revoked or
// expired token ends the session (the row is deleted).
func (c *Console) session(r *http.Request) (*Session, error) {
	ck, err := r.Cookie(sessionCookieName(r))
	if err != nil {
		return nil, errNoSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(raw) != sessionIDBytes {
		return nil, errNoSession
	}
	ctx := r.Context()
	idHash := hashHex(raw)
	var row sessionRow
	err = c.cfg.DB.NewRaw(`SELECT id_hash, token_hash, tenant_id, user_id, created_ms, expires_ms
FROM deskkit_console_sessions WHERE id_hash = ? AND expires_ms > ?`, idHash, c.cfg.Now().UnixMilli()).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("console: read session: %w", err)
	}
	p, err := c.cfg.Authenticator.AuthenticateHash(ctx, row.TokenHash)
	if err == nil && (p.TenantID != row.TenantID || p.UserID != row.UserID) {
		err = fmt.Errorf("console: the session's token names another user now: %w", deskkit.ErrUnauthenticated)
	}
	if errors.Is(err, deskkit.ErrUnauthenticated) {
		if derr := c.deleteSession(ctx, idHash); derr != nil {
			return nil, derr
		}
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("console: authenticate session: %w", err)
	}
	return &Session{Principal: p, CSRF: csrfToken(raw), ExpiresAt: time.UnixMilli(row.ExpiresMS).UTC(), idHash: idHash}, nil
}

// sessionIDBytes is the size of a session id: 256 random bits.
const sessionIDBytes = 32

// startSession opens a session for the principal p of the token whose
// hash is tokenHash and sets its cookie.
func (c *Console) startSession(ctx context.Context, w http.ResponseWriter, r *http.Request, p deskkit.Principal, tokenHash string) error {
	raw := make([]byte, sessionIDBytes)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("console: random session id: %w", err)
	}
	// A session the browser held already ends: one browser, one session,
	// and an id planted before sign-in (session fixation) never gains rights.
	if ck, err := r.Cookie(sessionCookieName(r)); err == nil {
		if old, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil && len(old) == sessionIDBytes {
			if err := c.deleteSession(ctx, hashHex(old)); err != nil {
				return err
			}
		}
	}
	now := c.cfg.Now()
	expires := now.Add(c.cfg.SessionTTL)
	_, err := c.cfg.DB.NewRaw(`INSERT INTO deskkit_console_sessions (id_hash, token_hash, tenant_id, user_id, created_ms, expires_ms)
VALUES (?, ?, ?, ?, ?, ?)`, hashHex(raw), tokenHash, p.TenantID, p.UserID, now.UnixMilli(), expires.UnixMilli()).Exec(ctx)
	if err != nil {
		return fmt.Errorf("console: store session: %w", err)
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookieName(r),
		Value:    base64.RawURLEncoding.EncodeToString(raw),
		Path:     "/",
		MaxAge:   int(c.cfg.SessionTTL / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
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
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
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
func validCSRF(s *Session, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
