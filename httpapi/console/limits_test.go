package console

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// redeemFrom posts portal token tok to the console's handler as a browser
// at client address addr would.
func (f *fixture) redeemFrom(addr, tok string) int {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/console/portal", strings.NewReader(url.Values{"t": {tok}}.Encode()))
	req.RemoteAddr = net.JoinHostPort(addr, "4711")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	f.c.ServeHTTP(rec, req)
	return rec.Code
}

// mint is the token of a portal link for the trash of user of tenant 1.
func (f *fixture) mint(user int64) string {
	f.t.Helper()
	link, err := f.c.PortalLink(context.Background(), deskkit.Principal{TenantID: 1, UserID: user}, ScopeTrash)
	if err != nil {
		f.t.Fatal(err)
	}
	return portalToken(f.t, link)
}

// TestForgedLinksCostTheForger: forged links cost their sender, never the
// people with valid links. 25 people behind one address each redeem
// their own link; then 2,000 forged POSTs come from 100 addresses (20
// each: every one answered 401), and valid links from any address, a
// forger's included, are still admitted; a forger's 21st invalid link is
// 429. Both databases.
func TestForgedLinksCostTheForger(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret = testSecret }, false)
		admitted := 0
		for i := range 25 {
			if f.redeemFrom("192.0.2.1", f.mint(int64(100+i))) == http.StatusSeeOther {
				admitted++
			}
		}
		t.Logf("valid links of 25 users from one address admitted: %d of 25", admitted)
		if admitted != 25 {
			t.Errorf("valid links of 25 users from one address: %d admitted, want 25", admitted)
		}

		genuine := f.mint(300)
		body, _, _ := strings.Cut(genuine, ".")
		statuses := map[int]int{}
		for i := range 2000 {
			var forged string
			switch i % 4 {
			case 0: // the right body, a made-up signature
				forged = body + "." + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%032d", i)))
			case 1: // garbage
				forged = fmt.Sprintf("garbage-%d", i)
			case 2: // no signature
				forged = body
			case 3: // a made-up body, signed with nothing
				forged = base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"n":"%d","e":9999999999999}`, i))) + ".x"
			}
			statuses[f.redeemFrom(fmt.Sprintf("198.51.100.%d", i%100), forged)]++
		}
		if statuses[http.StatusUnauthorized] != 2000 {
			t.Errorf("2,000 forged links from 100 addresses: %v, want 2000 answered 401", statuses)
		}

		admitted = 0
		addrs := []string{"192.0.2.1", "203.0.113.9", "198.51.100.7", "2001:db8::1", "198.51.100.99"}
		for i, addr := range addrs {
			if f.redeemFrom(addr, f.mint(int64(400+i))) == http.StatusSeeOther {
				admitted++
			}
		}
		if f.redeemFrom("198.51.100.8", genuine) == http.StatusSeeOther {
			admitted++
		}
		t.Logf("valid links admitted after 2,000 forged posts: %d of %d", admitted, len(addrs)+1)
		if admitted != len(addrs)+1 {
			t.Errorf("valid links admitted after 2,000 forged posts: %d of %d", admitted, len(addrs)+1)
		}

		// A forger's own limit: 20 invalid links from one address, then 429.
		for i := range 20 {
			if status := f.redeemFrom("203.0.113.66", "x.y"); status != http.StatusUnauthorized {
				t.Fatalf("invalid link %d: %d, want 401", i+1, status)
			}
		}
		if status := f.redeemFrom("203.0.113.66", "x.y"); status != http.StatusTooManyRequests {
			t.Errorf("the 21st invalid link from one address: %d, want 429", status)
		}
		// A link used already costs its sender as a forged one does.
		if status := f.redeemFrom("203.0.113.66", genuine); status != http.StatusTooManyRequests {
			t.Errorf("a used link from the spent address: %d, want 429", status)
		}
		// The address's valid links are still admitted.
		if status := f.redeemFrom("203.0.113.66", f.mint(500)); status != http.StatusSeeOther {
			t.Errorf("a valid link from the forger's address: %d, want 303", status)
		}
	})
}

// TestValidLinksLimitedPerUser: a valid link is limited per user
// (SignInsPerUser), wherever it comes from, and not per address. Both
// databases.
func TestValidLinksLimitedPerUser(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret, c.SignInsPerUser, c.SignInWindow = testSecret, 3, time.Minute }, false)
		for i := range 3 {
			if status := f.redeemFrom(fmt.Sprintf("192.0.2.%d", i+1), f.mint(7)); status != http.StatusSeeOther {
				t.Fatalf("user 7's link %d: %d", i+1, status)
			}
		}
		kept := f.mint(7)
		if status := f.redeemFrom("192.0.2.9", kept); status != http.StatusTooManyRequests {
			t.Errorf("user 7's fourth link: %d, want 429", status)
		}
		if status := f.redeemFrom("192.0.2.9", f.mint(8)); status != http.StatusSeeOther {
			t.Errorf("user 8's link from the same address: %d, want 303", status)
		}
		// Refused by the limit, the link was kept: it opens its session in
		// the next window (a minute here; links live two).
		f.clock.Advance(time.Minute)
		if status := f.redeemFrom("192.0.2.9", kept); status != http.StatusSeeOther {
			t.Errorf("user 7's fourth link in the next window: %d, want 303", status)
		}
	})
}

// TestRefusalKeepsTheLink: a link is used up only once the host and the
// limits said yes. Refused by Config.Allow, or by the tenant's limit of
// sessions, it stays valid and opens its session when asked again. Both
// databases.
func TestRefusalKeepsTheLink(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		var refuse atomic.Bool
		f := setup(t, db, func(c *Config) {
			c.Secret = testSecret
			c.SignInsPerTenant = 1
			c.SignInWindow = time.Minute
			c.Allow = func(context.Context, deskkit.Principal) error {
				if refuse.Load() {
					return errors.New("host: not now")
				}
				return nil
			}
		}, false)
		tok := f.mint(41)
		refuse.Store(true)
		if status := f.redeemFrom("192.0.2.1", tok); status != http.StatusForbidden {
			t.Fatalf("refused by Allow: %d, want 403", status)
		}
		refuse.Store(false)
		if status := f.redeemFrom("192.0.2.1", tok); status != http.StatusSeeOther {
			t.Errorf("the link Allow refused, asked again: %d, want 303", status)
		}
		second := f.mint(42)
		if status := f.redeemFrom("192.0.2.1", second); status != http.StatusTooManyRequests {
			t.Fatalf("past the tenant's limit: %d, want 429", status)
		}
		f.clock.Advance(time.Minute) // a new window; the link lives 2 minutes
		if status := f.redeemFrom("192.0.2.1", second); status != http.StatusSeeOther {
			t.Errorf("the link the limit refused, in the next window: %d, want 303", status)
		}
		if status := f.redeemFrom("192.0.2.1", second); status != http.StatusUnauthorized {
			t.Errorf("the link used: %d, want 401", status)
		}
	})
}

// postFrom posts form to path as a browser at client address addr would,
// and returns the status.
func (f *fixture) postFrom(addr, path string, form url.Values) int {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.RemoteAddr = net.JoinHostPort(addr, "4711")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	f.c.ServeHTTP(rec, req)
	return rec.Code
}

// TestInvalidTokensCostTheSender: garbage tokens and one-time link codes
// cost their sender's address, never another client's valid token or
// link. 2,000 garbage sign-ins from 100 addresses (20 each: the overall
// limit is spent), then valid tokens and a one-time link from five
// addresses all sign in; an address that spent its 20 invalid attempts is
// refused before its next one is looked up, a valid token included.
func TestInvalidTokensCostTheSender(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil, false)
		statuses := map[int]int{}
		for i := range 2000 {
			path, form := "/console/signin", url.Values{"token": {fmt.Sprintf("dk_garbage%d", i)}}
			if i%2 == 1 {
				path, form = "/console/link", url.Values{"code": {fmt.Sprintf("garbage%d", i)}}
			}
			statuses[f.postFrom(fmt.Sprintf("198.51.100.%d", i%100), path, form)]++
		}
		if statuses[http.StatusUnauthorized] != 2000 {
			t.Errorf("2,000 garbage tokens and codes from 100 addresses: %v, want 2000 answered 401", statuses)
		}
		admitted := 0
		addrs := []string{"192.0.2.1", "203.0.113.9", "2001:db8::1", "198.51.100.250"}
		for _, addr := range addrs {
			if f.postFrom(addr, "/console/signin", url.Values{"token": {f.token}}) == http.StatusSeeOther {
				admitted++
			}
		}
		code, err := CreateLink(context.Background(), db, fakeTokenHash(f.token), f.clock.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.postFrom("192.0.2.77", "/console/link", url.Values{"code": {code}}) == http.StatusSeeOther {
			admitted++
		}
		t.Logf("valid tokens and links admitted after 2,000 garbage posts: %d of %d", admitted, len(addrs)+1)
		if admitted != len(addrs)+1 {
			t.Errorf("valid tokens and links admitted after 2,000 garbage posts: %d of %d", admitted, len(addrs)+1)
		}
		// 198.51.100.7 spent its 20 invalid attempts: refused before the
		// lookup, so a guess from it is never compared.
		if status := f.postFrom("198.51.100.7", "/console/signin", url.Values{"token": {f.token}}); status != http.StatusTooManyRequests {
			t.Errorf("a valid token from an address that spent its invalid attempts: %d, want 429", status)
		}
	})
}
