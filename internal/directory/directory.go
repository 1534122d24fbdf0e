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
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/migrate"
)

// Errors the directory returns; they are deskkit's shared sentinels.
var (
	ErrNotFound        = deskkit.ErrNotFound        // no such tenant, user or token
	ErrUnauthenticated = deskkit.ErrUnauthenticated // Authenticate: unknown, revoked or expired token
	ErrInvalid         = deskkit.ErrInvalid         // wrapped by every *deskkit.InputError
	ErrConflict        = deskkit.ErrConflict        // matched by ErrMobileTaken and ErrEmailTaken
)

// Errors of SetContacts for an address another user of the tenant has.
var (
	ErrMobileTaken = deskkit.NewError(ErrConflict, "directory: mobile already in use",
		"mobile is already the number of another user")
	ErrEmailTaken = deskkit.NewError(ErrConflict, "directory: email already in use",
		"email is already the address of another user")
)

// Limits of the stored strings, as the tables declare them.
const (
	MaxTenantNameLength  = 128
	MaxUsernameLength    = 128
	MaxDisplayNameLength = 256
	MaxAvatarLength      = 2048
	MaxEmailLength       = 254 // RFC 5321's limit of a path
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
	CreatedAt time.Time `json:"createdAt"`
}

// User is a user of one tenant. The contact fields are empty when unset.
type User struct {
	ID          int64     `json:"id"`
	TenantID    int64     `json:"tenantId"`
	Username    string    `json:"username"`
	DisplayName string    `json:"displayName"`
	Avatar      string    `json:"avatar"`
	Admin       bool      `json:"admin"`
	Mobile      string    `json:"mobile,omitempty"`  // E.164: "+4915112345678"
	Country     string    `json:"country,omitempty"` // ISO 3166-1 alpha-2: "DE"
	Email       string    `json:"email,omitempty"`   // lower-cased
	CreatedAt   time.Time `json:"createdAt"`
}

// Principal is the identity the user acts as.
func (u User) Principal() deskkit.Principal {
	return deskkit.Principal{UserID: u.ID, TenantID: u.TenantID, Admin: u.Admin}
}

