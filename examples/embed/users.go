package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// The host's own users and tenants. deskkit's verification service does not
// own users: it reads and changes them through verify.Directory, which
// hostUsers implements over these tables.

// usersSchema creates the host's tables if missing. An address a user has
// not got is NULL, not the empty string: the partial unique indexes then
// hold over set addresses only, so that any number of users of a tenant
// may have none. Every index starts with tenant_id: two tenants may have
// the same username or address.
var usersSchema = []string{
	`CREATE TABLE IF NOT EXISTS tenants (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL
)`,
	`CREATE TABLE IF NOT EXISTS users (
    id            INTEGER PRIMARY KEY,
    tenant_id     INTEGER NOT NULL REFERENCES tenants (id),
    username      TEXT NOT NULL,
    first_name    TEXT NOT NULL DEFAULT '',
    last_name     TEXT NOT NULL DEFAULT '',
    full_name     TEXT NOT NULL DEFAULT '',
    mobile        TEXT,                      -- E.164; NULL for none
    country       TEXT NOT NULL DEFAULT '',  -- the mobile's ISO 3166-1 region
    email         TEXT,                      -- NULL for none
    landline      TEXT NOT NULL DEFAULT '',
    avatar        TEXT NOT NULL DEFAULT '',
    title         TEXT NOT NULL DEFAULT '',
    gender        TEXT NOT NULL DEFAULT '',
    address       TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL DEFAULT ''   -- bcrypt; '' until the user sets a password
)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS users_username ON users (tenant_id, username)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS users_mobile ON users (tenant_id, mobile) WHERE mobile IS NOT NULL`,
	`CREATE UNIQUE INDEX IF NOT EXISTS users_email ON users (tenant_id, email) WHERE email IS NOT NULL`,
}

// tenantRow is a row of tenants.
type tenantRow struct {
	bun.BaseModel `bun:"table:tenants,alias:t"`

	ID   int64  `bun:"id,pk"`
	Name string `bun:"name"`
}

// userRow is a row of users. Mobile and Email are nullzero: bun writes ""
// as NULL and reads NULL as "".
type userRow struct {
	bun.BaseModel `bun:"table:users,alias:u"`

	ID           int64  `bun:"id,pk"`
	TenantID     int64  `bun:"tenant_id"`
	Username     string `bun:"username"`
	FirstName    string `bun:"first_name"`
	LastName     string `bun:"last_name"`
	FullName     string `bun:"full_name"`
	Mobile       string `bun:"mobile,nullzero"`
	Country      string `bun:"country"`
	Email        string `bun:"email,nullzero"`
	Landline     string `bun:"landline"`
	Avatar       string `bun:"avatar"`
	Title        string `bun:"title"`
	Gender       string `bun:"gender"`
	Address      string `bun:"address"`
	PasswordHash string `bun:"password_hash"`
}

// createUsers creates the host's tables if missing and seeds Ada, the user
// the API key "key-ada" names, and her tenant, if missing.
func createUsers(ctx context.Context, db *bun.DB) error {
	for _, stmt := range usersSchema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("users: create: %w", err)
		}
	}
	acme := tenantRow{ID: 1, Name: "Acme"}
	if _, err := db.NewInsert().Model(&acme).On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("users: seed tenant: %w", err)
	}
	ada := userRow{
		ID: 1, TenantID: 1, Username: "ada", FirstName: "Ada", LastName: "Lovelace", FullName: "Ada Lovelace",
		Mobile: "+8613800138000", Country: "CN", Email: "ada@example.com", Title: "Analyst", Gender: "FEMALE",
	}
	if _, err := db.NewInsert().Model(&ada).On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("users: seed user: %w", err)
	}
	return nil
}

// Errors of hostUsers. Each matches deskkit.ErrConflict, as
// verify.UserWriter asks, and carries a message for the client.
var (
	errUsernameTaken = deskkit.NewError(deskkit.ErrConflict, "users: username taken",
		"the username belongs to another user of your organisation")
	errMobileTaken = deskkit.NewError(deskkit.ErrConflict, "users: mobile taken",
		"the mobile number belongs to another user of your organisation")
	errEmailTaken = deskkit.NewError(deskkit.ErrConflict, "users: e-mail taken",
		"the e-mail address belongs to another user of your organisation")
	errAddressChanged = deskkit.NewError(deskkit.ErrConflict, "users: address changed meanwhile",
		"your address was changed meanwhile: start again")
)

