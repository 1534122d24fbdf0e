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
	nextID int64
}

type fakeUser struct {
	p    deskkit.Principal
	name string
}

var _ Authenticator = (*fakeDirectory)(nil)

func newFakeDirectory() *fakeDirectory {
	return &fakeDirectory{users: map[string]*fakeUser{}, tokens: map[string]string{}}
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
