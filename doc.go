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
//     deskkit.Mailer (SMTP, an HTTP gateway, Twilio and a log sender are
//     included).
//   - channel.ChannelRegistry keeps each tenant's event channels (a signed
//     webhook, e-mail, a WeCom and a DingTalk robot), adds, replaces, lists,
//     deletes and tests them, and delivers events through them: the
//     services and the host publish an Event in the transaction of their
//     change (ChannelRegistry.Publish, a Publisher), and ChannelRegistry.Run
//     delivers it from a transactional outbox, with retries, in every
//     replica. Outbound requests pass an SSRF guard; secrets are stored
//     encrypted.
//   - httpapi.Server mounts the services on an http.Handler at /api/v1, with
//     bearer authentication through an httpapi.Authenticator, the common
//     response envelope (package envelope) and one table that maps errors to
//     HTTP statuses. Its OpenAPI document is served at /api/v1/openapi.json.
//
// Every method acts for a Principal: a user of a tenant, perhaps an admin.
// Every query is scoped to the principal's tenant; rows of another tenant
// behave exactly as if they did not exist.
//
// The package's Example builds the trash, the event channels and the HTTP
// API over one SQLite file, as a host does, and serves a search beside a
// route of the host's own; examples/embed is a whole host application, and
// examples/server the reference server.
//
// # Storage
//
// The services keep their state with github.com/uptrace/bun on PostgreSQL
// (pgdialect, pgdriver) or SQLite (sqlitedialect, the pure-Go
// modernc.org/sqlite driver). Their tables are prefixed deskkit_; each
// service migrates its own tables (trash.Migrate, verify.Migrate,
// channel.Migrate) with bun's migrator under its own migrations table, so
// they never collide with the host's.
//
// A host that opens SQLite itself must open it with the settings deskkit
// relies on: write-ahead logging (readers never block the writer),
// IMMEDIATE transactions (two writers queue instead of one failing half-way)
// and a busy timeout to queue on:
//
//	sqldb, err := sql.Open("sqlite", "file:app.db?_busy_timeout=10000&_foreign_keys=1&_journal_mode=WAL&_txlock=immediate")
//	err = sqldb.Ping() // switches a new file to WAL before the pool opens more connections
//	db := bun.NewDB(sqldb, sqlitedialect.New())
//
// Ping before the pool is used concurrently: switching a new file to the
// write-ahead log takes a lock SQLite does not wait for, so connections
// opened at once on a new file could fail with SQLITE_BUSY.
//
// Bound the pool (sqldb.SetMaxOpenConns) and, on PostgreSQL, set a
// statement_timeout, so that no request waits for ever and one process
// cannot take all of a shared server's connections; the reference server
// uses four connections a CPU and ten seconds. Its sessions also set
// max_parallel_workers_per_gather to 0: deskkit's statements are short and
// many, and a parallel plan only takes CPU from the others. With bun's
// pgdriver, as the reference server opens it:
//
//	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn),
//		pgdriver.WithDialTimeout(5*time.Second),
//		pgdriver.WithConnParams(map[string]any{
//			"statement_timeout":               int64(10_000), // milliseconds
//			"max_parallel_workers_per_gather": int64(0),
//		})))
//	n := 4 * runtime.GOMAXPROCS(0)
//	sqldb.SetMaxOpenConns(n)
//	sqldb.SetMaxIdleConns(n) // a burst does not close and reopen connections
//	sqldb.SetConnMaxIdleTime(5 * time.Minute)
//	db := bun.NewDB(sqldb, pgdialect.New())
//
// # Transactions
//
// Rules every service follows, and a host's hooks must too:
//
//   - Hooks that decide (may this principal do this?) are asked before any
//     lock is taken: no host code runs under a write lock (on SQLite, the
//     whole database's).
//   - Hooks that change the host's rows with the service's (a trash
//     Restorer) run inside the service's transaction, doing database work
//     through the transaction they are handed and nothing else.
//   - Senders (SMS, mail, webhooks) never run inside a transaction. What
//     must be sent after a commit is written as a row in the transaction and
//     sent after it commits (an outbox).
//   - Locks are taken in one documented order, and a transaction that
//     PostgreSQL still aborts for a deadlock or a serialization failure
//     (SQLSTATE 40P01, 40001) is run again a bounded number of times:
//     RunInTx does that, for the services and for a host's own
//     transactions (the delete that calls trash.Trash.Add).
//   - No code path holds a connection (a transaction) while it asks the
//     pool for another. A transaction holds one connection of the bounded
//     pool until it ends; a lookup through the pool inside it waits for a
//     second, which under load (every connection held by a transaction
//     waiting the same way) or with a pool of one never comes, and the
//     request answers 503 at its deadline. So what a transaction needs is
//     read before it begins (the services ask their hooks, and read the
//     rows they authorize on, first) or through it: the hooks that run in a
//     transaction get it as a bun.IDB and query through it, as
//     trash.UserResolver does for the actor's name of the event of an
//     Add, which runs in the host's transaction; an outbox statement is
//     prepared on the pool only where no connection is held, and on the
//     transaction's own connection inside it. A pool of ONE connection
//     serves every operation, one at a time: the reference server's
//     TestPoolOfOne sends each of its routes, deskkit's and its demo
//     host's, eight times at once to a server with one connection, on
//     SQLite and PostgreSQL, and every request must succeed.
//
// Every statement runs with the context of the call that asked for it: a
// request's deadline bounds its statements, and a client that hangs up
// ends them and rolls its transaction back (database/sql does this, and
// the services add no context of their own in between). What must finish
// once started, such as recording that a verification code went out,
// carries on under the request's deadline without its cancellation.
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
// Each service's New checks that its Migrate has run (one catalog query,
// bounded by 5 s) and refuses to start with an error naming the call it
// misses; a host mounting the console runs console.Migrate in the loop too.
// A type nobody registered is refused by Publish, so a trash built without
// trash.EventTypes() registered fails its first Add. Without Run, events
// and notices wait in the outbox; any process running it on the database
// delivers them, after a restart if need be.
//
// Serve api.Wrap(mux), not mux.Handle("/api/v1/", api): an http.ServeMux
// answers a path that is not clean with a redirect to its cleaned form
// before any handler runs, so DELETE /api/v1/task/trash/3/..?projectId=1
// would answer 307 to /api/v1/task/trash?projectId=1, and a client that
// follows it clears the project. Wrap hands deskkit every request whose
// path is under /api/v1 as written, decoded or cleaned (//api/v1/...,
// /x/../api/v1/..., /api%2Fv1/...), uncleaned; deskkit routes on the
// escaped path, never redirects, and answers such paths 404.
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
// # Metrics, traces and request ids
//
// The packages record metrics and spans through the OpenTelemetry API
// alone (go.opentelemetry.io/otel/metric and /trace); the SDK, its
// exporters and any Prometheus registry are the host's. Each service's
// Config (trash.Config, verify.Config, channel.Config) and httpapi.Config
// take a MeterProvider and a TracerProvider; nil means the global ones
// (otel.GetMeterProvider, otel.GetTracerProvider), which record nothing
// until the host installs providers, as bun's bunotel and River's
// otelriver do. Nothing registers globally. The instruments:
//
//   - http.server.request.duration (s): http.route (the template,
//     /api/v1/task/trash/{id}; absent when no route matched),
//     http.request.method, http.response.status_code.
//   - deskkit.trash.operations: deskkit.operation (add, get, search,
//     count, restore, restore_project, clear, clear_project, purge),
//     deskkit.kind (task, sprint, or "") and deskkit.result.
//   - deskkit.verify.codes.sent and deskkit.verify.codes.checked:
//     deskkit.channel (sms, email) and deskkit.result;
//     deskkit.verify.rate_limited: deskkit.limit (resend_interval,
//     per_hour, per_address_per_day, per_day, failures_per_day).
//   - deskkit.events.published: deskkit.event.type.
//   - deskkit.deliveries and deskkit.delivery.duration (s), the outbox's
//     attempts (the channels' events and verify's notices to old
//     addresses): deskkit.channel.type (WEBHOOK, EMAIL, ENTERPRISE_CHAT,
//     WORKPLACE_CHAT, verify.notice) and deskkit.result (succeeded,
//     failed, retrying).
//   - deskkit.outbox.depth and deskkit.outbox.oldest_due_age (s),
//     observable gauges read while channel.ChannelRegistry.Run runs.
//
// deskkit.result is "ok" or the error key httpapi answers for the error
// (resource_not_found, verification_code_wrong, ...): the same words the
// client saw. Every service operation has a span ("trash.Restore",
// "verify.SendSMS", "channel.Test"), as has every delivery attempt
// ("channel.deliver", "verify.notice"), with status Error when it failed;
// httpapi starts a server span per request named after its route ("GET
// /api/v1/task/trash/search"), under a parent taken from the request's
// headers by the global propagator (otel.GetTextMapPropagator, which
// takes none until the host sets one).
//
// Every request httpapi serves has an id: the client's X-Request-Id when
// valid (httpapi.ValidRequestID), a new one otherwise. It is echoed in
// the X-Request-Id of the answer and in ext.requestId of an error
// envelope, and carried by the request's context (WithRequestID,
// RequestID), through which every package logs (Logger.ErrorContext and
// the like); a host that wraps its slog handler with LogHandler finds
// every line a request wrote by that id, as the reference server does.
//
// # The reference server
//
//	go run ./examples/server
//
// serves the API on 127.0.0.1:8080 over an SQLite file deskkit.db, with a
// demo tenant, user and bearer token (printed as a ready curl line) and demo
// tasks and sprints to delete and restore. DESKKIT_DATABASE_URL (or
// -database-url) points it at PostgreSQL instead. Its manual is
// examples/server/README.md.
//
// # Errors
//
// The sentinels of this package are the classes of error: ErrInvalid,
// ErrUnauthenticated, ErrForbidden, ErrNotFound, ErrConflict,
// ErrRateLimited and ErrUnavailable. Services return them wrapped, return
// *InputError (class ErrInvalid) naming the field and the rule it breaks,
// and declare their own errors with NewError, which match their class
// through errors.Is. An error whose message is meant for the client
// implements ClientMessager; one that knows when to retry implements
// RetryAfterer. httpapi's one error table turns classes and service errors
// into HTTP statuses and stable error keys; see its package documentation.
//
// CheckName, CheckText and CheckID are the validation rules every service
// and the reference host share: what a service accepts is exactly what it
// stores and returns. No name may hold a bidirectional embedding, override
// or isolate (U+202A to U+202E, U+2066 to U+2069). Names that must be unique
// (usernames, tenant names, channel names) follow CheckUniqueName, which also
// refuses invisible characters and spaces at either end, and are unique
// without case: FoldName (NFC, Unicode full case folding, NFC again,
// invisible characters dropped, white space collapsed) gives the key the
// stores keep under a unique index.
//
// # Languages
//
// Every message a person reads comes in English and Simplified Chinese,
// and a host may add languages or reword messages. Messages holds them: a
// host makes one with NewMessages and hands it to what renders messages.
// Match picks a reader's language from the request's Accept-Language, then
// the user's locale, then the tenant's, then the server default; zh,
// zh-CN, zh-Hans and zh-Hans-CN all mean Simplified Chinese. The request's
// language travels in its context (WithLanguage, LanguageOf), so that a
// verification code asked for in Chinese is sent in Chinese, and the notice
// of a changed address later in the same language.
//
// A message's key is its English text, the fmt format the code writes
// ("must be at most %d characters"): English needs no catalogue and stays
// exactly as clients have seen it. The client messages of deskkit's errors
// (*InputError, *Error, *RateLimitError and the services' own) and Text
// implement LocalizedMessager: LocalizedMessage writes them in a language,
// ClientMessage in English. Machine words (field names, bizKeys, codes,
// enum values, URLs) are the same in every language.
//
// Languages are matched with golang.org/x/text/language, which reads
// Accept-Language's quality values and knows which tags mean the same
// language. Messages are formatted with fmt from catalogues keyed by the
// English text, rather than with golang.org/x/text/message, whose printer
// writes numbers the locale's way (2000 as "2,000" in English) and so
// would change English messages, or github.com/nicksnyder/go-i18n, whose
// messages are keyed by ids and written in templates: deskkit's messages
// are fmt formats already, their arguments are mostly machine words, and a
// catalogue keyed by the English text needs no id per message and cannot
// fall out of step with it (a test of deskkit fails when the code writes a
// message the Chinese catalogue lacks, or the catalogue keeps one the code
// no longer writes). A catalogue is a JSON object of English text to
// translation, in an fs.FS; see NewMessages and the Example of Messages.
//
// # Testing
//
//	go run gotest.tools/gotestsum@v1.13.0 -- -race -timeout 30m ./...
//
// runs every storage test against SQLite and, when
// DESKKIT_TEST_DATABASE_URL names a PostgreSQL server (or a Docker engine
// answers), against PostgreSQL too; skipped tests are listed with the
// reason. DESKKIT_REQUIRE_POSTGRES=1 turns a missing PostgreSQL into a
// failure instead of a skip.
//
// Hosts test their side with two importable packages, as with
// net/http/httptest: trash/trashtest (a trash.Restorer fake with function
// fields, and RunRestorerTests, the conformance suite for the host's own
// Restorer) and verify/verifytest (an in-memory verify.Directory, a
// function-field one, a sender that records, and RunDirectoryTests for the
// host's own Directory). examples/embed and the reference server run both
// suites against theirs.
package deskkit