// hostUsers is the host's users table as deskkit's verification service
// sees it. Every query names the tenant: a user id alone never reaches
// another tenant's row.
type hostUsers struct{ db *bun.DB }

var (
	_ verify.Directory   = hostUsers{}
	_ trash.UserResolver = hostUsers{}
)

// User returns user userID of the tenant, or an error matching
// deskkit.ErrNotFound.
func (h hostUsers) User(ctx context.Context, tenantID, userID int64) (verify.User, error) {
	var r userRow
	err := h.db.NewSelect().Model(&r).Where("u.id = ? AND u.tenant_id = ?", userID, tenantID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return verify.User{}, fmt.Errorf("users: user %d: %w", userID, deskkit.ErrNotFound)
	} else if err != nil {
		return verify.User{}, fmt.Errorf("users: read user %d: %w", userID, err)
	}
	return verify.User{
		ID: r.ID, TenantID: r.TenantID, Username: r.Username,
		FirstName: r.FirstName, LastName: r.LastName, FullName: r.FullName,
		Mobile: r.Mobile, Country: r.Country, Email: r.Email, Landline: r.Landline,
		Avatar: r.Avatar, Title: r.Title, Gender: r.Gender, Address: r.Address,
	}, nil
}

// Tenant returns the tenant, or an error matching deskkit.ErrNotFound.
func (h hostUsers) Tenant(ctx context.Context, tenantID int64) (verify.Tenant, error) {
	var t tenantRow
	err := h.db.NewSelect().Model(&t).Where("t.id = ?", tenantID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return verify.Tenant{}, fmt.Errorf("users: tenant %d: %w", tenantID, deskkit.ErrNotFound)
	} else if err != nil {
		return verify.Tenant{}, fmt.Errorf("users: read tenant %d: %w", tenantID, err)
	}
	return verify.Tenant{ID: t.ID, Name: t.Name}, nil
}

// Holder returns the id of the user of the tenant whose mobile number (SMS)
// or e-mail address is address, or 0 if none has it. The Verifier hands
// addresses over as it stores them (E.164, the e-mail's domain in lower
// case), which is how SetMobile and SetEmail wrote them.
func (h hostUsers) Holder(ctx context.Context, tenantID int64, k verify.Kind, address string) (int64, error) {
	column, ok := map[verify.Kind]string{verify.KindSMS: "u.mobile", verify.KindEmail: "u.email"}[k]
	if !ok {
		return 0, fmt.Errorf("users: unknown kind of address %q", k)
	}
	var id int64
	err := h.db.NewSelect().Model((*userRow)(nil)).Column("id").
		Where("u.tenant_id = ? AND ? = ?", tenantID, bun.Ident(column), address).
		Scan(ctx, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("users: find holder: %w", err)
	}
	return id, nil
}

// UpdateProfile applies p to the user in one UPDATE through db, the
// Verifier's transaction. A username another user of the tenant has is
// errUsernameTaken, refused by the unique index; an unknown user is an
// error matching deskkit.ErrNotFound.
func (h hostUsers) UpdateProfile(ctx context.Context, db bun.IDB, tenantID, userID int64, p verify.Profile) error {
	q := db.NewUpdate().Model((*userRow)(nil)).Where("u.id = ? AND u.tenant_id = ?", userID, tenantID)
	set := false
	for _, f := range []struct {
		column string
		value  *string
	}{
		{"username", p.Username}, {"first_name", p.FirstName}, {"last_name", p.LastName},
		{"full_name", p.FullName}, {"landline", p.Landline}, {"avatar", p.Avatar},
		{"title", p.Title}, {"gender", p.Gender}, {"address", p.Address},
	} {
		if f.value != nil {
			q = q.Set("? = ?", bun.Ident(f.column), *f.value)
			set = true
		}
	}
	if !set {
		return mustExist(ctx, db, tenantID, userID, nil)
	}
	res, err := q.Exec(ctx)
	return updated(ctx, db, tenantID, userID, res, err, nil)
}

