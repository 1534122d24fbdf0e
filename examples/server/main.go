// Command server is deskkit's reference server: the trash, verification and
// event channel APIs over deskkit's own user directory, with a small demo host that owns
// tasks and sprints, so that deleting, searching, restoring and clearing
// all work against real rows.
//
//	go run ./examples/server
//
// starts it on 127.0.0.1:8080 with the SQLite file deskkit.db in the working
// directory and creates the tenant "demo" with the admin user "demo". On the
// first start it prints curl commands carrying a bearer token for that user;
// only the token's hash is kept, so later starts mint none and print how to
// get one instead.
//
// # Usage
//
//	server [serve] [-addr ADDR] [-database-url URL] [-retention DURATION] [-demo=false]
//	       [-db-max-conns N] [-db-statement-timeout DURATION] [-request-timeout DURATION]
//	       [-smtp-addr HOST:PORT] [-smtp-from ADDR] [-smtp-username NAME] [-smtp-tls none|starttls|tls]
//	       [-sms-provider log|http|twilio] [-sms-http-url URL]
//	       [-twilio-account-sid SID] [-twilio-from FROM] [-twilio-base-url URL]
//	       [-code-ttl DURATION] [-resend-interval DURATION] [-sends-per-hour N]
//	       [-sends-per-day N] [-failures-per-day N] [-dev-log-codes]
//	       [-channel-allow-private-networks] [-channel-tests-per-minute N]
//	       [-channel-resends-per-minute N] [-channel-timeout DURATION]
//	       [-event-retry-schedule D,D,...] [-event-disable-after DURATION]
//	       [-event-disable-min-failures N] [-event-log-retention DURATION]
//	       [-event-concurrency N] [-event-batch-size N] [-event-channel-in-flight N]
//	       [-event-tenant-concurrency N]
//	       [-metrics-addr ADDR [-pprof]]
//	server token -tenant NAME -username NAME [-admin | -admin=false] [-ttl DURATION]
//	       [-email ADDR] [-mobile NUMBER -country REGION] [-database-url URL]
//	server token -tenant NAME -username NAME -console [-base-url URL] [-ttl DURATION]
//	server token -revoke [-database-url URL] < FILE-HOLDING-THE-TOKEN
//	server seed -projects P -entries N [-tenant NAME] [-database-url URL]
//	server help [serve|token|seed]
//	server -version
//
// -h (or help) lists the commands, the flags of one with their environment
// variables, and the environment variables that carry secrets. -version
// (or version) prints the module version from the binary's build
// information: a release tag ("v0.3.0") when built from a module version,
// "(devel)" with the commit (vcs.revision, vcs.time, "+dirty" for
// uncommitted changes) when built from a checkout, and the Go version.
// Building needs Go 1.26.8 or later (go.mod).
//
// Every flag has an environment variable; a flag given on the command line
// wins over it:
//
//	-addr                  DESKKIT_ADDR                  listen address (127.0.0.1:8080)
//	-database-url          DESKKIT_DATABASE_URL          postgres://... or sqlite:PATH (sqlite:deskkit.db)
//	-retention             DESKKIT_TRASH_RETENTION       purge trash entries older than this, e.g. 720h; 0 keeps them
//	-demo                  DESKKIT_DEMO                  create the demo tenant and user; token on first start (true)
//	-db-max-conns          DESKKIT_DB_MAX_CONNS          most database connections (4 x GOMAXPROCS)
//	-db-statement-timeout  DESKKIT_DB_STATEMENT_TIMEOUT  PostgreSQL statement_timeout
//	-request-timeout       DESKKIT_REQUEST_TIMEOUT       deadline of every API request, then 503
//	-smtp-addr             DESKKIT_SMTP_ADDR             SMTP server; without it e-mail is only logged
//	-smtp-from             DESKKIT_SMTP_FROM             sender of e-mail
//	-smtp-username         DESKKIT_SMTP_USERNAME         SMTP AUTH user
//	-smtp-tls              DESKKIT_SMTP_TLS              none, starttls or tls (none on loopback, else starttls)
//	-sms-provider          DESKKIT_SMS_PROVIDER          log, http or twilio (http with a URL, twilio with an account)
//	-sms-http-url          DESKKIT_SMS_HTTP_URL          the http provider's gateway
//	-twilio-account-sid    DESKKIT_TWILIO_ACCOUNT_SID    Twilio account
//	-twilio-from           DESKKIT_TWILIO_FROM           Twilio sender number or Messaging Service SID
//	-twilio-base-url       DESKKIT_TWILIO_BASE_URL       Twilio API root (https://api.twilio.com)
//	-code-ttl              DESKKIT_CODE_TTL              lifetime of a code (5m, at most 10m)
//	-resend-interval       DESKKIT_RESEND_INTERVAL       one code per user, bizKey and address within it (1m)
//	-sends-per-hour        DESKKIT_SENDS_PER_HOUR        codes per user and address per hour (10)
//	-sends-per-day         DESKKIT_SENDS_PER_DAY         codes per user per day (20)
//	-sends-per-address-per-day
//	                       DESKKIT_SENDS_PER_ADDRESS_PER_DAY  codes per address per day, all users
//	                                                     and tenants together (30)
//	-failures-per-day      DESKKIT_FAILURES_PER_DAY      wrong codes per user per day (20)
//	-dev-log-codes         DESKKIT_DEV_LOG_CODES         development only: log codes in clear
//	-channel-allow-private-networks
//	                       DESKKIT_CHANNEL_ALLOW_PRIVATE_NETWORKS
//	                                                     development only: channels may reach loopback
//	                                                     and private networks (metadata stays blocked)
//	-channel-tests-per-minute
//	                       DESKKIT_CHANNEL_TESTS_PER_MINUTE  test messages per tenant per minute (20)
//	-channel-resends-per-minute
//	                       DESKKIT_CHANNEL_RESENDS_PER_MINUTE  resends and recovers of deliveries per tenant
//	                                                     per minute, together (20)
//	-channel-timeout       DESKKIT_CHANNEL_TIMEOUT       bound of one channel message, dial to reply (10s)
//	-event-retry-schedule  DESKKIT_EVENT_RETRY_SCHEDULE  delays before each attempt of an event's delivery,
//	                                                     comma-separated Go durations (0,5s,5m,30m,2h,5h,10h,10h)
//	-event-disable-after   DESKKIT_EVENT_DISABLE_AFTER   disable a channel whose deliveries all failed this long (120h)
//	-event-disable-min-failures
//	                       DESKKIT_EVENT_DISABLE_MIN_FAILURES
//	                                                     failed attempts it needs besides (10)
//	-event-log-retention   DESKKIT_EVENT_LOG_RETENTION   keep finished deliveries and attempts this long (720h)
//	-event-concurrency     DESKKIT_EVENT_CONCURRENCY     delivery attempts this server makes at once (16)
//	-event-batch-size      DESKKIT_EVENT_BATCH_SIZE      due deliveries one claim takes at most (-event-concurrency)
//	-event-channel-in-flight
//	                       DESKKIT_EVENT_CHANNEL_IN_FLIGHT  deliveries one channel may have in flight,
//	                                                     across every replica (4)
//	-event-tenant-concurrency
//	                       DESKKIT_EVENT_TENANT_CONCURRENCY  of those attempts, how many one tenant's may
//	                                                     hold (half of -event-concurrency)
//	-metrics-addr          DESKKIT_METRICS_ADDR          a second listener serving /metrics; none by default
//	-pprof                 DESKKIT_PPROF                 /debug/pprof/ on the metrics listener (needs -metrics-addr)
//
// Secrets come from the environment only, never from flags, which every
// process listing shows:
//
//	DESKKIT_SECRET            the server secret (at least 32 characters) that codes are
//	                          hashed and channel secrets encrypted under; unset: one is
//	                          created on the first start and kept in the database, in
//	                          clear beside what it keys: set it in production
//	DESKKIT_SECRET_PREVIOUS   the secret before a rotation, so codes in flight stay valid
//	                          and channels stored before it stay readable
//	DESKKIT_SMTP_PASSWORD     SMTP AUTH password
//	DESKKIT_TWILIO_AUTH_TOKEN Twilio auth token
//
// DESKKIT_TWILIO_ACCOUNT, DESKKIT_TWILIO_TOKEN and DESKKIT_TWILIO_SENDER are
// read too, where the longer names above are not set.
//
// # Tokens
//
// token creates the tenant and the user if missing and prints a new bearer
// token alone on stdout, for scripts:
//
//	TOKEN=$(go run ./examples/server token -tenant demo -username ada)
//
// It changes the user's role only when told: without -admin a new user is
// created a non-admin and an existing user keeps its role; -admin makes the
// user an admin and -admin=false makes it a non-admin. -ttl 720h makes the
// token expire after that long (0, the default, never); the log line on
// stderr says when.
//
// -email, -mobile and -country give the user contact details (the operator
// vouches for them: they are not verified), normalized as the verification
// service stores them: "-mobile 13800138000 -country CN" is +8613800138000.
//
// token -revoke revokes a token, expired or not. It reads the token from
// standard input (its first line), not from the command line, where it
// would land in the shell history and in every process listing:
//
//	printf '%s\n' "$TOKEN" | go run ./examples/server token -revoke
//
// It prints nothing on stdout, logs which user the token was issued to, and
// exits 0; for a token the directory does not know (never issued, or
// revoked already) it fails with exit status 1.
//
// token -console prints, instead of the token, a one-time link that signs
// the user in to the web console: valid 10 minutes, usable once, stored
// hashed. The link starts with -base-url, or http:// and DESKKIT_ADDR (the
// default address without it). The token it signs in with is never shown
// and expires with the longest session it can open (12 h 10 min) unless
// -ttl says otherwise.
//
// seed bulk-loads trash entries for benchmarks; see seed.go for the names it
// generates and which search terms match how many entries.
//
// # Events
//
// The server delivers events: the trash's (task.trashed, ...), the
// verification service's (user.email.changed, ...), channel.disabled and
// the demo host's own, demo.hello, which an admin publishes by hand (POST
// /api/v1/demo/event/publish). These types are the catalogue (GET
// /api/v1/event/types), registered in code when the server starts, the
// same for every tenant and every replica: a publish of another type is
// 400 and registers nothing. Each is written in the transaction of its
// change, into an outbox in the database, and the server's workers deliver
// it to the tenant's enabled channels that subscribe to it, with the
// retries of -event-retry-schedule; several servers on one PostgreSQL
// database share the work (each delivery claimed by one), woken by
// LISTEN/NOTIFY. On SIGTERM the workers claim nothing new and finish the
// attempts in flight; what a killed server had claimed is attempted again
// by another, or by the next start, when its lease ends.
//
// # Metrics and traces
//
// -metrics-addr opens a second listener, never the API's, serving /metrics
// in Prometheus's text format through OpenTelemetry's Prometheus exporter,
// on a registry of the server's own (never the global one), with the Go
// runtime's and the process's collectors beside it. The server's
// instruments are the database pool's, observed from db.Stats() at each
// scrape so that requests pay nothing for them:
//
//	db.client.connection.count      {connection}  by db.client.connection.state: used, idle
//	db.client.connection.max        {connection}  the most the pool opens
//	db.client.connection.wait_count {wait}        statements that waited for a connection
//	db.client.connection.wait_time  s             how long they waited
//
// (db_client_connection_count{db_client_connection_state="idle"},
// db_client_connection_wait_time_seconds_total, ... once exported). The
// library's packages default to the global providers, so serve makes its
// MeterProvider (and TracerProvider) the global ones before it builds the
// services, and puts the previous ones back when it returns. -pprof adds
// the runtime's profiles under /debug/pprof/ on the metrics listener; the
// API's listener answers 404 there, and -pprof without -metrics-addr is
// refused.
//
// OTEL_EXPORTER_OTLP_ENDPOINT (traces to its /v1/traces) or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (that URL itself) turns on trace
// export over OTLP/HTTP with protobuf, batched and flushed on shutdown; the
// propagator is W3C trace context, so a request with a traceparent header
// continues its caller's trace, and bun's bunotel hook makes a span of
// every statement (with its placeholders, never its arguments). bunotel's
// own pool metrics and query histogram are left off: the pool is measured
// once, above. The exporter's other OTEL_* variables (headers, timeout,
// compression, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) apply.
//
// # Console
//
// The server answers a web console at /console/ and the API reference at
// /docs beside the API, on the same listener (package
// examples/server/internal/console). A person signs in by pasting a bearer
// token, or through a link from token -console; the session, kept in the
// database (its id hashed, 12 hours), acts with that token's rights through
// the same service objects and authorization as the API, and ends when the
// token is revoked. It searches the trash (by project, name, type, deletion
// date), restores and clears entries or a project's whole trash after a
// confirmation that states the count. /docs renders the served OpenAPI
// document (/api/v1/openapi.json) with Redoc, vendored and embedded. Every
// page is sent with a Content-Security-Policy that allows no inline or
// eval'd script, X-Frame-Options: DENY and Referrer-Policy: no-referrer;
// forms carry a CSRF token and sign-in attempts are rate-limited in the
// database. The first start's banner prints both addresses.
//
// Logs are JSON lines on stderr. The server answers GET /healthz (the
// process is up) and GET /readyz (the database answers) next to the API
// under /api/v1, and shuts down gracefully on SIGINT and SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/examples/server/internal/console"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// Defaults of the flags.
const (
	defaultAddr        = "127.0.0.1:8080"
	defaultDatabaseURL = "sqlite:deskkit.db"
)

