// Command embed is a host application with deskkit inside it: its own
// router, its own tasks and users tables and its own API keys, with
// deskkit's trash, verification and event channel APIs mounted under
// /api/v1/ next to its own routes.
//
//	go run ./examples/embed
//	curl -H 'Authorization: Bearer key-ada' http://127.0.0.1:8081/tasks
//	curl -X DELETE -H 'Authorization: Bearer key-ada' http://127.0.0.1:8081/tasks/1
//	curl -H 'Authorization: Bearer key-ada' 'http://127.0.0.1:8081/api/v1/task/trash/search?targetType=TASK'
//	curl -H 'Authorization: Bearer key-ada' http://127.0.0.1:8081/api/v1/user/current
//
// Changing the password, a flow of the host's own that deskkit's codes
// guard: send a PASSWORD_UPDATE code, read it from the server's log (the
// line "verify: mail not sent, logged"), check it for a link secret, and
// spend the secret on POST /password:
//
//	curl -X POST -H 'Authorization: Bearer key-ada' -H 'Content-Type: application/json' \
//	  -d '{"bizKey":"PASSWORD_UPDATE","toAddress":[["ada@example.com"]]}' \
//	  http://127.0.0.1:8081/api/v1/user/current/email/send
//	curl -H 'Authorization: Bearer key-ada' \
//	  'http://127.0.0.1:8081/api/v1/user/current/email/check?bizKey=PASSWORD_UPDATE&email=ada@example.com&verificationCode=123456'
//	curl -X POST -H 'Authorization: Bearer key-ada' -H 'Content-Type: application/json' \
//	  -d '{"linkSecret":"dkl_...","password":"correct horse battery staple"}' http://127.0.0.1:8081/password
//
// Events: deleting a task publishes two events, the trash's task.trashed
// and the host's own task.deleted, and the tenant's channels get them.
// Start the example with private networks allowed (the SSRF guard refuses
// loopback otherwise), run a receiver on localhost that prints what it
// gets and answers 204, add a webhook channel (the answer holds its
// signing secret, shown then), send it a test event, delete a task,
// and read the channel's deliveries and their attempts:
//
//	EMBED_CHANNEL_ALLOW_PRIVATE_NETWORKS=true go run ./examples/embed
//	socat -v TCP-LISTEN:9000,fork,reuseaddr 'SYSTEM:echo HTTP/1.1 204 No Content;echo'
//	curl -X POST -H 'Authorization: Bearer key-ada' -H 'Content-Type: application/json' \
//	  -d '{"channelType":"WEBHOOK","name":"Ops","address":"http://127.0.0.1:9000/hook"}' \
//	  http://127.0.0.1:8081/api/v1/event/channel
//	curl -X POST -H 'Authorization: Bearer key-ada' -H 'Content-Type: application/json' \
//	  -d '{"id":1,"channelType":"WEBHOOK","name":"Ops","address":"http://127.0.0.1:9000/hook"}' \
//	  http://127.0.0.1:8081/api/v1/event/channel/test
//	curl -H 'Authorization: Bearer key-ada' http://127.0.0.1:8081/api/v1/event/types
//	curl -X DELETE -H 'Authorization: Bearer key-ada' http://127.0.0.1:8081/tasks/2
//	curl -H 'Authorization: Bearer key-ada' http://127.0.0.1:8081/api/v1/event/channel/1/deliveries
//
// Events go through deskkit's transactional outbox. The host registers
// the trash's event types and its own with the registry at start, sets
// the registry as the trash's Publisher, and publishes its own
// task.deleted with ChannelRegistry.Publish inside the delete's
// transaction, the one that calls trash.Add. Publishing only
// writes rows in that transaction: a delete rolled back publishes nothing,
// and a committed one is delivered even if the process dies the next
// instant, by this process or any other running ChannelRegistry.Run on the
// database, after a restart if need be. The program runs Run in the
// background; it makes the attempts, records each, and retries failures on
// a schedule (5 s, 5 min, 30 min, ... over about 27 hours). Delivery is at least
// once: an attempt cut off by a crash is made again, with the same
// webhook-id (the event's id), on which receivers drop duplicates. The
// answer to the delete waits for no receiver. Restores and clears through
// deskkit's trash API publish task.restored, task.cleared and the rest the
// same way, in the trash's transactions.
//
// This example used to send its event itself, from a goroutine once the
// delete had committed, one attempt per channel. That loses the event when
// the process stops between the commit and the send, and for good when a
// receiver is down at that moment; sending inside the transaction instead
// would announce deletes that then roll back, and hold the transaction's
// locks while a receiver answers. The outbox keeps the event with the
// change, until every channel has taken it or its schedule is spent, and
// its deliveries and every attempt can be read (and resent) through the
// API.
//
// The points to take away: the host deletes a task and puts it in the trash
// in one transaction of its own, publishing its event in it; deskkit calls
// back into the host to restore or purge it (the host is the trash's
// Restorer); deskkit asks the host's Authenticator who is calling, and its
// users table how users are named (a trash.UserResolver); the verification
// service reads and changes the host's own users table through the host's
// verify.Directory, writing through the transaction it hands over; the host
// spends a link secret in its own transaction (POST /password); and on
// SIGTERM the host stops taking requests before it stops the event worker,
// which finishes the attempts in flight. The repository's README shows
// this wiring, taken from this program's source.
//
// deskkit's web console is mounted under /manage/ (portal.go): open
// http://127.0.0.1:8081/app, sign in with the key key-ada, and press
// "Trash" or "Webhooks". Each button mints a portal link for the signed-in
// user and that page alone (console.Console.PortalLink, server-side) and
// sends the browser there; the console asks the host on every request
// whether the user is still signed in, so signing out of the host ends the
// console's session too.
//
// EMBED_SECRET, if set, is the server secret (at least 32 characters:
// openssl rand -hex 32) that codes are hashed under and that the key
// encrypting channels' addresses and signing secrets is derived from.
// Without it each start makes a random one: codes sent before a restart no
// longer pass a check, and channels added before it can no longer be read
// (listing them fails, and so does every attempt to deliver to them, until
// they are deleted, or embed.db is).
// EMBED_CHANNEL_ALLOW_PRIVATE_NETWORKS=true lets channels reach loopback
// and private networks, to try a receiver on localhost; it is for
// development only.
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"golang.org/x/crypto/bcrypt"
	_ "modernc.org/sqlite" // the pure-Go "sqlite" driver

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/logsender"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
	log.Print("stopped")
}

