// Package directory is deskkit's own user directory and token store: tenants,
// their users, and opaque bearer tokens that name a user.
//
// # Overview
//
// A host that has its own users implements httpapi.Authenticator and
// trash.UserResolver itself. A host that has none (the reference server, the
// tests, a quick start) uses a *Directory, which implements both:
//
//	dir, _ := directory.New(db, nil)
//	tenant, _ := dir.EnsureTenant(ctx, "acme")
//	user, _ := dir.EnsureUser(ctx, tenant.ID, "ada", true)
//	token, _ := dir.IssueToken(ctx, user) // "dk_..." shown once, stored hashed
//	srv, _ := httpapi.New(&httpapi.Config{Authenticator: dir, Trash: tr})
//
// Migrate creates the tables deskkit_tenants, deskkit_users and
// deskkit_tokens, with their own migrations table
// deskkit_directory_migrations.
//
// # Tokens
//
// A token is "dk_" followed by 32 bytes from crypto/rand in unpadded
// base64url. Only its SHA-256 is stored, so a leaked database (or backup)
// holds no usable credential. A slow, salted password hash is not needed:
// those exist to make guessing low-entropy passwords expensive, and a
// 256-bit random token cannot be guessed at any speed.
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
// argument that breaks a rule, ErrNotFound for a tenant or user that does
// not exist, and ErrUnauthenticated from Authenticate for a token it does
// not know. Other errors come from the database.
//
// # Testing
//
// The tests run against SQLite and PostgreSQL through internal/dbtest; set
// DESKKIT_TEST_DATABASE_URL to a PostgreSQL DSN to include PostgreSQL.
package directory
