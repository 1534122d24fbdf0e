package directory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/i18n"
	"github.com/deskkit/deskkit/internal/migrate"
)

// Errors the directory returns; they are deskkit's shared sentinels.
var (
	ErrNotFound        = deskkit.ErrNotFound        // no such tenant, user or token
	ErrUnauthenticated = deskkit.ErrUnauthenticated // Authenticate: unknown, revoked or expired token
	ErrInvalid         = deskkit.ErrInvalid         // wrapped by every *deskkit.InputError
	ErrConflict        = deskkit.ErrConflict        // matched by the Err...Taken errors and ErrContactChanged
)

// Errors for a username, mobile number or e-mail address another user of
// the tenant has.
var (
	ErrUsernameTaken = deskkit.NewError(ErrConflict, "directory: username already in use",
		"username is already taken by another user")
	ErrMobileTaken = deskkit.NewError(ErrConflict, "directory: mobile already in use",
		"mobile is already the number of another user")
	ErrEmailTaken = deskkit.NewError(ErrConflict, "directory: email already in use",
		"email is already the address of another user")
)

// ErrContactChanged is the error of SwapMobile and SwapEmail for a user
// whose address is no longer the one the caller read.
var ErrContactChanged = deskkit.NewError(ErrConflict, "directory: contact changed concurrently",
	"the address was changed meanwhile; read it again")

// Limits of the stored strings, as the tables declare them.
const (
	MaxTenantNameLength  = 128
	MaxUsernameLength    = 128
	MaxDisplayNameLength = 256
	MaxAvatarLength      = 2048
	MaxEmailLength       = 254 // RFC 5321's limit of a path
	MaxFirstNameLength   = 100
	MaxLastNameLength    = 100
	MaxLandlineLength    = 40
	MaxTitleLength       = 100
	MaxGenderLength      = 16
	MaxAddressLength     = 200
)

// TokenPrefix starts every token, so that a token pasted in the wrong place
// (a log, a chat) is recognisable and secret scanners can match it.
const TokenPrefix = "dk_"

const (
	tokenBytes  = 32
	tokenLength = len(TokenPrefix) + 43 // 32 bytes in unpadded base64url
)

// Tenant is an organisation whose users and data are kept apart from every
// other tenant's.
type Tenant struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Locale    string    `json:"locale,omitempty"` // the default language of its users: "zh-CN"; "" for none
	CreatedAt time.Time `json:"createdAt"`
}

// User is a user of one tenant. The contact and profile fields are empty
// when unset.
type User struct {
	ID          int64     `json:"id"`
	TenantID    int64     `json:"tenantId"`
	Username    string    `json:"username"`
	DisplayName string    `json:"displayName"` // the full name; "" shows the username
	FirstName   string    `json:"firstName"`
	LastName    string    `json:"lastName"`
	Avatar      string    `json:"avatar"`
	Admin       bool      `json:"admin"`
	Mobile      string    `json:"mobile,omitempty"`  // E.164: "+4915112345678"
	Country     string    `json:"country,omitempty"` // ISO 3166-1 alpha-2: "DE"
	Email       string    `json:"email,omitempty"`   // trimmed, the domain lower-cased
	Landline    string    `json:"landline"`
	Title       string    `json:"title"`
	Gender      string    `json:"gender"`
	Address     string    `json:"address"`
	Locale      string    `json:"locale,omitempty"` // the preferred language: "zh-CN"; "" for none
	CreatedAt   time.Time `json:"createdAt"`
	// TenantLocale is the tenant's Locale, which AuthenticateUser reads with
	// the user; the other reads leave it "" (Locales reads both).
	TenantLocale string `json:"-"`
}

// Principal is the identity the user acts as.
func (u User) Principal() deskkit.Principal {
	return deskkit.Principal{UserID: u.ID, TenantID: u.TenantID, Admin: u.Admin}
}

// Info is how the user is shown beside what they did, in the shape every
// service shares: by the display name, or by the username when the user has
// cleared it, so that nobody is shown without a name.
func (u User) Info() deskkit.UserInfo {
	name := u.DisplayName
	if name == "" {
		name = u.Username
	}
	return deskkit.UserInfo{Name: name, Avatar: u.Avatar}
}

// Contacts returns the user's contact addresses.
func (u User) Contacts() Contacts {
	return Contacts{Mobile: u.Mobile, Country: u.Country, Email: u.Email}
}

// Profile is how a user is shown.
type Profile struct {
	DisplayName string // 1 to MaxDisplayNameLength characters
	Avatar      string // address of an image; may be empty
}

// Contacts are the addresses a user can be reached at; "" means none.
type Contacts struct {
	Mobile  string // E.164: "+", then 2 to 15 digits, the first not 0
	Country string // ISO 3166-1 alpha-2 in upper case: "DE"
	Email   string // one address, no display name; stored trimmed, the domain lower-cased
}

// Change is a partial update of a user for UpdateUser: a nil field stays as
// it is, a pointer to "" clears the field (but Username, which every user
// must have).
type Change struct {
	Username    *string // 1 to MaxUsernameLength characters, unique in the tenant
	DisplayName *string // the full name, up to MaxDisplayNameLength characters
	FirstName   *string
	LastName    *string
	Landline    *string
	Avatar      *string // address of an image
	Title       *string
	Gender      *string
	Address     *string
}

// Role is the admin flag EnsureUserRole leaves a user with. A user the call
// creates gets Admin. An existing user gets Admin too when Set is true, and
// otherwise keeps the flag it has: the zero Role creates non-admins and
// never changes anyone's role.
type Role struct {
	Admin bool
	Set   bool
}

// Config holds the directory's optional settings; nil means all defaults.
type Config struct {
	// Now is the clock of created_at columns and of token expiry; time.Now
	// if nil.
	Now func() time.Time
}

func (c *Config) withDefaults() Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// Directory is the tenant, user and token store. It is safe for concurrent
// use, also by several processes sharing one database.
type Directory struct {
	db  *bun.DB
	cfg Config
}