// Environment variables read when the matching flag is not given.
const (
	envAddr        = "DESKKIT_ADDR"
	envDatabaseURL = "DESKKIT_DATABASE_URL"
	envRetention   = "DESKKIT_TRASH_RETENTION"
	envDemo        = "DESKKIT_DEMO"
)

// errUsage is a command line the flag package has already complained about.
var errUsage = errors.New("usage error")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runStdin(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run is runStdin with an empty standard input, for the commands that read
// none.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	return runStdin(ctx, args, strings.NewReader(""), stdout, stderr, getenv)
}

// runStdin is the whole program, with its environment passed in so that
// tests can drive it: it returns when the command is done or, for serve,
// when ctx is cancelled and the server has shut down. Only token -revoke
// reads stdin.
func runStdin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	// Lines logged for a request carry its id (X-Request-Id) as request_id.
	logger := slog.New(deskkit.LogHandler(slog.NewJSONHandler(stderr, nil)))
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "help":
		// help [COMMAND] is COMMAND -h, on stdout, where a pager reads it.
		sub := "serve"
		if len(args) > 0 {
			sub = args[0]
		}
		if len(args) > 1 || (sub != "serve" && sub != "token" && sub != "seed") {
			fmt.Fprintf(stderr, "help takes one of serve, token or seed\n")
			return errUsage
		}
		return runStdin(ctx, []string{sub, "-h"}, stdin, stdout, stdout, getenv)
	case "version":
		fmt.Fprintln(stdout, version())
		return nil
	case "serve":
		err = serveCmd(ctx, args, stdout, stderr, getenv, logger)
	case "token":
		err = tokenCmd(ctx, args, stdin, stdout, stderr, getenv, logger)
	case "seed":
		err = seedCmd(ctx, args, stdout, stderr, getenv, logger)
	default:
		fmt.Fprintf(stderr, "unknown command %q; want serve, token, seed or help\n", cmd)
		return errUsage
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// flagSet is a command's flags, and the environment variables that stand in
// for flags the command line does not give.
type flagSet struct {
	*flag.FlagSet
	getenv  func(string) string
	env     map[string]string // flag name → variable
	stdout  io.Writer         // where -version prints
	version *bool
}

