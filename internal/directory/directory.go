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
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/trash"
)

// Errors the directory returns; they are deskkit's shared sentinels.
var (
	ErrNotFound        = deskkit.ErrNotFound        // no such tenant or user
	ErrUnauthenticated = deskkit.ErrUnauthenticated // Authenticate: unknown token
	ErrInvalid         = deskkit.ErrInvalid         // wrapped by every *deskkit.InputError
)

// Limits of the stored strings, as the tables declare them.
const (
	MaxTenantNameLength  = 128
	MaxUsernameLength    = 128
	MaxDisplayNameLength = 256
	MaxAvatarLength      = 2048
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

// User is a user of one tenant.
type User struct {
	ID          int64     `json:"id"`
	TenantID    int64     `json:"tenantId"`
	Username    string    `json:"username"`
	DisplayName string    `json:"displayName"`
	Avatar      string    `json:"avatar"`
	Admin       bool      `json:"admin"`
	CreatedAt   time.Time `json:"createdAt"`
}

// Principal is the identity the user acts as.
func (u User) Principal() deskkit.Principal {
	return deskkit.Principal{UserID: u.ID, TenantID: u.TenantID, Admin: u.Admin}
}

// Profile is how a user is shown.
type Profile struct {
	DisplayName string // 1 to MaxDisplayNameLength characters
	Avatar      string // address of an image; may be empty
}

// Config holds the directory's optional settings; nil means all defaults.
type Config struct {
	// Now is the clock of created_at columns; time.Now if nil.
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
}

func (d *Directory) now() time.Time { return d.cfg.Now().UTC().Truncate(time.Second) }

// EnsureTenant returns the tenant called name, creating it if missing.
// Concurrent calls with one name all get the same tenant. It returns an
// *deskkit.InputError for a bad name.
func (d *Directory) EnsureTenant(ctx context.Context, name string) (Tenant, error) {
	if err := checkName("name", name, MaxTenantNameLength); err != nil {
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

// EnsureUser returns the user username of the tenant, creating it (shown by
// its username, without avatar) if missing, and makes its admin flag admin.
// It returns ErrNotFound if the tenant does not exist and an
// *deskkit.InputError for a bad argument.
func (d *Directory) EnsureUser(ctx context.Context, tenantID int64, username string, admin bool) (User, error) {
	if tenantID < 1 {
		return User{}, deskkit.Invalid("tenantId", "must be a positive integer")
	}
	if err := checkName("username", username, MaxUsernameLength); err != nil {
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
		nr := userRow{TenantID: tenantID, Username: username, DisplayName: username, Admin: admin, CreatedAt: d.now()}
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
	if r.Admin != admin {
		if _, err := d.db.NewUpdate().Model((*userRow)(nil)).
			Set("admin = ?", admin).
			Where("u.id = ?", r.ID).
			Exec(ctx); err != nil {
			return User{}, fmt.Errorf("directory: update user: %w", err)
		}
		r.Admin = admin
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
	var r userRow
	err := d.db.NewSelect().Model(&r).Where("u.tenant_id = ? AND u.id = ?", tenantID, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("directory: user %d: %w", id, ErrNotFound)
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
	if err := checkName("displayName", p.DisplayName, MaxDisplayNameLength); err != nil {
		return User{}, err
	}
	if utf8.RuneCountInString(p.Avatar) > MaxAvatarLength || strings.ContainsFunc(p.Avatar, unicode.IsControl) {
		return User{}, deskkit.Invalid("avatar", "must be at most %d characters without control characters", MaxAvatarLength)
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

// IssueToken creates a new bearer token for u and returns it. The token is
// shown only here: the directory keeps its hash alone. It returns
// ErrNotFound if u is not a user of its tenant.
func (d *Directory) IssueToken(ctx context.Context, u User) (string, error) {
	exists, err := d.db.NewSelect().Model((*userRow)(nil)).
		Where("u.tenant_id = ? AND u.id = ?", u.TenantID, u.ID).
		Exists(ctx)
	if err != nil {
		return "", fmt.Errorf("directory: read user: %w", err)
	}
	if !exists {
		return "", fmt.Errorf("directory: user %d: %w", u.ID, ErrNotFound)
	}
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("directory: random token: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	r := tokenRow{UserID: u.ID, TenantID: u.TenantID, TokenHash: hashToken(token), CreatedAt: d.now()}
	if _, err := d.db.NewInsert().Model(&r).Returning("NULL").Exec(ctx); err != nil {
		return "", fmt.Errorf("directory: store token: %w", err)
	}
	return token, nil
}

// Authenticate returns the principal token names, with the user's current
// admin flag. It implements httpapi.Authenticator: a token the directory
// does not know (malformed, never issued or revoked) is an error wrapping
// ErrUnauthenticated; any other error comes from the database.
func (d *Directory) Authenticate(ctx context.Context, token string) (deskkit.Principal, error) {
	// Reject what cannot be a token before touching the database.
	if len(token) != tokenLength || !strings.HasPrefix(token, TokenPrefix) {
		return deskkit.Principal{}, fmt.Errorf("directory: not a deskkit token: %w", ErrUnauthenticated)
	}
	want := hashToken(token)
	var (
		p      deskkit.Principal
		stored string
	)
	err := d.db.NewSelect().
		TableExpr("deskkit_tokens AS k").
		Join("JOIN deskkit_users AS u ON u.id = k.user_id AND u.tenant_id = k.tenant_id").
		ColumnExpr("u.id, u.tenant_id, u.admin, k.token_hash").
		Where("k.token_hash = ?", want).
		Limit(1).
		Scan(ctx, &p.UserID, &p.TenantID, &p.Admin, &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return deskkit.Principal{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	if err != nil {
		return deskkit.Principal{}, fmt.Errorf("directory: authenticate: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(stored), []byte(want)) != 1 {
		return deskkit.Principal{}, fmt.Errorf("directory: unknown token: %w", ErrUnauthenticated)
	}
	return p, nil
}

// RevokeToken makes token unusable. It returns ErrNotFound for a token the
// directory does not know.
func (d *Directory) RevokeToken(ctx context.Context, token string) error {
	res, err := d.db.NewDelete().Model((*tokenRow)(nil)).Where("k.token_hash = ?", hashToken(token)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("directory: revoke token: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("directory: unknown token: %w", ErrNotFound)
	}
	return nil
}

// ResolveUsers returns the display name and avatar of those of ids that are
// users of the tenant, in one query. It implements trash.UserResolver: ids
// of other tenants, like unknown ids, are left out of the map.
func (d *Directory) ResolveUsers(ctx context.Context, tenantID int64, ids []int64) (map[int64]trash.UserInfo, error) {
	out := make(map[int64]trash.UserInfo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []userRow
	if err := d.db.NewSelect().Model(&rows).
		Column("id", "display_name", "avatar").
		Where("u.tenant_id = ? AND u.id IN (?)", tenantID, bun.In(ids)).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("directory: resolve users: %w", err)
	}
	for _, r := range rows {
		out[r.ID] = trash.UserInfo{Name: r.DisplayName, Avatar: r.Avatar}
	}
	return out, nil
}

// hashToken is the stored form of a token: hex SHA-256, so that it fits a
// plain text column and compares as text on every database.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// checkName checks a required, single-line name of at most limit characters.
func checkName(field, s string, limit int) error {
	switch {
	case strings.TrimSpace(s) == "":
		return deskkit.Invalid(field, "is required")
	case !utf8.ValidString(s):
		return deskkit.Invalid(field, "must be valid UTF-8")
	case utf8.RuneCountInString(s) > limit:
		return deskkit.Invalid(field, "must be at most %d characters", limit)
	case strings.ContainsFunc(s, unicode.IsControl):
		return deskkit.Invalid(field, "must not contain control characters")
	}
	return nil
}