// New returns a directory over db, whose schema Migrate has created.
func New(db *bun.DB, cfg *Config) (*Directory, error) {
	if db == nil {
		return nil, errors.New("directory: db is required")
	}
	if _, err := migrate.DialectOf(db); err != nil {
		return nil, err
	}
	return &Directory{db: db, cfg: cfg.withDefaults()}, nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate creates or updates the directory's tables. It is safe to run from
// several processes at once. The migration that makes usernames and tenant
// names unique without case renames the newer of two names that fold to one
// key and logs each rename at WARN through slog.Default() (see the package
// documentation, "Names").
func Migrate(ctx context.Context, db *bun.DB) error {
	return migrateLogged(ctx, db, slog.Default())
}

func migrateLogged(ctx context.Context, db *bun.DB, log *slog.Logger) error {
	return migrate.Run(ctx, db, "deskkit_directory_migrations", migrationFiles, migrate.Step{
		Version: "20261123000004",
		Comment: "folded_names",
		Up: func(ctx context.Context, tx bun.Tx, d migrate.Dialect) error {
			for _, f := range foldedNames {
				if _, err := migrate.FoldNames(ctx, tx, d, f, log); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// foldedNames are the names unique without case: tenant names across the
// database (as their exact spelling was), usernames within their tenant.
var foldedNames = []migrate.FoldedNames{
	{Table: "deskkit_tenants", ID: "id", Name: "name", Key: "name_folded", Created: "created_at",
		Index: "deskkit_tenants_name_folded_unique", Max: MaxTenantNameLength},
	{Table: "deskkit_users", ID: "id", Scope: "tenant_id", Name: "username", Key: "username_folded", Created: "created_at",
		Index: "deskkit_users_username_folded_unique", Max: MaxUsernameLength},
}

type tenantRow struct {
	bun.BaseModel `bun:"table:deskkit_tenants,alias:tn"`

	ID         int64     `bun:"id,pk,autoincrement"`
	Name       string    `bun:"name,notnull"`
	NameFolded string    `bun:"name_folded,notnull"` // deskkit.FoldName(Name)
	Locale     string    `bun:"locale,notnull"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
}

type userRow struct {
	bun.BaseModel `bun:"table:deskkit_users,alias:u"`

	ID          int64     `bun:"id,pk,autoincrement"`
	TenantID    int64     `bun:"tenant_id,notnull"`
	Username    string    `bun:"username,notnull"`
	UsernameKey string    `bun:"username_folded,notnull"` // deskkit.FoldName(Username)
	DisplayName string    `bun:"display_name,notnull"`
	FirstName   string    `bun:"first_name,notnull"`
	LastName    string    `bun:"last_name,notnull"`
	Avatar      string    `bun:"avatar,notnull"`
	Admin       bool      `bun:"admin,notnull"`
	Mobile      string    `bun:"mobile,nullzero"`
	Country     string    `bun:"country,nullzero"`
	Email       string    `bun:"email,nullzero"`
	Landline    string    `bun:"landline,notnull"`
	Title       string    `bun:"title,notnull"`
	Gender      string    `bun:"gender,notnull"`
	Address     string    `bun:"address,notnull"`
	Locale      string    `bun:"locale,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

func (r *tenantRow) tenant() Tenant {
	return Tenant{ID: r.ID, Name: r.Name, Locale: r.Locale, CreatedAt: r.CreatedAt.UTC()}
}

func (r *userRow) user() User {
	return User{
		ID:          r.ID,
		TenantID:    r.TenantID,
		Username:    r.Username,
		DisplayName: r.DisplayName,
		FirstName:   r.FirstName,
		LastName:    r.LastName,
		Avatar:      r.Avatar,
		Admin:       r.Admin,
		Mobile:      r.Mobile,
		Country:     r.Country,
		Email:       r.Email,
		Landline:    r.Landline,
		Title:       r.Title,
		Gender:      r.Gender,
		Address:     r.Address,
		Locale:      r.Locale,
		CreatedAt:   r.CreatedAt.UTC(),
	}
}

type tokenRow struct {
	bun.BaseModel `bun:"table:deskkit_tokens,alias:k"`

	ID        int64     `bun:"id,pk,autoincrement"`
	UserID    int64     `bun:"user_id,notnull"`
	TenantID  int64     `bun:"tenant_id,notnull"`
	TokenHash string    `bun:"token_hash,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	ExpiresAt time.Time `bun:"expires_at,nullzero"` // zero: never
}

// now is the clock at the precision every database stores.
func (d *Directory) now() time.Time { return d.cfg.Now().UTC().Truncate(time.Second) }

// EnsureTenant returns the tenant called name, creating it if missing.
// Tenant names are unique without case (deskkit.FoldName): "ACME" returns
// the tenant "acme" if there is one. Concurrent calls with one name all get
// the same tenant. It returns an *deskkit.InputError for a bad name
// (deskkit.CheckUniqueName).
func (d *Directory) EnsureTenant(ctx context.Context, name string) (Tenant, error) {
	if err := deskkit.CheckUniqueName("name", name, MaxTenantNameLength); err != nil {
		return Tenant{}, err
	}
	key := deskkit.FoldName(name)
	// ON CONFLICT DO NOTHING, then read: the row is there either way, and a
	// unique violation would abort a PostgreSQL transaction.
	if _, err := d.db.NewInsert().Model(&tenantRow{Name: name, NameFolded: key, CreatedAt: d.now()}).
		On("CONFLICT DO NOTHING").
		Returning("NULL").
		Exec(ctx); err != nil {
		return Tenant{}, fmt.Errorf("directory: create tenant: %w", err)
	}
	var r tenantRow
	if err := d.db.NewSelect().Model(&r).Where("tn.name_folded = ?", key).Scan(ctx); err != nil {
		return Tenant{}, fmt.Errorf("directory: read tenant: %w", err)
	}
	return r.tenant(), nil
}

// EnsureUser returns the user username of the tenant, creating it if
// missing, with its admin flag set to admin whether it is new or not. It is
// EnsureUserRole with Role{Admin: admin, Set: true}: for callers that decide
// the role. To leave an existing user's role alone, use EnsureUserRole.
func (d *Directory) EnsureUser(ctx context.Context, tenantID int64, username string, admin bool) (User, error) {
	return d.EnsureUserRole(ctx, tenantID, username, Role{Admin: admin, Set: true})
}

// EnsureUserRole returns the user username of the tenant, creating it
// (shown by its username, without avatar or contacts) if missing, with the
// admin flag role says. Usernames are unique within the tenant without case
// (deskkit.FoldName): "ALICE" returns the user "alice" if there is one.
// Concurrent calls for one user all get the same user. It returns
// ErrNotFound if the tenant does not exist and an *deskkit.InputError for a
// bad argument (deskkit.CheckUniqueName for the username).
func (d *Directory) EnsureUserRole(ctx context.Context, tenantID int64, username string, role Role) (User, error) {
	if err := deskkit.CheckID("tenantId", tenantID); err != nil {
		return User{}, err
	}
	if err := deskkit.CheckUniqueName("username", username, MaxUsernameLength); err != nil {
		return User{}, err
	}
	r, err := d.userByName(ctx, tenantID, username)
	if errors.Is(err, sql.ErrNoRows) {
		exists, terr := d.db.NewSelect().Model((*tenantRow)(nil)).Where("tn.id = ?", tenantID).Exists(ctx)
		if terr != nil {
			return User{}, fmt.Errorf("directory: read tenant: %w", terr)
		}
		if !exists {
			return User{}, fmt.Errorf("directory: tenant %d: %w", tenantID, ErrNotFound)
		}
		nr := userRow{TenantID: tenantID, Username: username, UsernameKey: deskkit.FoldName(username), DisplayName: username, Admin: role.Admin, CreatedAt: d.now()}
		if _, ierr := d.db.NewInsert().Model(&nr).
			On("CONFLICT DO NOTHING").
			Returning("NULL").
			Exec(ctx); ierr != nil {
			return User{}, fmt.Errorf("directory: create user: %w", ierr)
		}
		r, err = d.userByName(ctx, tenantID, username)
	}
	if err != nil {
		return User{}, fmt.Errorf("directory: read user: %w", err)
	}
	if role.Set && r.Admin != role.Admin {
		if _, err := d.db.NewUpdate().Model((*userRow)(nil)).
			Set("admin = ?", role.Admin).
			Where("u.id = ?", r.ID).
			Exec(ctx); err != nil {
			return User{}, fmt.Errorf("directory: update user: %w", err)
		}
		r.Admin = role.Admin
	}
	return r.user(), nil
}

func (d *Directory) userByName(ctx context.Context, tenantID int64, username string) (userRow, error) {
	var r userRow
	err := d.db.NewSelect().Model(&r).Where("u.tenant_id = ? AND u.username_folded = ?", tenantID, deskkit.FoldName(username)).Scan(ctx)
	return r, err
}

// Tenant returns tenant id, or ErrNotFound.
func (d *Directory) Tenant(ctx context.Context, id int64) (Tenant, error) {
	var r tenantRow
	err := d.db.NewSelect().Model(&r).Where("tn.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Tenant{}, fmt.Errorf("directory: tenant %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("directory: read tenant: %w", err)
	}
	return r.tenant(), nil
}

// User returns user id of the tenant, or ErrNotFound.
func (d *Directory) User(ctx context.Context, tenantID, id int64) (User, error) {
	return userWhere(ctx, d.db, "u.tenant_id = ? AND u.id = ?", tenantID, id)
}

// UserByMobile returns the user of the tenant whose mobile number is
// mobile, or ErrNotFound.
func (d *Directory) UserByMobile(ctx context.Context, tenantID int64, mobile string) (User, error) {
	if mobile == "" {
		return User{}, fmt.Errorf("directory: empty mobile: %w", ErrNotFound)
	}
	return userWhere(ctx, d.db, "u.tenant_id = ? AND u.mobile = ?", tenantID, mobile)
}

// UserByEmail returns the user of the tenant whose e-mail address is email
// normalized as the directory stores addresses (trimmed, the domain in
// lower case), or ErrNotFound.
func (d *Directory) UserByEmail(ctx context.Context, tenantID int64, email string) (User, error) {
	email = normalizeEmail(email)
	if email == "" {
		return User{}, fmt.Errorf("directory: empty email: %w", ErrNotFound)
	}
	return userWhere(ctx, d.db, "u.tenant_id = ? AND u.email = ?", tenantID, email)
}

// MobileHolder returns the id of the user of the tenant whose mobile number
// is mobile, or 0 if none has it: UserByMobile's question, reading the id
// alone (the verification service asks it on every send).
func (d *Directory) MobileHolder(ctx context.Context, tenantID int64, mobile string) (int64, error) {
	if mobile == "" {
		return 0, nil
	}
	return holder(ctx, d.db, "u.tenant_id = ? AND u.mobile = ?", tenantID, mobile)
}

// EmailHolder returns the id of the user of the tenant whose e-mail
// address is email, normalized as UserByEmail normalizes it, or 0 if none
// has it.
func (d *Directory) EmailHolder(ctx context.Context, tenantID int64, email string) (int64, error) {
	email = normalizeEmail(email)
	if email == "" {
		return 0, nil
	}
	return holder(ctx, d.db, "u.tenant_id = ? AND u.email = ?", tenantID, email)
}

// holder and userWhere write their statements out and scan into plain
// variables, as Authenticate does: the verification service reads a user
// and a holder on every send and check, and bun's query builder and model
// reflection cost more than the scan itself.

func holder(ctx context.Context, db bun.IDB, where string, args ...any) (int64, error) {
	var id int64
	err := db.QueryRowContext(ctx, "SELECT u.id FROM deskkit_users AS u WHERE "+where, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("directory: read user: %w", err)
	}
	return id, nil
}

// userColumns are the columns of User, in the order userWhere scans them.
const userColumns = "u.id, u.tenant_id, u.username, u.display_name, u.first_name, u.last_name, u.avatar, u.admin, " +
	"u.mobile, u.country, u.email, u.landline, u.title, u.gender, u.address, u.locale, u.created_at"

func userWhere(ctx context.Context, db bun.IDB, where string, args ...any) (User, error) {
	var (
		u                      User
		mobile, country, email sql.NullString
		created                bun.NullTime
	)
	err := db.QueryRowContext(ctx, "SELECT "+userColumns+" FROM deskkit_users AS u WHERE "+where, args...).Scan(
		&u.ID, &u.TenantID, &u.Username, &u.DisplayName, &u.FirstName, &u.LastName, &u.Avatar, &u.Admin,
		&mobile, &country, &email, &u.Landline, &u.Title, &u.Gender, &u.Address, &u.Locale, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("directory: no such user: %w", ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("directory: read user: %w", err)
	}
	u.Mobile, u.Country, u.Email, u.CreatedAt = mobile.String, country.String, email.String, created.UTC()
	return u, nil
}

// or is db, or the directory's database when db is nil.
func (d *Directory) or(db bun.IDB) bun.IDB {
	if db == nil {
		return d.db
	}
	return db
}

// UpdateProfile sets how user id of the tenant is shown, and returns the
// updated user. It returns ErrNotFound if there is no such user and an
// *deskkit.InputError for a bad field.
func (d *Directory) UpdateProfile(ctx context.Context, tenantID, id int64, p Profile) (User, error) {
	if err := deskkit.CheckName("displayName", p.DisplayName, MaxDisplayNameLength); err != nil {
		return User{}, err
	}
	if err := deskkit.CheckText("avatar", p.Avatar, MaxAvatarLength); err != nil {
		return User{}, err
	}
	res, err := d.db.NewUpdate().Model((*userRow)(nil)).
		Set("display_name = ?", p.DisplayName).
		Set("avatar = ?", p.Avatar).
		Where("u.tenant_id = ? AND u.id = ?", tenantID, id).
		Exec(ctx)
	if err != nil {
		return User{}, fmt.Errorf("directory: update profile: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return User{}, fmt.Errorf("directory: user %d: %w", id, ErrNotFound)
	}
	return d.User(ctx, tenantID, id)
}

// UpdateUser applies c to user id of the tenant in one UPDATE through db,
// and returns the user as db then reads it. db may be the caller's
// transaction, so that the change commits or rolls back with the caller's
// other writes; nil means the directory's database. It returns an
// *deskkit.InputError for a bad field, ErrUsernameTaken (errors.Is
// ErrConflict) for a username another user of the tenant has, and
// ErrNotFound if there is no such user. On PostgreSQL a username taken by a
// concurrent transaction fails the statement and so aborts db's
// transaction; the caller rolls it back.
func (d *Directory) UpdateUser(ctx context.Context, db bun.IDB, tenantID, id int64, c Change) (User, error) {
	db = d.or(db)
	q := db.NewUpdate().Model((*userRow)(nil)).Where("u.tenant_id = ? AND u.id = ?", tenantID, id)
	set := false
	for _, f := range []struct {
		field, column string
		value         *string
		max           int
	}{
		{"username", "username", c.Username, MaxUsernameLength},
		{"displayName", "display_name", c.DisplayName, MaxDisplayNameLength},
		{"firstName", "first_name", c.FirstName, MaxFirstNameLength},
		{"lastName", "last_name", c.LastName, MaxLastNameLength},
		{"landline", "landline", c.Landline, MaxLandlineLength},
		{"avatar", "avatar", c.Avatar, MaxAvatarLength},
		{"title", "title", c.Title, MaxTitleLength},
		{"gender", "gender", c.Gender, MaxGenderLength},
		{"address", "address", c.Address, MaxAddressLength},
	} {
		if f.value == nil {
			continue
		}
		check := deskkit.CheckText
		if f.column == "username" { // every user has one, unique without case: Info falls back on it
			check = deskkit.CheckUniqueName
		}
		if err := check(f.field, *f.value, f.max); err != nil {
			return User{}, err
		}
		q = q.Set("? = ?", bun.Ident(f.column), *f.value)
		if f.column == "username" {
			q = q.Set("username_folded = ?", deskkit.FoldName(*f.value))
		}
		set = true
	}
	if !set {
		return userWhere(ctx, db, "u.tenant_id = ? AND u.id = ?", tenantID, id)
	}
	if c.Username != nil {
		// Name the conflict rather than let the unique index refuse it
		// anonymously; the index still decides a race.
		taken, err := db.NewSelect().Model((*userRow)(nil)).
			Where("u.tenant_id = ? AND u.id <> ? AND u.username_folded = ?", tenantID, id, deskkit.FoldName(*c.Username)).
			Exists(ctx)
		if err != nil {
			return User{}, fmt.Errorf("directory: read users: %w", err)
		}
		if taken {
			return User{}, ErrUsernameTaken
		}
	}
	res, err := q.Exec(ctx)
	if err != nil {
		if taken := takenError(err); taken != nil {
			return User{}, taken
		}
		return User{}, fmt.Errorf("directory: update user: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return User{}, fmt.Errorf("directory: user %d: %w", id, ErrNotFound)
	}
	return userWhere(ctx, db, "u.tenant_id = ? AND u.id = ?", tenantID, id)
}

// SetContacts replaces the contact addresses of user id of the tenant (""
// clears one) and returns the updated user. It does not verify that the user
// can be reached there: that is the verification service's job. It returns
// an *deskkit.InputError for a malformed address, ErrMobileTaken or
// ErrEmailTaken (both errors.Is ErrConflict) for an address another user of
// the tenant has, also when a concurrent writer takes it first, and
// ErrNotFound if there is no such user.
func (d *Directory) SetContacts(ctx context.Context, tenantID, id int64, c Contacts) (User, error) {
	c, err := normalizeContacts(c)
	if err != nil {
		return User{}, err
	}
	err = deskkit.RunInTx(ctx, d.db, nil, func(ctx context.Context, tx bun.Tx) error {
		return writeContacts(ctx, tx, tenantID, id, c, mobileContact|emailContact, nil)
	})
	if err != nil {
		return User{}, contactsError(err)
	}
	return d.User(ctx, tenantID, id)
}

// SetMobile sets the mobile number of user id of the tenant and the country
// it belongs to ("" clears them) through db, leaving the e-mail address as
// it is. db may be the caller's transaction; nil means the directory's
// database. It returns the errors SetContacts does, and on PostgreSQL a
// number taken by a concurrent transaction aborts db's transaction.
func (d *Directory) SetMobile(ctx context.Context, db bun.IDB, tenantID, id int64, mobile, country string) error {
	c, err := normalizeContacts(Contacts{Mobile: mobile, Country: country})
	if err != nil {
		return err
	}
	return contactsError(writeContacts(ctx, d.or(db), tenantID, id, c, mobileContact, nil))
}

// SwapMobile is SetMobile for a caller that read the user's number as old
// ("" for none) and decided on that: it changes the number only if it is
// still old, and returns ErrContactChanged otherwise, so that a concurrent
// change is never silently overwritten.
func (d *Directory) SwapMobile(ctx context.Context, db bun.IDB, tenantID, id int64, old, mobile, country string) error {
	c, err := normalizeContacts(Contacts{Mobile: mobile, Country: country})
	if err != nil {
		return err
	}
	return contactsError(writeContacts(ctx, d.or(db), tenantID, id, c, mobileContact, &Contacts{Mobile: old}))
}

// SetEmail sets the e-mail address of user id of the tenant ("" clears it)
// through db, leaving the mobile number as it is. db may be the caller's
// transaction; nil means the directory's database. It returns the errors
// SetContacts does, and on PostgreSQL an address taken by a concurrent
// transaction aborts db's transaction.
func (d *Directory) SetEmail(ctx context.Context, db bun.IDB, tenantID, id int64, email string) error {
	c, err := normalizeContacts(Contacts{Email: email})
	if err != nil {
		return err
	}
	return contactsError(writeContacts(ctx, d.or(db), tenantID, id, c, emailContact, nil))
}

// SwapEmail is SetEmail for a caller that read the user's address as old
// ("" for none): it changes the address only if it is still old (compared
// as stored, after normalizing), and returns ErrContactChanged otherwise.
func (d *Directory) SwapEmail(ctx context.Context, db bun.IDB, tenantID, id int64, old, email string) error {
	c, err := normalizeContacts(Contacts{Email: email})
	if err != nil {
		return err
	}
	return contactsError(writeContacts(ctx, d.or(db), tenantID, id, c, emailContact, &Contacts{Email: normalizeEmail(old)}))
}

// The contacts writeContacts sets.
const (
	mobileContact = 1 << iota // the mobile number and its country
	emailContact
)

// writeContacts stores the contacts of c (normalized) that which selects on
// user id of the tenant, in one UPDATE through db; if old is not nil, only
// while the user's selected addresses are still old's. It returns
// ErrMobileTaken, ErrEmailTaken, ErrContactChanged, ErrNotFound or the
// database's error.
func writeContacts(ctx context.Context, db bun.IDB, tenantID, id int64, c Contacts, which int, old *Contacts) error {
	var was Contacts
	if old != nil {
		was = *old
	}
	q := db.NewUpdate().Model((*userRow)(nil)).Where("u.tenant_id = ? AND u.id = ?", tenantID, id)
	for _, f := range []struct {
		contact            int
		column, value, was string
		taken              error // for a value another user has; nil if values may repeat
	}{
		{mobileContact, "mobile", c.Mobile, was.Mobile, ErrMobileTaken},
		{mobileContact, "country", c.Country, "", nil},
		{emailContact, "email", c.Email, was.Email, ErrEmailTaken},
	} {
		if which&f.contact == 0 {
			continue
		}
		q = q.Set("? = ?", bun.Ident(f.column), nullIfEmpty(f.value))
		if f.taken == nil {
			continue
		}
		if old != nil {
			q = q.Where("COALESCE(?, '') = ?", bun.Ident("u."+f.column), f.was)
		}
		if f.value == "" {
			continue
		}
		// Name the taken address rather than let the unique index refuse
		// it anonymously; the index still decides a race (takenError).
		exists, err := db.NewSelect().Model((*userRow)(nil)).
			Where("u.tenant_id = ? AND u.id <> ?", tenantID, id).
			Where("? = ?", bun.Ident("u."+f.column), f.value).
			Exists(ctx)
		if err != nil {
			return err
		}
		if exists {
			return f.taken
		}
	}
	res, err := q.Exec(ctx)
	if err != nil {
		if taken := takenError(err); taken != nil {
			return taken
		}
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	if old != nil {
		// Nothing matched: the user is missing, or has another address now.
		exists, err := db.NewSelect().Model((*userRow)(nil)).Where("u.tenant_id = ? AND u.id = ?", tenantID, id).Exists(ctx)
		if err != nil {
			return err
		}
		if exists {
			return ErrContactChanged
		}
	}
	return fmt.Errorf("directory: user %d: %w", id, ErrNotFound)
}

// contactsError is err of a contact write as the caller gets it: the
// directory's own errors as they are, the database's with context.
func contactsError(err error) error {
	if err == nil || errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("directory: set contacts: %w", err)
}

// uniqueIndexes are the unique indexes over what a user may change, each
// with the error that names what was taken. PostgreSQL reports the index's
// name, SQLite its columns ("UNIQUE constraint failed:
// deskkit_users.tenant_id, deskkit_users.email").
var uniqueIndexes = []struct {
	name, column string
	err          error
}{
	{"deskkit_users_username_unique", "deskkit_users.username", ErrUsernameTaken},
	{"deskkit_users_username_folded_unique", "deskkit_users.username_folded", ErrUsernameTaken},
	{"deskkit_users_mobile_unique", "deskkit_users.mobile", ErrMobileTaken},
	{"deskkit_users_email_unique", "deskkit_users.email", ErrEmailTaken},
}

// takenError returns the error naming what a unique index refused when err
// is such a refusal (a writer that passed the check lost the race to
// another), and nil otherwise.
func takenError(err error) error {
	for _, ix := range uniqueIndexes {
		if database.UniqueViolation(err, ix.name, ix.column) {
			return ix.err
		}
	}
	if database.UniqueViolation(err, "", "") {
		return fmt.Errorf("directory: %w: %w", ErrConflict, err)
	}
	return nil
}

// normalizeContacts checks c and returns it as stored: the e-mail address
// as normalizeEmail makes it.
func normalizeContacts(c Contacts) (Contacts, error) {
	if c.Mobile != "" && !addr.IsE164(c.Mobile) {
		return c, deskkit.Invalid("mobile", "must be an E.164 number: + and 2 to 15 digits, the first not 0")
	}
	if c.Country != "" && !(len(c.Country) == 2 && isUpperASCII(c.Country[0]) && isUpperASCII(c.Country[1])) {
		return c, deskkit.Invalid("country", "must be an ISO 3166-1 alpha-2 code in upper case, such as DE")
	}
	c.Email = normalizeEmail(c.Email)
	if c.Email != "" {
		if err := deskkit.CheckText("email", c.Email, MaxEmailLength); err != nil {
			return c, err
		}
		at := strings.LastIndexByte(c.Email, '@')
		if at < 1 || at == len(c.Email)-1 || strings.ContainsAny(c.Email, " <>,;\"") {
			return c, deskkit.Invalid("email", "must be an address such as ann@example.com")
		}
	}
	return c, nil
}

// normalizeEmail trims the spaces around an address and lower-cases its
// domain, which DNS compares without case. The local part keeps its case:
// it belongs to the receiving mail system, which may tell cases apart.
func normalizeEmail(s string) string {
	s = strings.TrimSpace(s)
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		s = s[:at+1] + strings.ToLower(s[at+1:])
	}
	return s
}

func isUpperASCII(b byte) bool { return 'A' <= b && b <= 'Z' }

// nullIfEmpty stores "" as NULL, which the unique indexes let many users share.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// IssueToken creates a new bearer token for u that does not expire and
// returns it. The token is shown only here: the directory keeps its hash
// alone. It returns ErrNotFound if u is not a user of its tenant.
func (d *Directory) IssueToken(ctx context.Context, u User) (string, error) {
	return d.IssueTokenTTL(ctx, u, 0)
}

// IssueTokenTTL is IssueToken for a token that Authenticate refuses once ttl
// has passed; 0 means never. It returns an *deskkit.InputError for a
// negative ttl.
func (d *Directory) IssueTokenTTL(ctx context.Context, u User, ttl time.Duration) (string, error) {
	if ttl < 0 {
		return "", deskkit.Invalid("ttl", "must not be negative")
	}
	exists, err := d.db.NewSelect().Model((*userRow)(nil)).
		Where("u.tenant_id = ? AND u.id = ?", u.TenantID, u.ID).
		Exists(ctx)
	if err != nil {
		return "", fmt.Errorf("directory: read user: %w", err)
	}
	if !exists {
		return "", fmt.Errorf("directory: user %d: %w", u.ID, ErrNotFound)
	}
	return d.insertToken(ctx, d.db, u, ttl)
}

// IssueTokenIfNone issues a token as IssueTokenTTL does, but only if u holds
// no usable token (none, or all expired); otherwise it returns "" and no
// error. Concurrent calls issue one token between them. It returns
// ErrNotFound if u is not a user of its tenant.
func (d *Directory) IssueTokenIfNone(ctx context.Context, u User, ttl time.Duration) (string, error) {
	if ttl < 0 {
		return "", deskkit.Invalid("ttl", "must not be negative")
	}
	var token string
	err := deskkit.RunInTx(ctx, d.db, nil, func(ctx context.Context, tx bun.Tx) error {
		token = ""
		// A no-op update locks the user's row on PostgreSQL (SQLite's
		// immediate transaction holds the write lock already), so that two
		// callers cannot both find no token and issue one each.
		res, err := tx.NewUpdate().Model((*userRow)(nil)).
			Set("admin = admin").
			Where("u.tenant_id = ? AND u.id = ?", u.TenantID, u.ID).
			Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("directory: user %d: %w", u.ID, ErrNotFound)
		}
		var rows []tokenRow
		if err := tx.NewSelect().Model(&rows).Column("expires_at").Where("k.tenant_id = ? AND k.user_id = ?", u.TenantID, u.ID).Scan(ctx); err != nil {
			return err
		}
		now := d.cfg.Now()
		for _, r := range rows {
			if !expired(r.ExpiresAt, now) {
				return nil
			}
		}
		token, err = d.insertToken(ctx, tx, u, ttl)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("directory: issue token: %w", err)
	}
	return token, err
}

func (d *Directory) insertToken(ctx context.Context, db bun.IDB, u User, ttl time.Duration) (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("directory: random token: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	r := tokenRow{UserID: u.ID, TenantID: u.TenantID, TokenHash: hashToken(token), CreatedAt: d.now()}
	if ttl > 0 {
		// Rounded up to the second the databases keep, so that a token never
		// lives shorter than asked.
		r.ExpiresAt = d.cfg.Now().UTC().Add(ttl + time.Second - 1).Truncate(time.Second)
	}
	if _, err := db.NewInsert().Model(&r).Returning("NULL").Exec(ctx); err != nil {
		return "", fmt.Errorf("directory: store token: %w", err)
	}
	return token, nil
}

// expired tells whether a token expiring at exp (zero: never) is dead at now.
func expired(exp, now time.Time) bool {
	return !exp.IsZero() && !now.Before(exp)
}

// authenticateSQL is Authenticate's statement: the token by its unique
// hash, and its user's current admin flag.
const authenticateSQL = `SELECT u.id, u.tenant_id, u.admin, k.token_hash, k.expires_at FROM deskkit_tokens AS k ` +
	`JOIN deskkit_users AS u ON u.id = k.user_id AND u.tenant_id = k.tenant_id WHERE k.token_hash = ? LIMIT 1`

// authenticateUserSQL is AuthenticateUser's: authenticateSQL reading
// every column of the user.
const authenticateUserSQL = `SELECT ` + userColumns + `, tn.locale, k.token_hash, k.expires_at FROM deskkit_tokens AS k ` +
	`JOIN deskkit_users AS u ON u.id = k.user_id AND u.tenant_id = k.tenant_id ` +
	`JOIN deskkit_tenants AS tn ON tn.id = u.tenant_id WHERE k.token_hash = ? LIMIT 1`

// Authenticate returns the principal token names, with the user's current
// admin flag. It implements httpapi.Authenticator: a token the directory
// does not accept (malformed, never issued, revoked or expired) is an error
// wrapping ErrUnauthenticated; any other error comes from the database.
func (d *Directory) Authenticate(ctx context.Context, token string) (deskkit.Principal, error) {
	// Reject what cannot be a token before touching the database.
	if len(token) != tokenLength || !strings.HasPrefix(token, TokenPrefix) {
		return deskkit.Principal{}, fmt.Errorf("directory: not a deskkit token: %w", ErrUnauthenticated)
	}
	return d.AuthenticateHash(ctx, hashToken(token))
}

// AuthenticateUser is Authenticate answering the whole user the token
// names, read by the same statement: for a server that needs the user
// later in the request (the verification service reads it on every send),
// which then costs no second statement.
func (d *Directory) AuthenticateUser(ctx context.Context, token string) (User, error) {
	if len(token) != tokenLength || !strings.HasPrefix(token, TokenPrefix) {
		return User{}, fmt.Errorf("directory: not a deskkit token: %w", ErrUnauthenticated)
	}
	want := hashToken(token)
	var (
		u                      User
		mobile, country, email sql.NullString
		created                bun.NullTime
		hash                   string
		expiresAt              bun.NullTime
	)
	err := d.db.QueryRowContext(ctx, authenticateUserSQL, want).Scan(
		&u.ID, &u.TenantID, &u.Username, &u.DisplayName, &u.FirstName, &u.LastName, &u.Avatar, &u.Admin,
		&mobile, &country, &email, &u.Landline, &u.Title, &u.Gender, &u.Address, &u.Locale, &created, &u.TenantLocale, &hash, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	if err != nil {
		return User{}, fmt.Errorf("directory: authenticate: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(want)) != 1 {
		return User{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	if expired(expiresAt.Time, d.cfg.Now()) {
		return User{}, fmt.Errorf("directory: token expired at %s: %w", expiresAt.UTC().Format(time.RFC3339), ErrUnauthenticated)
	}
	u.Mobile, u.Country, u.Email, u.CreatedAt = mobile.String, country.String, email.String, created.UTC()
	return u, nil
}

// TokenHash is the form in which the directory stores token: what a
// server-side session keeps so that it can check the token again on every
// request (AuthenticateHash) without keeping the token itself.
func TokenHash(token string) string { return hashToken(token) }

// AuthenticateHash is Authenticate for a token known by its TokenHash: the
// principal it names now, with the user's current admin flag, or an error
// wrapping ErrUnauthenticated once the token is revoked or expired.
func (d *Directory) AuthenticateHash(ctx context.Context, want string) (deskkit.Principal, error) {
	if len(want) != sha256.Size*2 {
		return deskkit.Principal{}, fmt.Errorf("directory: not a token hash: %w", ErrUnauthenticated)
	}
	// One indexed statement on every request, written out and scanned into
	// plain variables: bun's query builder and model reflection cost more
	// than the scan itself.
	var (
		userID, tenantID int64
		admin            bool
		hash             string
		expiresAt        bun.NullTime
	)
	err := d.db.QueryRowContext(ctx, authenticateSQL, want).Scan(&userID, &tenantID, &admin, &hash, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return deskkit.Principal{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	if err != nil {
		return deskkit.Principal{}, fmt.Errorf("directory: authenticate: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(want)) != 1 {
		return deskkit.Principal{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	if expired(expiresAt.Time, d.cfg.Now()) {
		return deskkit.Principal{}, fmt.Errorf("directory: token expired at %s: %w", expiresAt.UTC().Format(time.RFC3339), ErrUnauthenticated)
	}
	return deskkit.Principal{UserID: userID, TenantID: tenantID, Admin: admin}, nil
}

// principalSQL is Principal's: the user's row by its primary key, within
// the tenant.
const principalSQL = `SELECT admin FROM deskkit_users WHERE id = ? AND tenant_id = ?`

// Principal returns the principal of user id of the tenant as it is now,
// its current admin flag included, or ErrNotFound for a user the tenant
// does not have. It is the console's PrincipalResolver: asked on every
// request of every console session, so it is one indexed read by the
// primary key, written out and scanned into a plain variable as
// AuthenticateHash is.
func (d *Directory) Principal(ctx context.Context, tenantID, id int64) (deskkit.Principal, error) {
	var admin bool
	err := d.db.QueryRowContext(ctx, principalSQL, id, tenantID).Scan(&admin)
	if errors.Is(err, sql.ErrNoRows) {
		return deskkit.Principal{}, fmt.Errorf("directory: user %d of tenant %d: %w", id, tenantID, ErrNotFound)
	}
	if err != nil {
		return deskkit.Principal{}, fmt.Errorf("directory: read user: %w", err)
	}
	return deskkit.Principal{UserID: id, TenantID: tenantID, Admin: admin}, nil
}

// RevokeToken makes token unusable, expired or not, and returns the user it
// was issued to. It returns ErrNotFound for a token the directory does not
// know (malformed, never issued or already revoked).
func (d *Directory) RevokeToken(ctx context.Context, token string) (User, error) {
	var r userRow
	err := deskkit.RunInTx(ctx, d.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var k tokenRow
		err := tx.NewDelete().Model(&k).
			Where("k.token_hash = ?", hashToken(token)).
			Returning("user_id, tenant_id").
			Scan(ctx)
		if err != nil {
			return err
		}
		return tx.NewSelect().Model(&r).Where("u.tenant_id = ? AND u.id = ?", k.TenantID, k.UserID).Scan(ctx)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("directory: unknown token: %w", ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("directory: revoke token: %w", err)
	}
	return r.user(), nil
}

// ResolveUsers returns how those of ids that are users of the tenant are
// shown, in one query through db: the caller's transaction when it holds
// one (a query through the directory's pool would wait for a second
// connection), or the directory's database (nil). Ids of other tenants,
// like unknown ids, are left out of the map. A service's resolver hook is
// a thin adapter over it.
func (d *Directory) ResolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	out := make(map[int64]deskkit.UserInfo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if db == nil {
		db = d.db
	}
	var rows []userRow
	if err := db.NewSelect().Model(&rows).
		Column("id", "username", "display_name", "avatar").
		Where("u.tenant_id = ? AND u.id IN (?)", tenantID, bun.List(ids)).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("directory: resolve users: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = r.user().Info()
	}
	return out, nil
}

// MaxLocaleLength is the longest locale the directory stores.
const MaxLocaleLength = 35

// CheckLocale returns locale in the canonical case of BCP 47 ("zh-cn"
// gives "zh-CN", "zh-hans" "zh-Hans"), "" for "", or an *deskkit.InputError
// for field when it is not a valid language tag: well-formed (a language
// of 2, 3 or 5 to 8 letters, then subtags of 1 to 8 letters and digits,
// joined by "-", MaxLocaleLength characters at most) and each subtag in
// the IANA registry, so that "klingon" is refused where "tlh" is taken.
// Whether the server has messages in the language is the reader's
// concern: one it lacks is skipped when a language is picked (the token
// command warns of it).
func CheckLocale(field, locale string) (string, error) {
	if locale == "" {
		return "", nil
	}
	bad := deskkit.Invalid(field, "must be a BCP 47 language tag of at most %d characters, such as en or zh-CN", MaxLocaleLength)
	if len(locale) > MaxLocaleLength {
		return "", bad
	}
	parts := strings.Split(locale, "-")
	extension := false // after a singleton (u, x): lower case only
	for i, p := range parts {
		letters, alnum := true, true
		for j := 0; j < len(p); j++ {
			c := p[j]
			isLetter := ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
			letters = letters && isLetter
			alnum = alnum && (isLetter || ('0' <= c && c <= '9'))
		}
		switch {
		case i == 0 && (!letters || len(p) < 2 || len(p) == 4 || len(p) > 8):
			return "", bad
		case !alnum || len(p) < 1 || len(p) > 8:
			return "", bad
		case extension || len(p) == 1:
			extension = true
			parts[i] = strings.ToLower(p)
		case i > 0 && letters && len(p) == 4: // a script: Hans
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		case i > 0 && letters && len(p) == 2: // a region: CN
			parts[i] = strings.ToUpper(p)
		default:
			parts[i] = strings.ToLower(p)
		}
	}
	if _, err := i18n.Parse(locale); i18n.UnknownSubtag(err) != "" {
		return "", deskkit.Invalid(field, "must be a valid BCP 47 language tag, such as en or zh-CN: %s is no registered subtag", i18n.UnknownSubtag(err))
	} else if err != nil {
		// Well-formed as far as the loop looked, but not a tag: a
		// language subtag of 5 to 8 letters (none is registered), subtags
		// out of order.
		return "", deskkit.Invalid(field, "must be a valid BCP 47 language tag, such as en or zh-CN: registered subtags, in the order language, script, region, variants")
	}
	return strings.Join(parts, "-"), nil
}

// SetUserLocale sets the preferred locale of user id of the tenant ("" for
// none; see CheckLocale). It returns ErrNotFound for an unknown user.
func (d *Directory) SetUserLocale(ctx context.Context, tenantID, id int64, locale string) error {
	locale, err := CheckLocale("locale", locale)
	if err != nil {
		return err
	}
	res, err := d.db.NewUpdate().Model((*userRow)(nil)).Set("locale = ?", locale).
		Where("u.tenant_id = ? AND u.id = ?", tenantID, id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("directory: set locale: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("directory: user %d: %w", id, ErrNotFound)
	}
	return nil
}

// SetTenantLocale sets the default locale of the tenant ("" for none; see
// CheckLocale). It returns ErrNotFound for an unknown tenant.
func (d *Directory) SetTenantLocale(ctx context.Context, tenantID int64, locale string) error {
	locale, err := CheckLocale("tenantLocale", locale)
	if err != nil {
		return err
	}
	res, err := d.db.NewUpdate().Model((*tenantRow)(nil)).Set("locale = ?", locale).
		Where("tn.id = ?", tenantID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("directory: set tenant locale: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("directory: tenant %d: %w", tenantID, ErrNotFound)
	}
	return nil
}

// Locales returns the preferred locale of p's user and the default locale
// of p's tenant, "" where none is set: the directory is a
// deskkit.LocaleResolver. An unknown user answers "", "".
func (d *Directory) Locales(ctx context.Context, p deskkit.Principal) (user, tenant string, err error) {
	err = d.db.QueryRowContext(ctx, `SELECT u.locale, tn.locale FROM deskkit_users AS u `+
		`JOIN deskkit_tenants AS tn ON tn.id = u.tenant_id WHERE u.tenant_id = ? AND u.id = ?`, p.TenantID, p.UserID).Scan(&user, &tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("directory: read locales: %w", err)
	}
	return user, tenant, nil
}

// MaxTimeZoneLength bounds an IANA time zone name.
const MaxTimeZoneLength = 64

// CheckTimeZone checks that zone is an IANA time zone name the server can
// load ("Asia/Shanghai", "UTC"), or "" for none; field names it in the
// refusal.
func CheckTimeZone(field, zone string) error {
	if zone == "" {
		return nil
	}
	if len(zone) > MaxTimeZoneLength || zone == "Local" || strings.ContainsAny(zone, ". \\") {
		return deskkit.Invalid(field, "must be an IANA time zone name of at most %d characters, such as Asia/Shanghai or UTC", MaxTimeZoneLength)
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return deskkit.Invalid(field, "must be an IANA time zone name of at most %d characters, such as Asia/Shanghai or UTC", MaxTimeZoneLength)
	}
	return nil
}

// SetUserTimeZone sets the time zone of user id of the tenant ("" for
// none; see CheckTimeZone). It returns ErrNotFound for an unknown user.
func (d *Directory) SetUserTimeZone(ctx context.Context, tenantID, id int64, zone string) error {
	if err := CheckTimeZone("timeZone", zone); err != nil {
		return err
	}
	res, err := d.db.ExecContext(ctx, `UPDATE deskkit_users SET time_zone = ? WHERE tenant_id = ? AND id = ?`, zone, tenantID, id)
	if err != nil {
		return fmt.Errorf("directory: set time zone: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("directory: user %d: %w", id, ErrNotFound)
	}
	return nil
}

// SetTenantTimeZone sets the time zone of the tenant ("" for none; see
// CheckTimeZone). It returns ErrNotFound for an unknown tenant.
func (d *Directory) SetTenantTimeZone(ctx context.Context, tenantID int64, zone string) error {
	if err := CheckTimeZone("tenantTimeZone", zone); err != nil {
		return err
	}
	res, err := d.db.ExecContext(ctx, `UPDATE deskkit_tenants SET time_zone = ? WHERE id = ?`, zone, tenantID)
	if err != nil {
		return fmt.Errorf("directory: set tenant time zone: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("directory: tenant %d: %w", tenantID, ErrNotFound)
	}
	return nil
}

// TimeZones returns the time zones of p's user and of p's tenant, "" where
// none is set: the directory is a console.ZoneResolver. An unknown user
// answers "", "".
func (d *Directory) TimeZones(ctx context.Context, p deskkit.Principal) (user, tenant string, err error) {
	err = d.db.QueryRowContext(ctx, `SELECT u.time_zone, tn.time_zone FROM deskkit_users AS u `+
		`JOIN deskkit_tenants AS tn ON tn.id = u.tenant_id WHERE u.tenant_id = ? AND u.id = ?`, p.TenantID, p.UserID).Scan(&user, &tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("directory: read time zones: %w", err)
	}
	return user, tenant, nil
}

// TenantLocale returns the default locale of the tenant, "" if none is set
// or the tenant is unknown: channel.Config.TenantLanguage.
func (d *Directory) TenantLocale(ctx context.Context, tenantID int64) (string, error) {
	var locale string
	err := d.db.QueryRowContext(ctx, `SELECT locale FROM deskkit_tenants WHERE id = ?`, tenantID).Scan(&locale)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("directory: read tenant locale: %w", err)
	}
	return locale, nil
}

// hashToken is the stored form of a token: hex SHA-256, so that it fits a
// plain text column and compares as text on every database.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