func newFlagSet(name string, stdout, stderr io.Writer, getenv func(string) string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	v := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), usageHead, name)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), usageSecrets)
	}
	return &flagSet{FlagSet: fs, getenv: getenv, env: map[string]string{}, stdout: stdout, version: v}
}

// usageHead starts every command's -h, naming the command whose flags follow.
const usageHead = `deskkit reference server

Usage:
  server [serve] [flags]   serve the API (the command when none is given)
  server token [flags]     issue a bearer token (creating tenant and user), a -console sign-in link, or -revoke one
  server seed [flags]      bulk-load trash entries for benchmarks
  server help [command]    this help, or a command's flags
  server -version          print the version

Flags of %s (each may be set by its environment variable instead; the flag wins):
`

// usageSecrets ends every -h: the variables read from the environment only.
const usageSecrets = `
Secrets come from the environment only, never from flags (which every process listing shows):
  ` + envSecret + `            the server secret, at least 32 characters, that codes are hashed and
                            channel secrets encrypted under; unset, one is created and kept in the
                            database in clear: set it in production
  ` + envSecretPrevious + `   the secret before a rotation, so codes in flight stay valid
  ` + envSMTPPassword + `     SMTP AUTH password
  ` + envTwilioAuthToken + ` Twilio auth token
`