// SetMobile replaces the user's mobile number with mobile (of country)
// through db, if it is still old ("" for none): a compare-and-set, so that
// a change made since the Verifier read old is never overwritten. If the
// number is no longer old it returns errAddressChanged; one another user
// has is errMobileTaken.
func (h hostUsers) SetMobile(ctx context.Context, db bun.IDB, tenantID, userID int64, old, mobile, country string) error {
	res, err := db.NewUpdate().Model((*userRow)(nil)).
		Set("mobile = ?", nullIfEmpty(mobile)).
		Set("country = ?", country).
		Where("u.id = ? AND u.tenant_id = ? AND COALESCE(u.mobile, '') = ?", userID, tenantID, old).
		Exec(ctx)
	return updated(ctx, db, tenantID, userID, res, err, errAddressChanged)
}

// SetEmail replaces the user's e-mail address with email through db, if it
// is still old, as SetMobile does the mobile number.
func (h hostUsers) SetEmail(ctx context.Context, db bun.IDB, tenantID, userID int64, old, email string) error {
	res, err := db.NewUpdate().Model((*userRow)(nil)).
		Set("email = ?", nullIfEmpty(email)).
		Where("u.id = ? AND u.tenant_id = ? AND COALESCE(u.email, '') = ?", userID, tenantID, old).
		Exec(ctx)
	return updated(ctx, db, tenantID, userID, res, err, errAddressChanged)
}

// ResolveUsers returns how the tenant's users ids are shown: full name
// and avatar, read through db, which the trash hands over (the delete's
// transaction, in which a read through h.db would wait for a second
// connection). Ids of no user of the tenant are left out. The trash asks
// it for the deleters in its search results and for the actor of its
// events.
func (h hostUsers) ResolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	return resolveUsers(ctx, db, tenantID, ids)
}

// resolveUsers is ResolveUsers through db, a transaction or the database.
func resolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	out := make(map[int64]deskkit.UserInfo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []userRow
	err := db.NewSelect().Model(&rows).Column("id", "full_name", "avatar").
		Where("u.tenant_id = ? AND u.id IN (?)", tenantID, bun.List(ids)).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("users: resolve: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = deskkit.UserInfo{Name: r.FullName, Avatar: r.Avatar}
	}
	return out, nil
}

// updated turns the outcome of an UPDATE of one user into the errors
// verify.UserWriter names. No row updated means no such user, or, for an
// UPDATE guarded by more than the id, a user who no longer matches the
// guard: then it returns stale.
func updated(ctx context.Context, db bun.IDB, tenantID, userID int64, res sql.Result, err, stale error) error {
	if err != nil {
		return fmt.Errorf("users: update user %d: %w", userID, uniqueError(err))
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	return mustExist(ctx, db, tenantID, userID, stale)
}

// mustExist returns ifExists if the user exists, and an error matching
// deskkit.ErrNotFound if not.
func mustExist(ctx context.Context, db bun.IDB, tenantID, userID int64, ifExists error) error {
	ok, err := db.NewSelect().Model((*userRow)(nil)).Where("u.id = ? AND u.tenant_id = ?", userID, tenantID).Exists(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("users: read user %d: %w", userID, err)
	case !ok:
		return fmt.Errorf("users: user %d: %w", userID, deskkit.ErrNotFound)
	}
	return ifExists
}

// uniqueError names what a unique index of users refused, and returns any
// other error as it is. The driver, modernc.org/sqlite, reports such a
// refusal as a *sqlite.Error of code SQLITE_CONSTRAINT_UNIQUE, whose
// message lists the index's columns: "UNIQUE constraint failed:
// users.tenant_id, users.email". (On PostgreSQL a host would match SQLSTATE
// 23505 and the index's name instead.)
func uniqueError(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code() != sqlite3.SQLITE_CONSTRAINT_UNIQUE {
		return err
	}
	for column, taken := range map[string]error{
		"users.username": errUsernameTaken, "users.mobile": errMobileTaken, "users.email": errEmailTaken,
	} {
		if strings.Contains(se.Error(), column) {
			return taken
		}
	}
	return fmt.Errorf("%w: %w", deskkit.ErrConflict, err)
}

// nullIfEmpty writes "" as NULL, which the partial unique indexes skip.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