// run is main with its deferred calls made before the process exits.
func run() error {
	db, err := openDB("embed.db")
	if err != nil {
		return err
	}
	defer db.Close()
	opts := &appOptions{}
	if s := os.Getenv("EMBED_SECRET"); s != "" {
		if len(s) < verify.MinSecretLength {
			return fmt.Errorf("EMBED_SECRET must be at least %d characters; make one with: openssl rand -hex 32", verify.MinSecretLength)
		}
		opts.Secret = []byte(s)
	}
	opts.AllowPrivateNetworks = os.Getenv("EMBED_CHANNEL_ALLOW_PRIVATE_NETWORKS") == "true"
	ln, err := net.Listen("tcp", "127.0.0.1:8081")
	if err != nil {
		return err
	}
	opts.AppURL = "http://" + ln.Addr().String()
	app, err := newApp(context.Background(), db, opts)
	if err != nil {
		ln.Close()
		return err
	}
	log.Printf("listening on http://%s", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 5 * time.Second}
	return serve(ctx, srv, ln, app)
}

// shutdownGrace is how long a shutdown waits for the requests in progress.
const shutdownGrace = 10 * time.Second

// serve serves srv on ln and runs the event worker (ChannelRegistry.Run)
// until ctx is done (SIGINT or SIGTERM in main), then stops them in this
// order:
//
//  1. the server takes no more requests and finishes those it has, for at
//     most shutdownGrace (http.Server.Shutdown);
//  2. then the worker claims nothing new and serve waits for it to return:
//     Run finishes the attempts in flight, each bounded by the channel
//     timeout (10 s), and records them.
//
// The server stops first so that the requests it finishes may still
// publish; what they publish and the worker does not attempt before it
// stops is not lost but stays in the outbox, for the next start or another
// replica. Nor is anything lost if the process is killed instead: the
// deliveries it had claimed are attempted again once their lease ends.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, h *host) error {
	// [README part 2]
	// The outbox's workers, in every replica: the registry's Run delivers
	// events to channels, the Verifier's its notices to old addresses after
	// a contact change. Their context outlives the server's shutdown.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	ran := make(chan error, 2)
	go func() { ran <- h.channels.Run(runCtx) }()
	go func() { ran <- h.verifier.Run(runCtx) }()
	// [README end of part]
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var err error
	select {
	case err = <-served: // the listener failed
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err = srv.Shutdown(shutdown); err != nil {
			err = fmt.Errorf("shutdown: %w", err)
		}
	}
	stopRun()
	for range 2 {
		if runErr := <-ran; runErr != nil {
			err = errors.Join(err, fmt.Errorf("outbox worker: %w", runErr))
		}
	}
	return err
}

