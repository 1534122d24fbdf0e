// Package deskkit gives work-management applications three services that
// every such product needs: a trash for deleted tasks and sprints,
// verification of the signed-in user, and event channels. This release
// ships the trash; verification and channels come in later releases, and
// their packages do not exist yet.
//
// # Overview
//
// Each service is a concrete type built over small interfaces that the host
// application implements:
//
//   - trash.Trash keeps deleted tasks and sprints in a recycle bin where they
//     can be searched, counted, restored one at a time or per project, or
//     cleared for good. The host owns its tasks and sprints; it puts them in
//     the trash with Trash.Add inside its own delete transaction and brings
//     them back or deletes them for good through a trash.Restorer.
//   - httpapi.Server mounts the services on an http.Handler at /api/v1, with
//     bearer authentication through an httpapi.Authenticator, the common
//     response envelope (package envelope) and one table that maps errors to
//     HTTP statuses. Its OpenAPI document is served at /api/v1/openapi.json.
//
// Every method acts for a Principal: a user of a tenant, perhaps an admin.
// Every query is scoped to the principal's tenant; rows of another tenant
// behave exactly as if they did not exist.
//
// # Storage
//
// The services keep their state with github.com/uptrace/bun on PostgreSQL
// (pgdialect, pgdriver) or SQLite (sqlitedialect, the pure-Go
// modernc.org/sqlite driver). Their tables are prefixed deskkit_; each
// service migrates its own tables (trash.Migrate) with bun's migrator under
// its own migrations table, so they never collide with the host's.
//
// # Embedding
//
//	db := bun.NewDB(sqldb, pgdialect.New())
//	if err := trash.Migrate(ctx, db); err != nil { ... }
//	tr, err := trash.New(db, myRestorer, &trash.Config{Authorizer: myProjects})
//	api, err := httpapi.New(&httpapi.Config{Authenticator: myTokens, Trash: tr})
//	mux.Handle("/api/v1/", api)
//
// examples/embed is a complete host application doing this.
//
// # The reference server
//
//	go run ./examples/server
//
// serves the API on 127.0.0.1:8080 over an SQLite file deskkit.db, with a
// demo tenant, user and bearer token (printed as a ready curl line) and demo
// tasks and sprints to delete and restore. DESKKIT_DATABASE_URL (or
// -database-url) points it at PostgreSQL instead.
//
// # Errors
//
// Services return the sentinels of this package (ErrNotFound, ErrForbidden,
// ErrConflict, ErrUnauthenticated, ErrRateLimited) wrapped, and
// *InputError for a field that breaks a rule; test with errors.Is and
// errors.As. httpapi turns them into 404, 403, 409, 401, 429 and 400.
//
// # Testing
//
// go test ./... runs every storage test against SQLite and, when
// DESKKIT_TEST_DATABASE_URL names a PostgreSQL server (or a Docker engine
// answers), against PostgreSQL too; DESKKIT_REQUIRE_POSTGRES=1 turns a
// missing PostgreSQL into a failure instead of a skip.
package deskkit
