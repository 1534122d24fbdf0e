// Package directory is the reference server's user directory and token
// store: tenants, their users (with the contact addresses verification
// needs), and opaque bearer tokens that name a user. It is the server's,
// not the library's: a host keeps its users in its own tables and meets
// the services' hooks itself, as examples/embed does with its users table
// (a verify.Directory, a trash.UserResolver) and its API keys (an
// httpapi.Authenticator).
//
// # Overview
//
// The directory knows no service: it imports only the root package deskkit,
// bun and deskkit's internal helpers, so that the server's trash,
// verification and channels can all use it without it importing any of
// them. It implements httpapi.Authenticator directly (the method set is all
// deskkit types), and the console's Authenticator and PrincipalResolver
// (AuthenticateHash, and Principal: a user's current admin flag, asked on
// every console request, by one read of the primary key). Each service's own hook is met by a small adapter in the
// server's main package (adapters.go): trash.UserResolver by trashUsers,
// over ResolveUsers, which returns the shared deskkit.UserInfo;
// verify.Directory by verifyUsers, over User, Tenant, UserByMobile,
// UserByEmail, UpdateUser, SwapMobile and SwapEmail.
//
// The server builds it once and hands it to httpapi as the Authenticator;
// its token command issues and revokes tokens through it:
//
//	dir, _ := directory.New(db, nil)
//	tenant, _ := dir.EnsureTenant(ctx, "acme")
//	user, _ := dir.EnsureUserRole(ctx, tenant.ID, "ada", directory.Role{Admin: true})
//	token, _ := dir.IssueTokenTTL(ctx, user, 30*24*time.Hour) // "dk_..." shown once, stored hashed
//	srv, _ := httpapi.New(&httpapi.Config{Authenticator: dir, Trash: tr})
//
// Migrate creates the tables deskkit_tenants, deskkit_users and
// deskkit_tokens, with their own migrations table
// deskkit_directory_migrations. Applied migrations are never edited; a
// change is a new migration file.
//
// # Users and roles
//
// Names (tenant, username) follow deskkit.CheckUniqueName, the rule every
// service shares for names that must be unique: valid UTF-8, not blank, no
// control or bidirectional control characters, no invisible characters
// (zero-width spaces and joiners, U+FEFF, soft hyphens, ...), no space at
// either end, a bounded length. They are unique without case: beside each
// name the table keeps deskkit.FoldName of it (NFC, Unicode full case
// folding, NFC again, invisible characters dropped, white space collapsed)
// under a unique index, per tenant for usernames (deskkit_users.
// username_folded) and across the database for tenant names
// (deskkit_tenants.name_folded), as the exact names were unique before.
// "ALICE" beside "alice" is ErrUsernameTaken; EnsureTenant and
// EnsureUserRole find an existing name in any case.
//
// The migration that adds the keys (20261123000004_folded_names, in Go)
// meets the names already stored. Where several fold to one key, the oldest
// row (created_at, then id) keeps its name and each newer one is renamed to
// its name with " (2)", " (3)", ... appended, the first number whose key is
// free, in age order ("ALICE" becomes "ALICE (2)"; invisible characters and
// spaces at the ends are dropped from the new name). Each rename is logged at
// WARN through slog.Default(): table, kept id and name, renamed id, old and
// new name. The migration never fails for collisions; tokens keep working,
// as they name the user by id.
//
// The profile fields (display name, first and last name, landline,
// avatar, title, gender, address) follow deskkit.CheckText, which also lets
// them be empty. The display name is the user's full name; a user who has
// none is shown by the username (User.Info, ResolveUsers). UpdateProfile
// still requires a display name; UpdateUser changes any subset of a user's
// fields, a username included, in one statement.
//
// UpdateUser, SetMobile, SetEmail, SwapMobile and SwapEmail take a
// bun.IDB, so that a caller (the verification service, spending a code) can
// change a user inside its own transaction, committing or rolling back with
// its other writes; nil means the directory's database.
//
// A user's admin flag changes only when a caller says so. EnsureUserRole
// takes a Role: its zero value creates a non-admin and leaves an existing
// user's flag alone; Role{Admin: true} creates an admin, also leaving an
// existing user alone; Set makes an existing user's flag Admin as well.
// EnsureUser(…, admin) is the last form, for callers that decide the role.
// (The reference server's token command used to pass "not an admin" when
// -admin was left out, which demoted admins.)
//
// # Contacts
//
// A user may have a mobile number (E.164, "+4915112345678"), a country
// (ISO 3166-1 alpha-2, "DE") and an e-mail address, each optional (NULL in
// the table). A mobile number or e-mail address belongs to at most one user
// of a tenant, enforced by partial unique indexes over the non-NULL values,
// so any number of users may have none. E-mail addresses are stored trimmed,
// with the domain lower-cased (DNS ignores its case); the local part keeps
// its case, which belongs to the receiving mail system. UserByEmail
// normalizes its argument the same way. SetContacts and the Set and Swap
// methods check the form of each address; they do not verify that the user
// can be reached there (that is the verification service's job). An
// address another user of the tenant has is refused with ErrMobileTaken or
// ErrEmailTaken, whether the check before the write finds it or the unique
// index refuses a concurrent writer's. SwapMobile and SwapEmail change an
// address only if it is still the one the caller read (ErrContactChanged
// otherwise): a caller that proved something about the old address, such
// as a code sent there, must not have it apply to one changed meanwhile.
//
// # Tokens
//
// A token is "dk_" followed by 32 bytes from crypto/rand in unpadded
// base64url. Only its SHA-256 is stored, so a leaked database (or backup)
// holds no usable credential. A slow, salted password hash is not needed:
// those exist to make guessing low-entropy passwords expensive, and a
// 256-bit random token cannot be guessed at any speed.
//
// A token may have a lifetime (IssueTokenTTL); its expiry is rounded up to
// the second the databases keep, and Authenticate refuses it from then on,
// by the directory's clock (Config.Now, injectable for tests). Expired tokens
// stay in the table until revoked; they authenticate no one. RevokeToken
// deletes a token, expired or not. IssueTokenIfNone issues a token only to a
// user who holds no usable one, under a lock on the user's row, so that
// servers starting together on one database issue one between them: the
// reference server uses it so as not to mint a demo token on every start.
//
// Authenticate finds the token by its hash with an ordinary indexed equality
// lookup. That lookup may take more or less time depending on the hash, but
// the hash of an attacker's guess tells them nothing about the hashes stored
// (they would have to invert SHA-256 to steer it), so a timing side channel
// yields no progress towards a valid token. The found hash is still compared
// with subtle.ConstantTimeCompare, so correctness never rests on the
// database's collation.
//
// # Errors
//
// Methods return *deskkit.InputError (errors.Is ErrInvalid) naming the
// argument that breaks a rule; ErrNotFound for a tenant, user or token that
// does not exist; ErrUsernameTaken, ErrMobileTaken and ErrEmailTaken
// (errors.Is ErrConflict) for a username or address another user of the
// tenant has; ErrContactChanged (errors.Is ErrConflict) from SwapMobile and
// SwapEmail for an address that changed since the caller read it; and
// ErrUnauthenticated from Authenticate for a token it does not accept
// (malformed, unknown, revoked or expired). Other errors come from the
// database.
//
// # Testing
//
// The tests run against SQLite and PostgreSQL through deskkit's test helpers; set
// DESKKIT_TEST_DATABASE_URL to a PostgreSQL DSN to include PostgreSQL. A
// test checks that the package imports no service.
package directory