// sqliteDSN is the data source name the deskkit package documentation
// gives for SQLite (its "Storage" section): write-ahead log so
// readers do not block the writer, IMMEDIATE transactions so two writers
// queue instead of failing half-way, a 10 s busy timeout to queue on, and
// foreign keys on.
func sqliteDSN(path string) string {
	return "file:" + path + "?_busy_timeout=10000&_foreign_keys=1&_journal_mode=WAL&_txlock=immediate"
}

// openDB opens the host's SQLite file with bun, as any host would: deskkit
// takes the *bun.DB it is given. The file is created readable by its owner
// only (SQLite gives its -wal and -shm files the same mode), and the pool
// is bounded, as deskkit's own servers bound theirs, so that a burst of
// requests queues for a connection rather than opening without limit.
func openDB(path string) (*bun.DB, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	sqldb, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return nil, err
	}
	// One connection switches a new file to the write-ahead log before the
	// pool opens others: SQLite does not wait for that switch's lock.
	if err := sqldb.Ping(); err != nil {
		sqldb.Close()
		return nil, err
	}
	n := 4 * runtime.GOMAXPROCS(0)
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// apiKeys is the host's own authentication: fixed API keys, each naming a
// principal. It serves both the host's routes and deskkit's.
type apiKeys map[string]deskkit.Principal

// Authenticate compares token with every key, in constant time over hashes
// of equal length, so that the time taken tells nothing about how close a
// guess came to a key.
func (k apiKeys) Authenticate(_ context.Context, token string) (deskkit.Principal, error) {
	got := sha256.Sum256([]byte(token))
	var found deskkit.Principal
	for key, p := range k {
		want := sha256.Sum256([]byte(key))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			found = p
		}
	}
	if !found.Valid() {
		return deskkit.Principal{}, deskkit.ErrUnauthenticated
	}
	return found, nil
}

// task is a row of the host's own table.
type task struct {
	bun.BaseModel `bun:"table:tasks"`

	ID        int64  `bun:"id,pk,autoincrement" json:"id"`
	TenantID  int64  `bun:"tenant_id" json:"-"`
	ProjectID int64  `bun:"project_id" json:"projectId"`
	Title     string `bun:"title" json:"title"`
	CreatedBy int64  `bun:"created_by" json:"createdBy"`
	Deleted   bool   `bun:"deleted" json:"-"`
}

// host is the application: its routes and the trash's hooks. It is the
// http.Handler newApp returns.
type host struct {
	db       *bun.DB
	keys     apiKeys
	trash    *trash.Trash
	verifier *verify.Verifier
	channels *channel.ChannelRegistry
	console  *console.Console
	sessions *hostSessions
	logger   *slog.Logger
	handler  http.Handler

	passwordCost int // bcrypt's
}

