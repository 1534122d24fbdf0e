package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// The adapters that make the one user directory serve each service in that
// service's own vocabulary. The directory knows no service, and no service
// knows the directory: this composition root is the only place both meet.

// The directory authenticates requests as it is: httpapi.Authenticator
// speaks only deskkit types.
var _ httpapi.Authenticator = (*directory.Directory)(nil)

// requestUser is the user a request's token named, read with the token by
// authUsers, for the first read of that user in the same request
// (verifyUsers.User): a send of a code reads the user it was asked by, and
// reading it with the token saves a statement. It is taken once, and
// dropped by any change to a user through verifyUsers, so that a read
// after a change reads the database.
type requestUser struct {
	mu   sync.Mutex
	u    directory.User
	have bool
	// The locales of the user the token named, read with it, which
	// authUsers.Locales answers for the rest of the request: take does not
	// drop them.
	locales        [2]string // the user's, the tenant's
	localesOf      deskkit.Principal
	localesOfKnown bool
}

type requestUserKey struct{}

// rememberUsers gives each request a requestUser slot.
func rememberUsers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestUserKey{}, &requestUser{})))
	})
}

func slotOf(ctx context.Context) *requestUser {
	s, _ := ctx.Value(requestUserKey{}).(*requestUser)
	return s
}

// take returns the remembered user if it is user userID of tenantID, and
// forgets it.
func (s *requestUser) take(tenantID, userID int64) (directory.User, bool) {
	if s == nil {
		return directory.User{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.u, s.have && s.u.TenantID == tenantID && s.u.ID == userID
	s.u, s.have = directory.User{}, false
	return u, ok
}

// authUsers authenticates through the directory as it is, reading the
// token's user with the token into the request's requestUser.
type authUsers struct{ d *directory.Directory }

var _ httpapi.Authenticator = authUsers{}

// Authenticate is directory.Directory's, answering the same principal and
// errors.
func (a authUsers) Authenticate(ctx context.Context, token string) (deskkit.Principal, error) {
	u, err := a.d.AuthenticateUser(ctx, token)
	if err != nil {
		return deskkit.Principal{}, err
	}
	if s := slotOf(ctx); s != nil {
		s.mu.Lock()
		s.u, s.have = u, true
		s.locales, s.localesOf, s.localesOfKnown = [2]string{u.Locale, u.TenantLocale}, deskkit.Principal{UserID: u.ID, TenantID: u.TenantID}, true
		s.mu.Unlock()
	}
	return deskkit.Principal{UserID: u.ID, TenantID: u.TenantID, Admin: u.Admin}, nil
}

var _ deskkit.LocaleResolver = authUsers{}

// Locales answers the user's preferred locale and the tenant's default,
// as read with the token when the request authenticated p, else from the
// directory.
func (a authUsers) Locales(ctx context.Context, p deskkit.Principal) (user, tenant string, err error) {
	if s := slotOf(ctx); s != nil {
		s.mu.Lock()
		l, ok := s.locales, s.localesOfKnown && s.localesOf.UserID == p.UserID && s.localesOf.TenantID == p.TenantID
		s.mu.Unlock()
		if ok {
			return l[0], l[1], nil
		}
	}
	return a.d.Locales(ctx, p)
}

// trashUsers makes the directory the trash's UserResolver.
type trashUsers struct{ d *directory.Directory }

var _ trash.UserResolver = trashUsers{}

// ResolveUsers returns how the trash shows the users ids of the tenant:
// the directory's display name and avatar, read through db (the trash's
// database, or the transaction of a delete that holds a connection: the
// directory shares the database). Unknown ids are left out.
func (u trashUsers) ResolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	return u.d.ResolveUsers(ctx, db, tenantID, ids)
}

// channelUsers makes the directory the channel registry's UserResolver:
// the names of the users who disabled channels.
type channelUsers struct{ d *directory.Directory }

var _ channel.UserResolver = channelUsers{}

// ResolveUsers returns how the channels show the users ids of the tenant,
// as trashUsers does.
func (u channelUsers) ResolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	return u.d.ResolveUsers(ctx, db, tenantID, ids)
}

// verifyUsers makes the directory the verification service's Directory.
// The Verifier calls a user's display name FullName; the directory's errors
// already match deskkit.ErrNotFound and deskkit.ErrConflict, so they pass
// through unchanged.
type verifyUsers struct{ d *directory.Directory }

var _ verify.Directory = verifyUsers{}

// User returns user userID of the tenant.
func (u verifyUsers) User(ctx context.Context, tenantID, userID int64) (verify.User, error) {
	du, ok := slotOf(ctx).take(tenantID, userID)
	if !ok {
		var err error
		if du, err = u.d.User(ctx, tenantID, userID); err != nil {
			return verify.User{}, err
		}
	}
	return verify.User{
		ID:        du.ID,
		TenantID:  du.TenantID,
		Username:  du.Username,
		FirstName: du.FirstName,
		LastName:  du.LastName,
		FullName:  du.DisplayName,
		Mobile:    du.Mobile,
		Country:   du.Country,
		Email:     du.Email,
		Landline:  du.Landline,
		Avatar:    du.Avatar,
		Title:     du.Title,
		Gender:    du.Gender,
		Address:   du.Address,
	}, nil
}

// Tenant returns the tenant.
func (u verifyUsers) Tenant(ctx context.Context, tenantID int64) (verify.Tenant, error) {
	t, err := u.d.Tenant(ctx, tenantID)
	if err != nil {
		return verify.Tenant{}, err
	}
	return verify.Tenant{ID: t.ID, Name: t.Name}, nil
}

// Holder returns the id of the user of the tenant whose mobile number (SMS)
// or e-mail address is address, or 0 if none has it.
func (u verifyUsers) Holder(ctx context.Context, tenantID int64, k verify.Kind, address string) (int64, error) {
	switch k {
	case verify.KindSMS:
		return u.d.MobileHolder(ctx, tenantID, address)
	case verify.KindEmail:
		return u.d.EmailHolder(ctx, tenantID, address)
	}
	return 0, fmt.Errorf("verifyUsers: unknown kind of address %q", k)
}

// UpdateProfile applies p to the user through db, in one statement.
func (u verifyUsers) UpdateProfile(ctx context.Context, db bun.IDB, tenantID, userID int64, p verify.Profile) error {
	slotOf(ctx).take(0, 0) // a change: later reads read the database
	_, err := u.d.UpdateUser(ctx, db, tenantID, userID, directory.Change{
		Username:    p.Username,
		DisplayName: p.FullName,
		FirstName:   p.FirstName,
		LastName:    p.LastName,
		Landline:    p.Landline,
		Avatar:      p.Avatar,
		Title:       p.Title,
		Gender:      p.Gender,
		Address:     p.Address,
	})
	return err
}

// SetMobile replaces the user's mobile number old with mobile, through db.
func (u verifyUsers) SetMobile(ctx context.Context, db bun.IDB, tenantID, userID int64, old, mobile, country string) error {
	slotOf(ctx).take(0, 0) // a change: later reads read the database
	return u.d.SwapMobile(ctx, db, tenantID, userID, old, mobile, country)
}

// SetEmail replaces the user's e-mail address old with email, through db.
func (u verifyUsers) SetEmail(ctx context.Context, db bun.IDB, tenantID, userID int64, old, email string) error {
	slotOf(ctx).take(0, 0) // a change: later reads read the database
	return u.d.SwapEmail(ctx, db, tenantID, userID, old, email)
}
