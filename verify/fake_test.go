package verify_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// fakeDirectory is an in-memory user store. It is enough for the
// Verifier's tests: the Verifier calls a UserWriter method last in its
// transaction, so a change the fake makes is never rolled back. The
// reference server's adapter over the real directory, which writes through
// the transaction, is tested in examples/server.
type fakeDirectory struct {
	mu      sync.Mutex
	users   map[int64]*verify.User
	tenants map[int64]string
}

var _ verify.Directory = (*fakeDirectory)(nil)

func newFakeDirectory() *fakeDirectory {
	return &fakeDirectory{users: map[int64]*verify.User{}, tenants: map[int64]string{}}
}

// add adds a user and returns its principal.
func (d *fakeDirectory) add(u verify.User) deskkit.Principal {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.users[u.ID] = &u
	if _, ok := d.tenants[u.TenantID]; !ok {
		d.tenants[u.TenantID] = fmt.Sprintf("tenant %d", u.TenantID)
	}
	return deskkit.Principal{UserID: u.ID, TenantID: u.TenantID}
}

func (d *fakeDirectory) get(id int64) verify.User {
	d.mu.Lock()
	defer d.mu.Unlock()
	return *d.users[id]
}

func (d *fakeDirectory) User(_ context.Context, tenantID, userID int64) (verify.User, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[userID]
	if !ok || u.TenantID != tenantID {
		return verify.User{}, deskkit.ErrNotFound
	}
	return *u, nil
}

func (d *fakeDirectory) Tenant(_ context.Context, tenantID int64) (verify.Tenant, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name, ok := d.tenants[tenantID]
	if !ok {
		return verify.Tenant{}, deskkit.ErrNotFound
	}
	return verify.Tenant{ID: tenantID, Name: name}, nil
}

func (d *fakeDirectory) Holder(_ context.Context, tenantID int64, k verify.Kind, address string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.holder(tenantID, k, address), nil
}

func (d *fakeDirectory) holder(tenantID int64, k verify.Kind, address string) int64 {
	for _, u := range d.users {
		a := u.Email
		if k == verify.KindSMS {
			a = u.Mobile
		}
		if u.TenantID == tenantID && a == address && a != "" {
			return u.ID
		}
	}
	return 0
}

func (d *fakeDirectory) UpdateProfile(_ context.Context, _ bun.IDB, tenantID, userID int64, p verify.Profile) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[userID]
	if !ok || u.TenantID != tenantID {
		return deskkit.ErrNotFound
	}
	if p.Username != nil {
		for _, o := range d.users {
			if o.ID != userID && o.TenantID == tenantID && o.Username == *p.Username {
				return fmt.Errorf("username taken: %w", deskkit.ErrConflict)
			}
		}
	}
	for _, f := range []struct {
		dst *string
		src *string
	}{{&u.Username, p.Username}, {&u.FirstName, p.FirstName}, {&u.LastName, p.LastName}, {&u.FullName, p.FullName},
		{&u.Landline, p.Landline}, {&u.Avatar, p.Avatar}, {&u.Title, p.Title}, {&u.Gender, p.Gender}, {&u.Address, p.Address}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return nil
}

func (d *fakeDirectory) set(tenantID, userID int64, k verify.Kind, old, address string, apply func(u *verify.User)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[userID]
	if !ok || u.TenantID != tenantID {
		return deskkit.ErrNotFound
	}
	cur := u.Email
	if k == verify.KindSMS {
		cur = u.Mobile
	}
	if cur != old {
		return fmt.Errorf("address changed meanwhile: %w", deskkit.ErrConflict)
	}
	if h := d.holder(tenantID, k, address); h != 0 && h != userID {
		return fmt.Errorf("address taken: %w", deskkit.ErrConflict)
	}
	apply(u)
	return nil
}

func (d *fakeDirectory) SetMobile(_ context.Context, _ bun.IDB, tenantID, userID int64, old, mobile, country string) error {
	return d.set(tenantID, userID, verify.KindSMS, old, mobile, func(u *verify.User) { u.Mobile, u.Country = mobile, country })
}

func (d *fakeDirectory) SetEmail(_ context.Context, _ bun.IDB, tenantID, userID int64, old, email string) error {
	return d.set(tenantID, userID, verify.KindEmail, old, email, func(u *verify.User) { u.Email = email })
}

// sink records what the Verifier sends, and fails while fail is set.
type sink struct {
	mu   sync.Mutex
	sms  []verify.SMS
	mail []verify.Mail
	fail error
}

var (
	_ verify.SMSSender = (*sink)(nil)
	_ verify.Mailer    = (*sink)(nil)
)

func (s *sink) SendSMS(_ context.Context, m verify.SMS) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.sms = append(s.sms, m)
	return nil
}

func (s *sink) SendMail(_ context.Context, m verify.Mail) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.mail = append(s.mail, m)
	return nil
}

func (s *sink) failWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// lastCode is the code of the last message to address, or "".
func (s *sink) lastCode(address string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.sms) - 1; i >= 0; i-- {
		if s.sms[i].To == address && s.sms[i].Code != "" {
			return s.sms[i].Code
		}
	}
	for i := len(s.mail) - 1; i >= 0; i-- {
		if s.mail[i].To == address && s.mail[i].Code != "" {
			return s.mail[i].Code
		}
	}
	return ""
}

// sent is how many messages went out.
func (s *sink) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sms) + len(s.mail)
}

var errGatewayDown = errors.New("gateway down")