// ServeHTTP serves the host's routes and deskkit's.
func (h *host) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// appOptions are newApp's settings; nil or the zero value is what a
// development start needs.
type appOptions struct {
	// Secret is the server secret: the Verifier hashes codes under it, and
	// the channel registry derives the key that encrypts channels'
	// addresses and signing secrets from it. At least
	// verify.MinSecretLength bytes, the same for every replica and across
	// restarts. nil makes 32 random bytes per start, so that the example
	// runs on a fresh machine; codes in flight and stored channels then do
	// not survive a restart.
	Secret []byte
	// Logger gets the log senders' lines (codes included) and unexpected
	// errors; slog.Default if nil.
	Logger *slog.Logger
	// PasswordCost is the bcrypt cost of password hashes;
	// bcrypt.DefaultCost if 0. Tests lower it: each step up doubles the
	// time a hash takes.
	PasswordCost int
	// AllowPrivateNetworks lets event channels reach loopback and private
	// networks: for a webhook receiver on localhost in development and
	// tests, never in production.
	AllowPrivateNetworks bool
	// Keys are the API keys the host accepts; key-ada alone if nil.
	Keys apiKeys
	// RetrySchedule is the delay before each attempt of an event's
	// delivery; channel.DefaultRetrySchedule if nil. Tests shorten it.
	RetrySchedule []time.Duration
	// Now is the console's clock (its links and sessions); time.Now if nil.
	Now func() time.Time
	// ConsoleFrameAncestors are the origins whose pages may frame the
	// console's; none if nil.
	ConsoleFrameAncestors []string
	// AppURL is where the host's pages are served, such as
	// http://127.0.0.1:8081: its origin is the console's one host origin,
	// and its /app page the portal links' return URL (the console's "Back
	// to Embed"). Empty: links carry no return URL.
	AppURL string
}

