// Package deskkit gives work-management applications three services that
// every such product needs: a trash for deleted tasks and sprints,
// verification of the signed-in user, and event channels.
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
//   - verify.Verifier sends the signed-in user SMS and e-mail codes, checks
//     them, updates the profile, and changes the mobile number or e-mail
//     address only with proof (a code sent to the current address and one
//     sent to the new). The host owns its users and hands them over through
//     a verify.Directory; codes go out through a verify.SMSSender and a
//     deskkit.Mailer (SMTP, an HTTP gateway, Twilio, Alibaba Cloud and
//     Tencent Cloud SMS and a log sender are included).
//   - channel.ChannelRegistry keeps each tenant's event channels (a signed
//     webhook, e-mail, WeCom, DingTalk and Feishu robots, Slack) and
//     delivers events through them: the services and the host publish an
//     Event in the transaction of their change (ChannelRegistry.Publish, a
//     Publisher), and ChannelRegistry.Run delivers it from a transactional
//     outbox, with retries, in every replica. Outbound requests pass an
//     SSRF guard; secrets are stored encrypted.
//   - httpapi.Server mounts the services on an http.Handler at /api/v1, with
//     bearer authentication through an httpapi.Authenticator, the common
//     response envelope (package envelope) and one table that maps errors to
//     HTTP statuses. Its OpenAPI document is served at /api/v1/openapi.json.
//
// Every method acts for a Principal: a user of a tenant, perhaps an admin.
// Every query is scoped to the principal's tenant; rows of another tenant
// behave exactly as if they did not exist.
//
// # Example
//
// The package's Example (example_test.go; go test -run Example runs it)
// builds the trash, the event channels and the HTTP API over one SQLite
// file, as a host does, and serves a search beside a route of the host's
// own. examples/embed is a whole host application. go run ./examples/server
// runs the reference server on 127.0.0.1:8080 over an SQLite file, with a
// demo tenant, user and bearer token (printed as a ready curl line) and
// demo tasks and sprints; DESKKIT_DATABASE_URL points it at PostgreSQL. Its
// manual, examples/server/README.md, gives every flag, limit and figure.
//
// # Embedding
//
// A host migrates the services' tables, builds the event channels and
// registers every event type that it and the services publish, builds the
// services with the registry as their Publisher, serves the API beside its
// own routes, and runs the delivery worker:
//
//	for _, migrate := range []func(context.Context, *bun.DB) error{trash.Migrate, verify.Migrate, channel.Migrate} {
//		if err := migrate(ctx, db); err != nil { ... }
//	}
//	reg, err := channel.New(db, secret, mailer, nil)
//	err = reg.RegisterEventTypes(slices.Concat(trash.EventTypes(), verify.EventTypes(), myEventTypes)...)
//	tr, err := trash.New(db, myRestorer, &trash.Config{Publisher: reg, Authorizer: myProjects})
//	v, err := verify.New(db, myUsers, sms, mailer, secret, &verify.Config{Publisher: reg})
//	api, err := httpapi.New(&httpapi.Config{Authenticator: myTokens, Trash: tr, Verifier: v, Channels: reg})
//	srv := &http.Server{Handler: api.Wrap(mux)} // /api/v1 to deskkit as it came, the rest to the host's mux
//	go reg.Run(ctx) // and v.Run: delivers what was published, in every replica
//
// Each service's New refuses to start, naming the call it misses, until
// its Migrate has run (a host mounting the console runs console.Migrate
// too). Publish refuses a type nobody registered, so a trash built without
// trash.EventTypes() registered fails its first Add. Without Run, events
// and notices wait in the outbox for any process that runs it. Serve
// api.Wrap(mux), never mux.Handle("/api/v1/", api): a ServeMux redirects a
// path that is not clean, and a client following the redirect of one
// entry's DELETE clears the project (see httpapi.Server.Wrap).
//
// The host puts a task in the trash in its own delete transaction, and
// publishes its own events there too, so that a delete rolled back
// announces nothing:
//
//	err = deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... delete task 42 from the host's tables through tx, then:
//		_, err := tr.Add(ctx, tx, principal, trash.NewEntry{ProjectID: 3, TargetType: trash.TargetTask,
//			TargetID: 42, TargetName: "Write docs", CreatedBy: 7})
//		if err != nil {
//			return err
//		}
//		return reg.Publish(ctx, tx, principal.TenantID, myEvent)
//	})
//
// # Storage
//
// The services keep their state with github.com/uptrace/bun on PostgreSQL
// (pgdialect, pgdriver) or SQLite (sqlitedialect, the pure-Go
// modernc.org/sqlite driver), in tables prefixed deskkit_, each service
// migrating its own under its own migrations table. A host that opens
// SQLite itself opens it with write-ahead logging (readers never block the
// writer), IMMEDIATE transactions (two writers queue instead of one failing
// half-way) and a busy timeout, and pings it before concurrent use
// (switching a new file to WAL takes a lock SQLite does not wait for, so
// connections opened at once on a new file could fail with SQLITE_BUSY):
//
//	sqldb, err := sql.Open("sqlite", "file:app.db?_busy_timeout=10000&_foreign_keys=1&_journal_mode=WAL&_txlock=immediate")
//	err = sqldb.Ping() // switches a new file to WAL before the pool opens more connections
//	db := bun.NewDB(sqldb, sqlitedialect.New())
//
// Bound the pool (sqldb.SetMaxOpenConns) and, on PostgreSQL, set a
// statement_timeout, so that no request waits for ever and one process
// cannot take all of a shared server's connections. The reference server's
// manual (Configuration) shows how it opens PostgreSQL with bun's pgdriver:
// four connections a CPU, ten seconds, parallel plans off.
//
// # Transactions
//
// Rules every service follows, and a host's hooks must too:
//
//   - Hooks that decide (may this principal do this?) are asked before any
//     lock is taken: no host code runs under a write lock (on SQLite, the
//     whole database's).
//   - Hooks that change the host's rows with the service's (a
//     trash.Restorer) run inside the service's transaction and do database
//     work through the transaction they are handed, and nothing else.
//   - Senders (SMS, mail, webhooks) never run inside a transaction: what
//     must be sent after a commit is written as a row in the transaction
//     and sent after it commits (an outbox).
//   - Locks are taken in one documented order (the trash's is in its
//     package documentation), and a transaction that PostgreSQL still
//     aborts for a deadlock or a serialization failure is run again a
//     bounded number of times: RunInTx does that, for the services and for
//     the host's own transactions.
//   - No code path holds a connection (a transaction) while it asks the
//     pool for another, which under load or with a pool of one would never
//     come: what a transaction needs is read before it begins, or through
//     it (a hook handed a bun.IDB queries through it). A pool of one
//     connection serves every operation, one at a time.
//
// Every statement runs with the context of the call that asked for it: a
// request's deadline bounds its statements, and a client that hangs up ends
// them and rolls its transaction back (database/sql does this; the services
// add no context in between). What must finish once started (recording that
// a code went out) carries on under the deadline without the cancellation.
//
// # Errors
//
// The sentinels of this package (ErrInvalid, ErrNotFound, ...) are the
// classes of error. Services return them wrapped, return *InputError
// (class ErrInvalid) naming the field and the rule it breaks, and declare
// their own errors with NewError, which match their class through
// errors.Is. An error whose message is meant for the client
// implements ClientMessager; one that knows when to retry implements
// RetryAfterer. httpapi's one error table turns classes and service errors
// into HTTP statuses and stable error keys.
//
// CheckName, CheckText, CheckUniqueName and CheckID are the validation rules
// every service and the reference host share: what a service accepts is
// what it stores and returns. Unique names are unique under FoldName.
//
// # Languages
//
// Every message a person reads comes in English and Simplified Chinese; a
// host adds languages or rewords messages with catalogues (Messages, and
// its Example). httpapi picks a request's language once (Accept-Language,
// the user's locale, the tenant's, the server default) and puts a Localizer
// on its context, with which errors, codes and notices are written. Errors
// and events hold each message once, as a Text (key and arguments, also
// when stored), written in each reader's language where it is read.
//
// # Metrics, traces and request ids
//
// The packages record metrics and spans through the OpenTelemetry API
// alone; the SDK, its exporters and any registry are the host's. Each
// service's Config and httpapi.Config take a MeterProvider and a
// TracerProvider; nil means the global ones, which record nothing until the
// host installs providers. Nothing registers globally. Each package lists
// its instruments (trash.Config, verify.Config, channel's and httpapi's
// Metrics and traces); their attribute deskkit.result is "ok" or the error
// key httpapi answers, the words the client saw.
//
// Every request httpapi serves has an id (the client's X-Request-Id when
// valid, httpapi.ValidRequestID; else a new one), echoed in the answer's
// X-Request-Id and an error envelope's ext.requestId, and carried by its
// context (WithRequestID, RequestID), through which every package logs: a
// host that wraps its slog handler with LogHandler finds every line a
// request wrote by that id.
//
// # Testing
//
//	go run gotest.tools/gotestsum@v1.13.0 -- -race -timeout 30m ./...
//
// runs every storage test against SQLite and, when
// DESKKIT_TEST_DATABASE_URL names a PostgreSQL server (or a Docker engine
// answers), against PostgreSQL too, listing skipped tests with the reason;
// DESKKIT_REQUIRE_POSTGRES=1 turns a missing PostgreSQL into a failure.
//
// Hosts test their side with two importable packages, as with
// net/http/httptest: trash/trashtest (a Restorer with function fields, and
// RunRestorerTests, the conformance suite for the host's own Restorer) and
// verify/verifytest (an in-memory and a function-field Directory, a sender
// that records, and RunDirectoryTests). examples/embed and the reference
// server run both suites against theirs.
package deskkit
