// Package verifytest helps a host test its side of the verification
// service, as net/http/httptest does for HTTP: fakes of the hooks the
// Verifier calls, and a conformance suite for the host's own
// verify.Directory.
//
//   - Directory is a user directory in memory, for tests of code that calls
//     the Verifier. It is not transactional: a change it makes is never
//     rolled back with the Verifier's transaction.
//   - FuncDirectory is a verify.Directory whose methods are function
//     fields, to script one answer (an error, a concurrent change).
//   - Sink is an SMSSender and a deskkit.Mailer that records what it is
//     given and can be made to fail.
//   - SMSProvider is a fake Alibaba Cloud or Tencent Cloud SMS API on
//     loopback (NewAliyunSMSProvider, NewTencentSMSProvider) for an
//     aliyun.Sender or a tencent.Sender: it checks each
//     request's signature as the provider documents, keeps the messages,
//     and can be told to refuse them with the provider's error codes.
//   - RunDirectoryTests checks a host's verify.Directory over its real
//     tables against the contract the Verifier relies on.
package verifytest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// Directory is the host's user store, in memory. The Verifier calls a
// UserWriter method last in its transaction, so a change the fake makes is
// never rolled back; a directory over real tables, which writes through the
// transaction, is checked by RunDirectoryTests.
type Directory struct {
	mu      sync.Mutex
	users   map[int64]*verify.User
	tenants map[int64]string
	err     error  // if set, every method returns it: the directory is down
	onSet   func() // if set, runs before SetMobile and SetEmail change anything
}

var _ verify.Directory = (*Directory)(nil)

// NewDirectory returns an empty directory.
func NewDirectory() *Directory {
	return &Directory{users: map[int64]*verify.User{}, tenants: map[int64]string{}}
}

// AddTenant adds or renames a tenant.
func (d *Directory) AddTenant(id int64, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tenants[id] = name
}

// Add adds or replaces a user, and its tenant as "tenant N" if the
// directory has none of that id yet, and returns the user's principal.
func (d *Directory) Add(u verify.User) deskkit.Principal {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.users[u.ID] = &u
	if _, ok := d.tenants[u.TenantID]; !ok {
		d.tenants[u.TenantID] = fmt.Sprintf("tenant %d", u.TenantID)
	}
	return deskkit.Principal{UserID: u.ID, TenantID: u.TenantID}
}

// Get returns user id as stored.
func (d *Directory) Get(id int64) verify.User {
	d.mu.Lock()
	defer d.mu.Unlock()
	return *d.users[id]
}

// SetAddress gives user id the address of kind k (a mobile in CN), as
// another request would.
func (d *Directory) SetAddress(id int64, k verify.Kind, address string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if k == verify.KindSMS {
		d.users[id].Mobile, d.users[id].Country = address, "CN"
	} else {
		d.users[id].Email = address
	}
}

// FailWith makes every method return err; nil makes them work again.
func (d *Directory) FailWith(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err = err
}

// WhenSetting makes fn run before SetMobile and SetEmail change anything:
// a concurrent change.
func (d *Directory) WhenSetting(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onSet = fn
}

// User implements verify.UserReader.
func (d *Directory) User(_ context.Context, tenantID, userID int64) (verify.User, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return verify.User{}, d.err
	}
	u, ok := d.users[userID]
	if !ok || u.TenantID != tenantID {
		return verify.User{}, fmt.Errorf("user %d: %w", userID, deskkit.ErrNotFound)
	}
	return *u, nil
}

// Tenant implements verify.UserReader.
func (d *Directory) Tenant(_ context.Context, tenantID int64) (verify.Tenant, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return verify.Tenant{}, d.err
	}
	name, ok := d.tenants[tenantID]
	if !ok {
		return verify.Tenant{}, fmt.Errorf("tenant %d: %w", tenantID, deskkit.ErrNotFound)
	}
	return verify.Tenant{ID: tenantID, Name: name}, nil
}

// Holder implements verify.UserReader.
func (d *Directory) Holder(_ context.Context, tenantID int64, k verify.Kind, address string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return 0, d.err
	}
	return d.holder(tenantID, k, address), nil
}

func (d *Directory) holder(tenantID int64, k verify.Kind, address string) int64 {
	for _, u := range d.users {
		if u.TenantID == tenantID && address != "" && addressOf(*u, k) == address {
			return u.ID
		}
	}
	return 0
}

