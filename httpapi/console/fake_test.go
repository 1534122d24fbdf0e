package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/deskkit/deskkit"
)

// fakeDirectory is a host's user directory as the console sees it: bearer
// tokens naming users of tenants, revocable, and their names.
type fakeDirectory struct {
	mu     sync.Mutex
	users  map[string]*fakeUser // by username
	tokens map[string]string    // token hash -> username
	gone   map[int64]bool       // removed users' ids
	nextID int64
}

type fakeUser struct {
	p    deskkit.Principal
	name string
}

var (
	_ Authenticator     = (*fakeDirectory)(nil)
	_ PrincipalResolver = (*fakeDirectory)(nil)
)

func newFakeDirectory() *fakeDirectory {
	return &fakeDirectory{users: map[string]*fakeUser{}, tokens: map[string]string{}, gone: map[int64]bool{}}
}

func fakeTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// issue makes username a user of tenant (once) and returns a new token of
// theirs.
func (d *fakeDirectory) issue(tenant int64, username string, admin bool) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[username]
	if !ok {
		d.nextID++
		u = &fakeUser{p: deskkit.Principal{TenantID: tenant, UserID: d.nextID}, name: username}
		d.users[username] = u
	}
	u.p.Admin = admin
	tok := rand.Text()
	d.tokens[fakeTokenHash(tok)] = username
	return tok
}

func (d *fakeDirectory) revoke(token string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.tokens, fakeTokenHash(token))
}

func (d *fakeDirectory) setAdmin(username string, admin bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.users[username].p.Admin = admin
}

// remove deletes username: the host's user is gone.
func (d *fakeDirectory) remove(username string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gone[d.users[username].p.UserID] = true
	delete(d.users, username)
}

// Principal is the user's principal as it is now; users the directory
// never had (portal links of a host without tokens) are non-admins of
// their tenant, and a removed user is unknown.
func (d *fakeDirectory) Principal(_ context.Context, tenantID, userID int64) (deskkit.Principal, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range d.users {
		if u.p.UserID == userID {
			if u.p.TenantID != tenantID {
				break
			}
			return u.p, nil
		}
	}
	if d.gone[userID] {
		return deskkit.Principal{}, fmt.Errorf("fake: no user %d: %w", userID, deskkit.ErrNotFound)
	}
	return deskkit.Principal{TenantID: tenantID, UserID: userID, Admin: true}, nil
}

func (d *fakeDirectory) Authenticate(ctx context.Context, token string) (deskkit.Principal, error) {
	return d.AuthenticateHash(ctx, fakeTokenHash(token))
}

func (d *fakeDirectory) AuthenticateHash(_ context.Context, hash string) (deskkit.Principal, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name, ok := d.tokens[hash]
	if !ok {
		return deskkit.Principal{}, fmt.Errorf("fake: unknown token: %w", deskkit.ErrUnauthenticated)
	}
	return d.users[name].p, nil
}