// version is the program's version from its build information: the module
// version, the commit it was built from when the build recorded one, and
// the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(info, ok)
}

func versionOf(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "deskkit server (no build information)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	out := "deskkit server " + v
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		out += " " + settings["vcs"] + " " + rev
		if t := settings["vcs.time"]; t != "" {
			out += " " + t
		}
		if settings["vcs.modified"] == "true" {
			out += "+dirty"
		}
	} else if v == "(devel)" {
		out += ", built from source without version control information (go run, or -buildvcs=false)"
	}
	return out + ", " + info.GoVersion
}

// fromEnv makes variable stand in for flag name.
func (f *flagSet) fromEnv(name, variable string) {
	f.env[name] = variable
	fl := f.Lookup(name)
	fl.Usage += " (env " + variable + ")"
}

// parse parses args, then sets each flag the command line left out from its
// environment variable, if that is set.
func (f *flagSet) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if *f.version {
		fmt.Fprintln(f.stdout, version())
		return flag.ErrHelp // done, as after -h
	}
	if f.NArg() > 0 {
		if strings.HasPrefix(f.Arg(0), directory.TokenPrefix) {
			// Not echoed: it is a secret, and logs keep stderr.
			fmt.Fprintf(f.Output(), "unexpected argument %s...: token -revoke reads the token from stdin\n", directory.TokenPrefix)
		} else {
			fmt.Fprintf(f.Output(), "unexpected argument %q\n", f.Arg(0))
		}
		return errUsage
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for name, variable := range f.env {
		v := f.getenv(variable)
		if given[name] || v == "" {
			continue
		}
		if err := f.Set(name, v); err != nil {
			return fmt.Errorf("%s=%q: %w", variable, v, err)
		}
	}
	return nil
}

