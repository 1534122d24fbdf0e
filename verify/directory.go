package verify

import (
	"context"

	"github.com/uptrace/bun"
)

// User is the current user as the Verifier shows and changes it. The host
// owns users; it hands them over through a Directory. Empty strings are
// unset fields.
type User struct {
	ID        int64
	TenantID  int64
	Username  string
	FirstName string
	LastName  string
	FullName  string
	Mobile    string // E.164: "+8613800138000"
	Country   string // the mobile's ISO 3166-1 region: "CN"
	Email     string // trimmed, the domain in lower case
	Landline  string
	Avatar    string // an http or https URL
	Title     string
	Gender    string // MALE, FEMALE, UNKNOWN or ""
	Address   string
}

// Tenant is the current user's organisation.
type Tenant struct {
	ID   int64
	Name string
}

// Profile is a partial update of a user's profile: nil fields stay as they
// are, a pointer to "" clears a field (but Username and Gender, which must
// hold a value). The Verifier has checked every field before it calls the
// Directory.
type Profile struct {
	Username  *string
	FirstName *string
	LastName  *string
	FullName  *string
	Landline  *string
	Avatar    *string
	Title     *string
	Gender    *string
	Address   *string
}

// UserReader finds users and tenants.
type UserReader interface {
	// User returns user userID of the tenant, or an error matching
	// deskkit.ErrNotFound.
	User(ctx context.Context, tenantID, userID int64) (User, error)
	// Tenant returns the tenant, or an error matching deskkit.ErrNotFound.
	Tenant(ctx context.Context, tenantID int64) (Tenant, error)
	// Holder returns the id of the user of the tenant whose address of
	// kind k is address (normalized as the Verifier stores it), or 0 if
	// none has it.
	Holder(ctx context.Context, tenantID int64, k Kind, address string) (int64, error)
}

// UserWriter changes users. Its methods run inside the Verifier's
// transaction and do their database work through db alone, so that a
// contact change commits or rolls back with the code and link secret it
// spends. They return an error matching deskkit.ErrConflict when the
// tenant's unique index refuses a username or address another user has,
// and one matching deskkit.ErrNotFound for an unknown user. SetMobile and
// SetEmail change the address only if it is still old ("" for none), and
// match deskkit.ErrConflict otherwise: the proof was won on old.
type UserWriter interface {
	UpdateProfile(ctx context.Context, db bun.IDB, tenantID, userID int64, p Profile) error
	SetMobile(ctx context.Context, db bun.IDB, tenantID, userID int64, old, mobile, country string) error
	SetEmail(ctx context.Context, db bun.IDB, tenantID, userID int64, old, email string) error
}

// Directory is the host's user store, as the Verifier needs it.
type Directory interface {
	UserReader
	UserWriter
}