// newApp creates the host's tables and deskkit's, and a few tasks and
// users if missing, and returns the host, the handler with deskkit mounted
// in it. Events published through it are delivered by its channels' Run
// (see serve), in this process or any other on the same database.
func newApp(ctx context.Context, db *bun.DB, opts *appOptions) (*host, error) {
	var o appOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PasswordCost == 0 {
		o.PasswordCost = bcrypt.DefaultCost
	}
	if o.Keys == nil {
		o.Keys = apiKeys{"key-ada": {UserID: 1, TenantID: 1, Admin: true}}
	}
	if o.Secret == nil {
		// One secret for every service: made here once, not by each.
		o.Secret = make([]byte, 32)
		if _, err := rand.Read(o.Secret); err != nil {
			return nil, err
		}
	}
	if _, err := db.NewCreateTable().Model((*task)(nil)).IfNotExists().Exec(ctx); err != nil {
		return nil, err
	}
	if n, err := db.NewSelect().Model((*task)(nil)).Count(ctx); err != nil {
		return nil, err
	} else if n == 0 {
		seed := []task{
			{TenantID: 1, ProjectID: 1, Title: "Draft the launch plan", CreatedBy: 1},
			{TenantID: 1, ProjectID: 1, Title: "Book the venue", CreatedBy: 1},
		}
		if _, err := db.NewInsert().Model(&seed).Exec(ctx); err != nil {
			return nil, err
		}
	}
	if err := createUsers(ctx, db); err != nil {
		return nil, err
	}
	h := &host{db: db, keys: o.Keys, logger: o.Logger, passwordCost: o.PasswordCost}
	// [README part 1]
	// deskkit's tables beside the host's; each service migrates its own,
	// and its New refuses to start, naming the call, before it has.
	for _, migrate := range []func(context.Context, *bun.DB) error{trash.Migrate, verify.Migrate, channel.Migrate, console.Migrate} {
		if err := migrate(ctx, db); err != nil {
			return nil, err
		}
	}
	// The event channels. nil: no mail server, so EMAIL deliveries fail and
	// are retried; a real host passes its deskkit.Mailer (an SMTP mailer).
	chans, err := channel.New(db, o.Secret, nil, &channel.Config{AppName: "Embed", Logger: o.Logger,
		AllowPrivateNetworks: o.AllowPrivateNetworks, RetrySchedule: o.RetrySchedule})
	if err != nil {
		return nil, err
	}
	// Every event type anyone publishes, registered before the services
	// are built: trash.New and verify.New refuse a registry that does not
	// know their types, and Publish refuses a type nobody registered.
	if err := chans.RegisterEventTypes(slices.Concat(trash.EventTypes(), verify.EventTypes(), hostEventTypes())...); err != nil {
		return nil, err
	}
	// The services publish through the registry in their transactions
	// (trash.Add: in the host's). Codes go to the log in clear, for
	// development; a real host passes an SMS sender and an SMTP mailer.
	tr, err := trash.New(db, h, &trash.Config{Publisher: chans, Users: hostUsers{db}})
	if err != nil {
		return nil, err
	}
	logSender := logsender.Sender{Logger: o.Logger, ShowCodes: true}
	v, err := verify.New(db, hostUsers{db}, logSender, logSender, o.Secret,
		&verify.Config{AppName: "Embed", Logger: o.Logger, Publisher: chans})
	if err != nil {
		return nil, err
	}
	api, err := httpapi.New(&httpapi.Config{Authenticator: h.keys, Trash: tr, Verifier: v, Channels: chans, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tasks", h.listTasks) // the host's own routes
	mux.HandleFunc("DELETE /tasks/{id}", h.deleteTask)
	mux.HandleFunc("POST /password", h.setPassword)
	// Wrap hands /api/v1 to deskkit as it came; the mux would redirect
	// DELETE /api/v1/task/trash/7/..?projectId=P to a clear of project P.
	h.handler = api.Wrap(mux)
	// [README end of part]
	h.trash, h.verifier, h.channels = tr, v, chans
	// deskkit's console for the host's signed-in users, opened through
	// portal links from the host's pages (portal.go), under /manage/.
	h.sessions = &hostSessions{byID: map[string]deskkit.Principal{}}
	if h.console, err = newConsole(db, o.Secret, h.sessions, tr, v, chans, o); err != nil {
		return nil, err
	}
	(&appPages{h: h, sessions: h.sessions, console: h.console, logger: o.Logger, appURL: strings.TrimSuffix(o.AppURL, "/")}).routes(mux)
	inner := h.handler
	// The console gets its paths as they came: the mux would redirect an
	// unclean path (/manage/../tasks) rather than refuse it.
	h.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.console.Handles(r.URL.Path) {
			h.console.ServeHTTP(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	})
	return h, nil
}

// principal authenticates a request to the host's own routes.
func (h *host) principal(r *http.Request) (deskkit.Principal, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return deskkit.Principal{}, false
	}
	p, err := h.keys.Authenticate(r.Context(), token)
	return p, err == nil
}

func (h *host) listTasks(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(r)
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	tasks := []task{}
	if err := h.db.NewSelect().Model(&tasks).Where("tenant_id = ? AND NOT deleted", p.TenantID).Order("id").Scan(r.Context()); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(tasks)
}

// deleteTask deletes a task of the caller's tenant (deleteTx) and
// answers once the transaction has committed: the events it published are
// in the outbox by then, and the answer waits for no receiver.
func (h *host) deleteTask(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(r)
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		http.Error(w, "id must be a positive integer", http.StatusBadRequest)
		return
	}
	err = h.db.RunInTx(r.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		return h.deleteTx(ctx, tx, p, id)
	})
	var ie *deskkit.InputError
	switch {
	case errors.Is(err, deskkit.ErrNotFound):
		http.Error(w, "no such task", http.StatusNotFound)
	case errors.As(err, &ie):
		// The trash refused the entry (a title it does not take); its
		// message names the field and the rule, and nothing internal.
		http.Error(w, ie.ClientMessage(), http.StatusBadRequest)
	case err != nil:
		h.logger.ErrorContext(r.Context(), "embed: delete task", slog.Int64("task", id), slog.Any("error", err))
		http.Error(w, "internal error", http.StatusInternalServerError)
	default:
		fmt.Fprintln(w, "moved to the trash")
	}
}