// given tells whether the command line set flag name, so that a command
// can tell "-admin=false" from no -admin at all.
func (f *flagSet) given(name string) bool {
	found := false
	f.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

func (f *flagSet) databaseURL() *string {
	p := f.String("database-url", defaultDatabaseURL, "database: postgres://... or sqlite:PATH")
	f.fromEnv("database-url", envDatabaseURL)
	return p
}

// durationFlag is a time.Duration flag that also takes a bare "0" and
// rejects negative durations.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if n, nerr := strconv.Atoi(s); nerr == nil && n == 0 {
			d, err = 0, nil
		}
	}
	if err != nil {
		return errors.New("must be a duration such as 720h or 30m")
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	*f.d = d
	return nil
}

// openDB opens and migrates the database: the trash's, the directory's and
// the demo host's tables. Every command runs the migrations, so that any of
// them works on an empty database.
func openDB(ctx context.Context, rawURL string) (*bun.DB, error) {
	return openDBWith(ctx, rawURL, database.Options{})
}

func migrateAll(ctx context.Context, db *bun.DB) error {
	if err := trash.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate trash: %w", err)
	}
	if err := directory.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate directory: %w", err)
	}
	if err := verify.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate verify: %w", err)
	}
	if err := channel.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate channels: %w", err)
	}
	if err := migrateDemo(ctx, db); err != nil {
		return fmt.Errorf("migrate demo host: %w", err)
	}
	if err := console.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate console: %w", err)
	}
	return nil
}