func addressOf(u verify.User, k verify.Kind) string {
	if k == verify.KindSMS {
		return u.Mobile
	}
	return u.Email
}

// UpdateProfile implements verify.UserWriter.
func (d *Directory) UpdateProfile(_ context.Context, _ bun.IDB, tenantID, userID int64, p verify.Profile) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	u, ok := d.users[userID]
	if !ok || u.TenantID != tenantID {
		return fmt.Errorf("user %d: %w", userID, deskkit.ErrNotFound)
	}
	if p.Username != nil {
		for _, o := range d.users {
			if o.ID != userID && o.TenantID == tenantID && o.Username == *p.Username {
				return fmt.Errorf("username %q taken: %w", *p.Username, deskkit.ErrConflict)
			}
		}
	}
	for _, f := range []struct{ dst, src *string }{
		{&u.Username, p.Username}, {&u.FirstName, p.FirstName}, {&u.LastName, p.LastName},
		{&u.FullName, p.FullName}, {&u.Landline, p.Landline}, {&u.Avatar, p.Avatar},
		{&u.Title, p.Title}, {&u.Gender, p.Gender}, {&u.Address, p.Address},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return nil
}

// set changes an address as a unique index and the UserWriter contract
// would: only if it is still old, and only to one nobody else has.
func (d *Directory) set(tenantID, userID int64, k verify.Kind, old, address string, apply func(u *verify.User)) error {
	d.mu.Lock()
	hook := d.onSet
	d.mu.Unlock()
	if hook != nil {
		hook()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	u, ok := d.users[userID]
	if !ok || u.TenantID != tenantID {
		return fmt.Errorf("user %d: %w", userID, deskkit.ErrNotFound)
	}
	if addressOf(*u, k) != old {
		return fmt.Errorf("address changed meanwhile: %w", deskkit.ErrConflict)
	}
	if h := d.holder(tenantID, k, address); h != 0 && h != userID {
		return fmt.Errorf("address taken: %w", deskkit.ErrConflict)
	}
	apply(u)
	return nil
}

// SetMobile implements verify.UserWriter.
func (d *Directory) SetMobile(_ context.Context, _ bun.IDB, tenantID, userID int64, old, mobile, country string) error {
	return d.set(tenantID, userID, verify.KindSMS, old, mobile, func(u *verify.User) { u.Mobile, u.Country = mobile, country })
}

// SetEmail implements verify.UserWriter.
func (d *Directory) SetEmail(_ context.Context, _ bun.IDB, tenantID, userID int64, old, email string) error {
	return d.set(tenantID, userID, verify.KindEmail, old, email, func(u *verify.User) { u.Email = email })
}

// Sink records the messages the Verifier sends, and refuses them while
// FailWith has set an error.
type Sink struct {
	mu   sync.Mutex
	sms  []verify.SMS
	mail []deskkit.Mail
	fail error
}

var (
	_ verify.SMSSender = (*Sink)(nil)
	_ deskkit.Mailer   = (*Sink)(nil)
)

// SendSMS implements verify.SMSSender.
func (s *Sink) SendSMS(_ context.Context, m verify.SMS) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.sms = append(s.sms, m)
	return nil
}

// SendMail implements deskkit.Mailer.
func (s *Sink) SendMail(_ context.Context, m deskkit.Mail) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.mail = append(s.mail, m)
	return nil
}

// FailWith makes every send return err; nil makes them work again.
func (s *Sink) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// SMS returns the text messages sent so far.
func (s *Sink) SMS() []verify.SMS {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sms)
}

// Mail returns the e-mail sent so far.
func (s *Sink) Mail() []deskkit.Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mail)
}

// Sent is how many messages went out.
func (s *Sink) Sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sms) + len(s.mail)
}

// LastCode is the code of the last message to address, or "".
func (s *Sink) LastCode(address string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range slices.Backward(s.sms) {
		if m.To == address && m.Code != "" {
			return m.Code
		}
	}
	for _, m := range slices.Backward(s.mail) {
		if m.To == address && m.Code != "" {
			return m.Code
		}
	}
	return ""
}

// Recipients lists the addresses that got a message, text messages first,
// each in order; notices (messages without a code) are marked "notice:".
func (s *Sink) Recipients() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.sms {
		out = append(out, noticeMark(m.Code)+m.To)
	}
	for _, m := range s.mail {
		out = append(out, noticeMark(m.Code)+m.To)
	}
	return out
}

func noticeMark(code string) string {
	if code == "" {
		return "notice:"
	}
	return ""
}