// deleteTx hides task id of p's tenant, puts it in the trash and
// publishes task.deleted, all through tx: if deskkit refuses the entry,
// the task is not deleted either, and if anything fails, or the caller
// rolls tx back for reasons of its own, neither the trash's task.trashed
// (which trash.Add publishes through tx) nor the host's task.deleted is
// sent. A task that is not there, or already deleted, is an error
// matching deskkit.ErrNotFound.
func (h *host) deleteTx(ctx context.Context, tx bun.Tx, p deskkit.Principal, id int64) error {
	var t task
	err := tx.NewSelect().Model(&t).Where("id = ? AND tenant_id = ? AND NOT deleted", id, p.TenantID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return deskkit.ErrNotFound
	} else if err != nil {
		return err
	}
	if _, err := tx.NewUpdate().Model(&t).Set("deleted = TRUE").WherePK().Exec(ctx); err != nil {
		return err
	}
	// [README part 3]
	// In the host's delete transaction (tx): the task goes to the trash and
	// the host's own event is published, committed with the delete or not
	// at all. (The trash publishes its task.trashed through tx too.)
	if _, err := h.trash.Add(ctx, tx, p, trash.NewEntry{
		ProjectID: t.ProjectID, TargetType: trash.TargetTask, TargetID: t.ID, TargetName: t.Title, CreatedBy: t.CreatedBy,
	}); err != nil {
		return err
	}
	actor, err := actorOf(ctx, tx, p)
	if err != nil {
		return err
	}
	if err := h.channels.Publish(ctx, tx, p.TenantID, deletedEvent(t, actor)); err != nil {
		// The host's own event: a refusal is the host's bug, not the
		// client's input, so the chain is cut and the delete answers 500.
		return fmt.Errorf("publish %s: %v", eventTaskDeleted, err)
	}
	// [README end of part]
	return nil
}

// Restore is called by deskkit, inside its transaction, to bring a task back.
func (h *host) Restore(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	_, err := tx.NewUpdate().Model((*task)(nil)).Set("deleted = FALSE").
		Where("id = ? AND tenant_id = ?", e.TargetID, e.TenantID).Exec(ctx)
	return err
}

// Purge is called by deskkit, inside its transaction, to delete a task for good.
func (h *host) Purge(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	_, err := tx.NewDelete().Model((*task)(nil)).
		Where("id = ? AND tenant_id = ? AND deleted", e.TargetID, e.TenantID).Exec(ctx)
	return err
}

// Passwords are 8 to 72 bytes: 72 is what bcrypt hashes.
const (
	minPasswordLength = 8
	maxPasswordLength = 72
)

// setPassword changes the caller's password, with proof that they read a
// PASSWORD_UPDATE code: the link secret that checking the code answered.
// The secret is spent in the host's own transaction, together with the
// new hash: a refused secret changes nothing, and a failed update leaves
// the secret good for another try.
func (h *host) setPassword(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(r)
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var req struct {
		LinkSecret string `json:"linkSecret"`
		Password   string `json:"password"`
	}
	// httpapi.DecodeJSON, not a bare json.Decoder: it refuses a password
	// that is not UTF-8 (encoding/json would hash its bad bytes as U+FFFD),
	// unknown fields and keys given twice, naming the field.
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		http.Error(w, err.Error()+`; the body must be {"linkSecret": "...", "password": "..."}`, http.StatusBadRequest)
		return
	}
	if n := len(req.Password); n < minPasswordLength || n > maxPasswordLength {
		http.Error(w, fmt.Sprintf("password must be %d to %d bytes", minPasswordLength, maxPasswordLength), http.StatusBadRequest)
		return
	}
	// Hashed before the transaction: bcrypt is slow by design, and SQLite
	// has one writer at a time for as long as a transaction lasts.
	hash, err := bcrypt.GenerateFromPassword([]byte(req.Password), h.passwordCost)
	if err != nil {
		h.logger.ErrorContext(r.Context(), "embed: hash password", slog.Any("error", err))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	err = h.db.RunInTx(r.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := h.verifier.Redeem(ctx, tx, p, verify.PasswordUpdate, req.LinkSecret); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*userRow)(nil)).Set("password_hash = ?", string(hash)).
			Where("u.id = ? AND u.tenant_id = ?", p.UserID, p.TenantID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return deskkit.ErrNotFound
		}
		return nil
	})
	switch {
	case errors.Is(err, verify.ErrLinkSecret):
		http.Error(w, "linkSecret is not valid: check a PASSWORD_UPDATE code sent to you to get one; each is good once", http.StatusForbidden)
	case errors.Is(err, deskkit.ErrNotFound):
		http.Error(w, "no such user", http.StatusNotFound)
	case err != nil:
		h.logger.ErrorContext(r.Context(), "embed: set password", slog.Any("error", err))
		http.Error(w, "internal error", http.StatusInternalServerError)
	default:
		fmt.Fprintln(w, "password changed")
	}
}