// Info is how the user is shown beside what they did, in the shape every
// service shares.
func (u User) Info() deskkit.UserInfo {
	return deskkit.UserInfo{Name: u.DisplayName, Avatar: u.Avatar}
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
	Email   string // one address, no display name; stored lower-cased
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
// several processes at once.
func Migrate(ctx context.Context, db *bun.DB) error {
	return migrate.Run(ctx, db, "deskkit_directory_migrations", migrationFiles)
}

type tenantRow struct {
	bun.BaseModel `bun:"table:deskkit_tenants,alias:tn"`

	ID        int64     `bun:"id,pk,autoincrement"`
	Name      string    `bun:"name,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

type userRow struct {
	bun.BaseModel `bun:"table:deskkit_users,alias:u"`

	ID          int64     `bun:"id,pk,autoincrement"`
	TenantID    int64     `bun:"tenant_id,notnull"`
	Username    string    `bun:"username,notnull"`
	DisplayName string    `bun:"display_name,notnull"`
	Avatar      string    `bun:"avatar,notnull"`
	Admin       bool      `bun:"admin,notnull"`
	Mobile      string    `bun:"mobile,nullzero"`
	Country     string    `bun:"country,nullzero"`
	Email       string    `bun:"email,nullzero"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

func (r *userRow) user() User {
	return User{
		ID:          r.ID,
		TenantID:    r.TenantID,
		Username:    r.Username,
		DisplayName: r.DisplayName,
		Avatar:      r.Avatar,
		Admin:       r.Admin,
		Mobile:      r.Mobile,
		Country:     r.Country,
		Email:       r.Email,
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
// Concurrent calls with one name all get the same tenant. It returns an
// *deskkit.InputError for a bad name.
func (d *Directory) EnsureTenant(ctx context.Context, name string) (Tenant, error) {
	if err := deskkit.CheckName("name", name, MaxTenantNameLength); err != nil {
		return Tenant{}, err
	}
	// ON CONFLICT DO NOTHING, then read: the row is there either way, and a
	// unique violation would abort a PostgreSQL transaction.
	if _, err := d.db.NewInsert().Model(&tenantRow{Name: name, CreatedAt: d.now()}).
		On("CONFLICT (name) DO NOTHING").
		Returning("NULL").
		Exec(ctx); err != nil {
		return Tenant{}, fmt.Errorf("directory: create tenant: %w", err)
	}
	var r tenantRow
	if err := d.db.NewSelect().Model(&r).Where("tn.name = ?", name).Scan(ctx); err != nil {
		return Tenant{}, fmt.Errorf("directory: read tenant: %w", err)
	}
	return Tenant{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt.UTC()}, nil
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
// admin flag role says. Concurrent calls for one user all get the same user.
// It returns ErrNotFound if the tenant does not exist and an
// *deskkit.InputError for a bad argument.
func (d *Directory) EnsureUserRole(ctx context.Context, tenantID int64, username string, role Role) (User, error) {
	if err := deskkit.CheckID("tenantId", tenantID); err != nil {
		return User{}, err
	}
	if err := deskkit.CheckName("username", username, MaxUsernameLength); err != nil {
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
		nr := userRow{TenantID: tenantID, Username: username, DisplayName: username, Admin: role.Admin, CreatedAt: d.now()}
		if _, ierr := d.db.NewInsert().Model(&nr).
			On("CONFLICT (tenant_id, username) DO NOTHING").
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
	err := d.db.NewSelect().Model(&r).Where("u.tenant_id = ? AND u.username = ?", tenantID, username).Scan(ctx)
	return r, err
}

// User returns user id of the tenant, or ErrNotFound.
func (d *Directory) User(ctx context.Context, tenantID, id int64) (User, error) {
	return d.userWhere(ctx, "u.tenant_id = ? AND u.id = ?", tenantID, id)
}

// UserByMobile returns the user of the tenant whose mobile number is
// mobile, or ErrNotFound.
func (d *Directory) UserByMobile(ctx context.Context, tenantID int64, mobile string) (User, error) {
	if mobile == "" {
		return User{}, fmt.Errorf("directory: empty mobile: %w", ErrNotFound)
	}
	return d.userWhere(ctx, "u.tenant_id = ? AND u.mobile = ?", tenantID, mobile)
}

// UserByEmail returns the user of the tenant whose e-mail address is email
// (compared without case), or ErrNotFound.
func (d *Directory) UserByEmail(ctx context.Context, tenantID int64, email string) (User, error) {
	if email == "" {
		return User{}, fmt.Errorf("directory: empty email: %w", ErrNotFound)
	}
	return d.userWhere(ctx, "u.tenant_id = ? AND u.email = ?", tenantID, strings.ToLower(email))
}

func (d *Directory) userWhere(ctx context.Context, where string, args ...any) (User, error) {
	var r userRow
	err := d.db.NewSelect().Model(&r).Where(where, args...).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("directory: no such user: %w", ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("directory: read user: %w", err)
	}
	return r.user(), nil
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

// SetContacts replaces the contact addresses of user id of the tenant (""
// clears one) and returns the updated user. It does not verify that the user
// can be reached there: that is the verification service's job. It returns
// an *deskkit.InputError for a malformed address, ErrMobileTaken or
// ErrEmailTaken (both errors.Is ErrConflict) for an address another user of
// the tenant has, and ErrNotFound if there is no such user.
func (d *Directory) SetContacts(ctx context.Context, tenantID, id int64, c Contacts) (User, error) {
	c, err := normalizeContacts(c)
	if err != nil {
		return User{}, err
	}
	err = database.RunInTx(ctx, d.db, nil, func(ctx context.Context, tx bun.Tx) error {
		// Name the taken address rather than let the unique index refuse
		// it anonymously; the index still decides a race.
		for _, taken := range []struct {
			where, value string
			err          error
		}{{"u.mobile = ?", c.Mobile, ErrMobileTaken}, {"u.email = ?", c.Email, ErrEmailTaken}} {
			if taken.value == "" {
				continue
			}
			exists, err := tx.NewSelect().Model((*userRow)(nil)).
				Where("u.tenant_id = ? AND u.id <> ?", tenantID, id).
				Where(taken.where, taken.value).
				Exists(ctx)
			if err != nil {
				return err
			}
			if exists {
				return taken.err
			}
		}
		res, err := tx.NewUpdate().Model((*userRow)(nil)).
			Set("mobile = ?", nullIfEmpty(c.Mobile)).
			Set("country = ?", nullIfEmpty(c.Country)).
			Set("email = ?", nullIfEmpty(c.Email)).
			Where("u.tenant_id = ? AND u.id = ?", tenantID, id).
			Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("directory: user %d: %w", id, ErrNotFound)
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound):
		return User{}, err
	case database.SQLSTATE(err) == "23505":
		return User{}, fmt.Errorf("directory: contact taken concurrently: %w", ErrConflict)
	case err != nil:
		return User{}, fmt.Errorf("directory: set contacts: %w", err)
	}
	return d.User(ctx, tenantID, id)
}

// normalizeContacts checks c and returns it as stored: the e-mail address
// lower-cased, since virtually every mail system treats addresses without
// case and two users differing only in case would make lookups ambiguous.
func normalizeContacts(c Contacts) (Contacts, error) {
	if c.Mobile != "" && !isE164(c.Mobile) {
		return c, deskkit.Invalid("mobile", "must be an E.164 number: + and 2 to 15 digits, the first not 0")
	}
	if c.Country != "" && !(len(c.Country) == 2 && isUpperASCII(c.Country[0]) && isUpperASCII(c.Country[1])) {
		return c, deskkit.Invalid("country", "must be an ISO 3166-1 alpha-2 code in upper case, such as DE")
	}
	if c.Email != "" {
		if err := deskkit.CheckText("email", c.Email, MaxEmailLength); err != nil {
			return c, err
		}
		at := strings.LastIndexByte(c.Email, '@')
		if at < 1 || at == len(c.Email)-1 || strings.ContainsAny(c.Email, " <>,;\"") {
			return c, deskkit.Invalid("email", "must be an address such as ann@example.com")
		}
		c.Email = strings.ToLower(c.Email)
	}
	return c, nil
}

func isE164(s string) bool {
	if len(s) < 3 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
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
	err := database.RunInTx(ctx, d.db, nil, func(ctx context.Context, tx bun.Tx) error {
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

// Authenticate returns the principal token names, with the user's current
// admin flag. It implements httpapi.Authenticator: a token the directory
// does not accept (malformed, never issued, revoked or expired) is an error
// wrapping ErrUnauthenticated; any other error comes from the database.
func (d *Directory) Authenticate(ctx context.Context, token string) (deskkit.Principal, error) {
	// Reject what cannot be a token before touching the database.
	if len(token) != tokenLength || !strings.HasPrefix(token, TokenPrefix) {
		return deskkit.Principal{}, fmt.Errorf("directory: not a deskkit token: %w", ErrUnauthenticated)
	}
	want := hashToken(token)
	var row struct {
		UserID    int64     `bun:"id"`
		TenantID  int64     `bun:"tenant_id"`
		Admin     bool      `bun:"admin"`
		TokenHash string    `bun:"token_hash"`
		ExpiresAt time.Time `bun:"expires_at,nullzero"`
	}
	err := d.db.NewSelect().
		TableExpr("deskkit_tokens AS k").
		Join("JOIN deskkit_users AS u ON u.id = k.user_id AND u.tenant_id = k.tenant_id").
		ColumnExpr("u.id, u.tenant_id, u.admin, k.token_hash, k.expires_at").
		Where("k.token_hash = ?", want).
		Limit(1).
		Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return deskkit.Principal{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	if err != nil {
		return deskkit.Principal{}, fmt.Errorf("directory: authenticate: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(row.TokenHash), []byte(want)) != 1 {
		return deskkit.Principal{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	if expired(row.ExpiresAt, d.cfg.Now()) {
		return deskkit.Principal{}, fmt.Errorf("directory: token expired at %s: %w", row.ExpiresAt.UTC().Format(time.RFC3339), ErrUnauthenticated)
	}
	return deskkit.Principal{UserID: row.UserID, TenantID: row.TenantID, Admin: row.Admin}, nil
}

// RevokeToken makes token unusable, expired or not, and returns the user it
// was issued to. It returns ErrNotFound for a token the directory does not
// know (malformed, never issued or already revoked).
func (d *Directory) RevokeToken(ctx context.Context, token string) (User, error) {
	var r userRow
	err := database.RunInTx(ctx, d.db, nil, func(ctx context.Context, tx bun.Tx) error {
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
// shown, in one query. Ids of other tenants, like unknown ids, are left out
// of the map. A service's resolver hook is a thin adapter over it.
func (d *Directory) ResolveUsers(ctx context.Context, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	out := make(map[int64]deskkit.UserInfo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []userRow
	if err := d.db.NewSelect().Model(&rows).
		Column("id", "display_name", "avatar").
		Where("u.tenant_id = ? AND u.id IN (?)", tenantID, bun.List(ids)).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("directory: resolve users: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = deskkit.UserInfo{Name: r.DisplayName, Avatar: r.Avatar}
	}
	return out, nil
}

// hashToken is the stored form of a token: hex SHA-256, so that it fits a
// plain text column and compares as text on every database.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
