package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/internal/readroute"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// Timeouts of the HTTP server. ReadHeaderTimeout bounds slow-header
// (slowloris) clients; the others bound a request's body, its answer, and an
// idle keep-alive connection.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 15 * time.Second
	readyTimeout      = 2 * time.Second
)

// purgeInterval is how often the server purges expired trash entries when
// retention is on. A minute is fine-grained enough for retention periods of
// days, and each run is cheap when nothing has expired.
const purgeInterval = time.Minute

// Names of the demo tenant and its admin user, created on start.
const (
	demoTenant   = "demo"
	demoUsername = "demo"
)

// Environment variables of the serve command's database and request
// bounds.
const (
	envDBMaxConns         = "DESKKIT_DB_MAX_CONNS"
	envDBStatementTimeout = "DESKKIT_DB_STATEMENT_TIMEOUT"
	envRequestTimeout     = "DESKKIT_REQUEST_TIMEOUT"
	envDefaultLanguage    = "DESKKIT_DEFAULT_LANGUAGE"
	envTrustedProxies     = "DESKKIT_TRUSTED_PROXIES"
	envHostOrigins        = "DESKKIT_HOST_ORIGINS"
	envDBTransactionPool  = "DESKKIT_DATABASE_TRANSACTION_POOLING"
	envDatabaseMigrateURL = "DESKKIT_DATABASE_MIGRATE_URL"
	envDatabaseListenURL  = "DESKKIT_DATABASE_LISTEN_URL"
	envDatabaseReadURL    = "DESKKIT_DATABASE_READ_URL"
	envDatabaseReadLag    = "DESKKIT_DATABASE_READ_MAX_LAG"
)

// serveConfig is the serve command's configuration.
type serveConfig struct {
	addr           string
	databaseURL    string
	migrateURL     string        // -database-migrate-url: a direct URL for the migrations; "" for databaseURL
	listenURL      string        // -database-listen-url: a direct URL for LISTEN; ""  for databaseURL, or none when pooled
	readURL        string        // -database-read-url: a hot standby for reads that may be a moment stale; "" for none
	readMaxLag     time.Duration // -database-read-max-lag: readroute.DefaultMaxLag if 0
	retention      time.Duration
	demo           bool
	db             database.Options // pool size and statement timeout; 0 means deskkit's defaults
	requestTimeout time.Duration    // httpapi.DefaultRequestTimeout if 0
	language       string           // the server's default language: "en" or "zh-CN"
	trustedProxies []string         // -trusted-proxies: addresses and CIDR prefixes
	hostOrigins    []string         // -host-origins: where portal links may lead back to
	verify         verifyConfig
	channel        channelConfig
	telemetry      telemetryConfig
}

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, logger *slog.Logger) error {
	var cfg serveConfig
	fs := newFlagSet("serve", stdout, stderr, getenv)
	fs.StringVar(&cfg.addr, "addr", defaultAddr, "listen address")
	fs.fromEnv("addr", envAddr)
	dbURL := fs.databaseURL()
	fs.BoolVar(&cfg.db.TransactionPooling, "database-transaction-pooling", false, "-database-url goes through a pooler in transaction mode (PgBouncer pool_mode = transaction): no statement is prepared, the statement timeout is set in each transaction (SET LOCAL), no LISTEN on it; needs -database-migrate-url, and -database-listen-url for wake-ups (else workers poll)")
	fs.fromEnv("database-transaction-pooling", envDBTransactionPool)
	fs.StringVar(&cfg.migrateURL, "database-migrate-url", "", "a direct postgres:// URL of the same database (not through PgBouncer) that the migrations run on, holding their session advisory lock; unset, -database-url; required with -database-transaction-pooling")
	fs.fromEnv("database-migrate-url", envDatabaseMigrateURL)
	fs.StringVar(&cfg.listenURL, "database-listen-url", "", "a direct postgres:// URL of the same database that the delivery workers LISTEN on for committed events (two connections); unset, -database-url, or none with -database-transaction-pooling: the workers then poll, and an event published through another replica waits up to a second")
	fs.fromEnv("database-listen-url", envDatabaseListenURL)
	fs.StringVar(&cfg.readURL, "database-read-url", "", "a postgres:// URL of a hot standby streaming from -database-url's PostgreSQL, for reads that may be a moment stale (trash search, count and get; channel lists, deliveries, attempts, hourly counts, event types); a tenant's reads after its own write through this server go to the primary until the standby has replayed it (waiting up to 100 ms), and every read does while the standby lags -database-read-max-lag or more or does not answer; opened as -database-url is (pool size, statement timeout, -database-transaction-pooling); unset, every read goes to -database-url")
	fs.fromEnv("database-read-url", envDatabaseReadURL)
	fs.Var(durationFlag{&cfg.readMaxLag}, "database-read-max-lag", "replay lag of -database-read-url from which every read goes to -database-url; 0 means "+readroute.DefaultMaxLag.String())
	fs.fromEnv("database-read-max-lag", envDatabaseReadLag)
	fs.Var(durationFlag{&cfg.retention}, "retention", "purge trash entries deleted longer ago than this, e.g. 720h; 0 keeps them")
	fs.fromEnv("retention", envRetention)
	fs.BoolVar(&cfg.demo, "demo", true, "create the demo tenant and admin user; print a token for it on first start")
	fs.fromEnv("demo", envDemo)
	fs.Var(countFlag{&cfg.db.MaxOpenConns}, "db-max-conns", "most database connections the server opens; 0 means 4 x GOMAXPROCS")
	fs.fromEnv("db-max-conns", envDBMaxConns)
	fs.Var(durationFlag{&cfg.db.StatementTimeout}, "db-statement-timeout", "PostgreSQL statement_timeout of every connection (of every transaction with -database-transaction-pooling); 0 means "+database.DefaultStatementTimeout.String())
	fs.fromEnv("db-statement-timeout", envDBStatementTimeout)
	fs.Var(durationFlag{&cfg.requestTimeout}, "request-timeout", "deadline of every API request, past which it answers 503; 0 means "+httpapi.DefaultRequestTimeout.String())
	fs.fromEnv("request-timeout", envRequestTimeout)
	fs.StringVar(&cfg.language, "default-language", "", "language of API answers, codes and event messages for whom neither the request's Accept-Language, the user's locale nor the tenant's names one: en or zh-CN; unset, answers and event messages are in en and codes in the sender's default (-sms-locale for aliyun and tencent)")
	fs.fromEnv("default-language", envDefaultLanguage)
	fs.Var(proxiesFlag{&cfg.trustedProxies}, "trusted-proxies", "comma-separated IP addresses and CIDR prefixes of the reverse proxies in front of the server (10.0.0.0/8,192.0.2.7): from them the client's address comes from Forwarded or X-Forwarded-For and https from Forwarded proto= or X-Forwarded-Proto, for the console's limits and Secure cookies and the logs and traces; empty, the connection's address and TLS")
	fs.fromEnv("trusted-proxies", envTrustedProxies)
	addHostOriginsFlag(fs, &cfg.hostOrigins)
	verifyEnv := addVerifyFlags(fs, &cfg.verify)
	addChannelFlags(fs, &cfg.channel)
	telemetryEnv := addTelemetryFlags(fs, &cfg.telemetry)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), usageTelemetry) }
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := verifyEnv(); err != nil {
		return err
	}
	if err := cfg.verify.settleLogCodes(fs.given("dev-log-codes")); err != nil {
		return err
	}
	if err := telemetryEnv(cfg.addr); err != nil {
		return err
	}
	if err := checkLanguage(cfg.language); err != nil {
		return err
	}
	cfg.databaseURL = *dbURL
	if err := checkDatabaseURLs(cfg); err != nil {
		return err
	}
	return serve(ctx, cfg, stdout, logger)
}

// checkLanguage refuses a -default-language the server has no messages
// in exactly (deskkit.Messages.Language), before anything starts: zh-TW,
// which names none of the shipped languages, is refused.
func checkLanguage(tag string) error {
	if tag == "" {
		return nil
	}
	msgs, err := deskkit.NewMessages()
	if err != nil {
		return err
	}
	if _, ok := msgs.Language(tag); ok {
		return nil
	}
	var have []string
	for _, t := range msgs.Languages() {
		have = append(have, t.String())
	}
	return fmt.Errorf("-default-language %q (%s): must name a language the server has messages in: %s (en-US, zh and zh-CN name them too; the closest language is not enough)",
		tag, envDefaultLanguage, strings.Join(have, ", "))
}

// serve runs the server until ctx is cancelled, then shuts it down,
// letting requests in flight finish.
func serve(ctx context.Context, cfg serveConfig, stdout io.Writer, logger *slog.Logger) error {
	// Before the services: they take the global providers when built.
	tel, err := startTelemetry(ctx, cfg.telemetry, logger)
	if err != nil {
		return err
	}
	defer func() {
		// Only when serve fails before its shutdown, which closes tel
		// itself; closing again does nothing.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		tel.close(sctx)
	}()
	db, err := openServeDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	var listenDB *bun.DB
	if cfg.listenURL != "" {
		// Two listeners (channels, notices), each on a connection of its
		// own, and their pings through this pool.
		if listenDB, err = database.Open(cfg.listenURL, database.Options{MaxOpenConns: 2, StatementTimeout: cfg.db.StatementTimeout}); err != nil {
			return fmt.Errorf("-database-listen-url: %w", err)
		}
		defer listenDB.Close()
	}
	var readDB *bun.DB
	if cfg.readURL != "" {
		if readDB, err = database.Open(cfg.readURL, cfg.db); err != nil {
			return fmt.Errorf("-database-read-url: %w", err)
		}
		defer readDB.Close()
	}
	a, err := newApp(db, appConfig{
		PlainStatements: cfg.db.TransactionPooling, ListenDB: listenDB, ReadDB: readDB, ReadMaxLag: cfg.readMaxLag,
		Logger: logger, Retention: cfg.retention, RequestTimeout: cfg.requestTimeout, DefaultLanguage: cfg.language, Verify: cfg.verify, Channel: cfg.channel,
		TrustedProxies: cfg.trustedProxies, HostOrigins: cfg.hostOrigins, MeterProvider: tel.meters, TracerProvider: tel.tracers,
	})
	if err != nil {
		return err
	}
	var token string
	if cfg.demo {
		if token, err = a.demoToken(ctx); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	servers := []*http.Server{newHTTPServer(a.handler, logger)}
	listeners := []net.Listener{ln}
	if tel.metrics != nil {
		// Its own listener: /metrics and /debug/pprof/ are never reachable
		// where the API is.
		mln, err := net.Listen("tcp", cfg.telemetry.metricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("metrics listener: %w", err)
		}
		servers = append(servers, newHTTPServer(tel.metrics, logger))
		listeners = append(listeners, mln)
	}
	base := baseURL(ln.Addr())
	logger.InfoContext(ctx, "listening", slog.String("addr", ln.Addr().String()), slog.String("retention", cfg.retention.String()))
	if len(listeners) > 1 {
		logger.InfoContext(ctx, "metrics listening", slog.String("addr", listeners[1].Addr().String()), slog.Bool("pprof", cfg.telemetry.pprof))
	}
	if cfg.telemetry.tracesURL != "" {
		u, _ := url.Parse(cfg.telemetry.tracesURL)
		logger.InfoContext(ctx, "exporting traces", slog.String("endpoint", u.Redacted()))
	}
	logger.InfoContext(ctx, "verification codes", cfg.verify.describe()...)
	logger.InfoContext(ctx, "event channels", cfg.channel.describe()...)
	if cfg.verify.devLogCodes {
		logger.WarnContext(ctx, "verification codes are logged in clear, as \"code\": development only", slog.Bool("developmentMode", cfg.verify.development()))
	}
	if cfg.verify.secret == nil {
		logger.WarnContext(ctx, envSecret+" is not set: the server secret is kept in the database, in clear beside the code hashes and encrypted channel secrets it protects, so a copy of the database reveals them; set "+envSecret+" in production")
	}
	fmt.Fprintf(stdout, "deskkit is listening on %s\n", base)
	if len(listeners) > 1 {
		mbase := baseURL(listeners[1].Addr())
		fmt.Fprintf(stdout, "Metrics are served on %s/metrics\n", mbase)
		if cfg.telemetry.pprof {
			fmt.Fprintf(stdout, "Profiles are served on %s/debug/pprof/\n", mbase)
		}
	}
	if cfg.demo {
		printDemoAccess(stdout, demoAccess{base: base, token: token, databaseURL: cfg.databaseURL,
			program: serverInvocation(os.Args[0]), codes: cfg.verify.mailCodes()})
	}
	if hint := cfg.verify.hint(); hint != "" {
		fmt.Fprintln(stdout, hint)
	}

	var wg sync.WaitGroup
	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	if cfg.retention > 0 {
		ticker := time.NewTicker(purgeInterval)
		defer ticker.Stop()
		wg.Go(func() { purgeLoop(loopCtx, a.trash, ticker.C, logger) })
	}
	verifyTicker := time.NewTicker(verifyInterval)
	defer verifyTicker.Stop()
	wg.Go(func() { housekeep(loopCtx, a, verifyTicker.C, logger) })
	// The outbox's workers: events to channels, notices to old addresses
	// (the Verifier's Run also records the outcomes of code sends that the
	// database could not take at the time).
	// When loopCtx ends they claim nothing new and finish the attempts in
	// flight (each bounded by its timeout); a delivery a process never
	// finished is attempted again by another, or by the next start, when
	// its lease ends.
	wg.Go(func() {
		if err := a.channels.Run(loopCtx); err != nil {
			logger.Error("channel: event delivery stopped", slog.Any("error", err))
		}
	})
	wg.Go(func() {
		if err := a.verify.Run(loopCtx); err != nil {
			logger.Error("verify: notice delivery stopped", slog.Any("error", err))
		}
	})

	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	select {
	case err := <-errc:
		// A listener failed: the other goes down with it.
		stopLoop()
		for _, srv := range servers {
			srv.Close()
		}
		for range len(servers) - 1 {
			<-errc
		}
		wg.Wait()
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	stopLoop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err = nil
	for _, srv := range servers {
		err = errors.Join(err, srv.Shutdown(sctx))
	}
	for range servers {
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	}
	wg.Wait()
	// After the workers: the spans of their last attempts are flushed too.
	tel.close(sctx)
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// newHTTPServer is an http.Server with the server's timeouts, logging its
// errors through logger.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// baseURL is the address to print for a listener: a wildcard host becomes
// 127.0.0.1, which a curl on the same machine can reach.
func baseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// openDBWith opens the database with the pool and statement bounds of o and
// migrates it, as openDB does with deskkit's defaults.
//
// On PostgreSQL the migrations hold their lock on one connection and
// migrate on another, so a pool of one cannot run them: then they run on a
// pool of two of their own, closed before the server serves with its pool
// of one.
func openDBWith(ctx context.Context, rawURL string, o database.Options) (*bun.DB, error) {
	db, err := database.Open(rawURL, o)
	if err != nil {
		return nil, err
	}
	mdb := db
	if d, err := migrate.DialectOf(db); err == nil && d.Postgres && o.MaxOpenConns == 1 {
		mo := o
		mo.MaxOpenConns = 2
		if mdb, err = database.Open(rawURL, mo); err != nil {
			db.Close()
			return nil, err
		}
		defer mdb.Close()
	}
	if err := migrateAll(ctx, mdb); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// checkDatabaseURLs checks the database flags together: pooling and the
// direct URLs are PostgreSQL's, and a pooled -database-url needs a direct
// one for the migrations.
func checkDatabaseURLs(cfg serveConfig) error {
	pg := database.IsPostgres
	for _, f := range []struct{ name, url string }{{"-database-url", cfg.databaseURL}, {"-database-migrate-url", cfg.migrateURL}, {"-database-listen-url", cfg.listenURL}, {"-database-read-url", cfg.readURL}} {
		if pg(f.url) {
			if err := database.CheckPostgres(f.url); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	if cfg.readURL != "" && !pg(cfg.databaseURL) {
		return errors.New("-database-read-url: only for PostgreSQL, and -database-url is not a postgres:// URL (SQLite has no replica)")
	}
	if cfg.readURL != "" && !pg(cfg.readURL) {
		return errors.New("-database-read-url: must be a postgres:// URL of a hot standby streaming from -database-url's PostgreSQL")
	}
	if cfg.readURL != "" && database.WantsPrimary(cfg.readURL) {
		return errors.New("-database-read-url: target_session_attrs=read-write reaches no standby; name the hot standby (or several, with target_session_attrs=any)")
	}
	if cfg.readMaxLag != 0 && cfg.readURL == "" {
		return errors.New("-database-read-max-lag: only with -database-read-url")
	}
	for _, f := range []struct{ name, url string }{{"-database-migrate-url", cfg.migrateURL}, {"-database-listen-url", cfg.listenURL}} {
		if f.url == "" {
			continue
		}
		if !pg(cfg.databaseURL) {
			return fmt.Errorf("%s: only for PostgreSQL, and -database-url is not a postgres:// URL", f.name)
		}
		if !pg(f.url) {
			return fmt.Errorf("%s: must be a postgres:// URL of the same database, reaching PostgreSQL directly (not through PgBouncer)", f.name)
		}
	}
	if !cfg.db.TransactionPooling {
		return nil
	}
	if !pg(cfg.databaseURL) {
		return errors.New("-database-transaction-pooling: only for PostgreSQL behind PgBouncer, and -database-url is not a postgres:// URL")
	}
	if cfg.migrateURL == "" {
		return errors.New("-database-migrate-url: required with -database-transaction-pooling: the migrations hold a session advisory lock, which a pooler in transaction mode does not keep; give a postgres:// URL of the same database that reaches PostgreSQL directly")
	}
	return nil
}

// openServeDB opens serve's database: migrated on -database-migrate-url
// when one is given (on a pool of two of its own, closed before the
// server serves), else as openDBWith does.
func openServeDB(ctx context.Context, cfg serveConfig) (*bun.DB, error) {
	if cfg.migrateURL == "" {
		return openDBWith(ctx, cfg.databaseURL, cfg.db)
	}
	mo := cfg.db
	mo.TransactionPooling, mo.MaxOpenConns = false, 2
	mdb, err := database.Open(cfg.migrateURL, mo)
	if err != nil {
		return nil, fmt.Errorf("-database-migrate-url: %w", err)
	}
	err = migrateAll(ctx, mdb)
	mdb.Close()
	if err != nil {
		return nil, err
	}
	return database.Open(cfg.databaseURL, cfg.db)
}

// countFlag is a count (a pool size, a limit): a non-negative integer, 0
// for the default.
type countFlag struct{ n *int }

func (f countFlag) String() string {
	if f.n == nil {
		return "0"
	}
	return strconv.Itoa(*f.n)
}

func (f countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return errors.New("must be a whole number, 0 for the default")
	}
	*f.n = n
	return nil
}

// proxiesFlag is -trusted-proxies: a comma-separated list of IP addresses
// and CIDR prefixes, each checked as httpapi.ParseProxies checks it.
type proxiesFlag struct{ list *[]string }

func (f proxiesFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f proxiesFlag) Set(s string) error {
	var list []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if _, err := httpapi.ParseProxies([]string{e}); err != nil {
			return fmt.Errorf("%q must be an IP address (192.0.2.7, ::1) or a CIDR prefix (10.0.0.0/8, 2001:db8::/32)", e)
		}
		list = append(list, e)
	}
	*f.list = list
	return nil
}

// originsFlag is -host-origins: a comma-separated list of origins
// (scheme://host[:port]), each checked as the console checks
// Config.HostOrigins.
type originsFlag struct{ list *[]string }

func (f originsFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f originsFlag) Set(s string) error {
	var list []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Hostname() == "" {
			return fmt.Errorf("%q must be an origin such as https://app.example.com or http://localhost:3000 (scheme://host[:port], no path)", e)
		}
		list = append(list, e)
	}
	*f.list = list
	return nil
}

// addHostOriginsFlag adds -host-origins to a command: serve's, and
// token's, whose portal links the server must accept.
func addHostOriginsFlag(fs *flagSet, list *[]string) {
	fs.Var(originsFlag{list}, "host-origins", "comma-separated origins of the host application that embeds the console (https://app.example.com,http://localhost:3000): a portal link's -return URL must be on one of them exactly (scheme, host and port), and the console shows it as \"Back to\" the product; empty, links take no return URL")
	fs.fromEnv("host-origins", envHostOrigins)
}

// appConfig is what an app needs beyond the database; tests set the clock.
type appConfig struct {
	Logger         *slog.Logger
	Now            func() time.Time // time.Now if nil
	Retention      time.Duration
	RequestTimeout time.Duration // httpapi.DefaultRequestTimeout if 0
	// DefaultLanguage is the server's default language (en if ""): of API
	// answers after Accept-Language and the user's and tenant's locales,
	// and of the event messages of tenants without a locale.
	DefaultLanguage string
	Verify          verifyConfig  // the zero value: log senders, the secret kept in the database
	Channel         channelConfig // the zero value: public networks only, the default throttle
	// TrustedProxies are -trusted-proxies, for the API's Config and the
	// console's: whose forwarding headers name the client.
	TrustedProxies []string
	// HostOrigins are -host-origins, the console's: the origins a portal
	// link's return URL (token -portal -return) may be on.
	HostOrigins []string
	// MeterProvider takes the server's own instruments (the database
	// pool's); nil records none.
	MeterProvider metric.MeterProvider
	// TracerProvider takes bun's query spans, and requests continue an
	// incoming W3C traceparent; nil traces nothing.
	TracerProvider trace.TracerProvider
	// PlainStatements is -database-transaction-pooling, for the channels
	// and the verifier; ListenDB is -database-listen-url's pool, nil
	// without one.
	PlainStatements bool
	ListenDB        *bun.DB
	// ReadDB is -database-read-url's pool, nil without one, for the
	// trash's and the channels' reads; ReadMaxLag is
	// -database-read-max-lag.
	ReadDB     *bun.DB
	ReadMaxLag time.Duration
}

// app is the server's services wired together over one migrated database.
type app struct {
	db       *bun.DB
	dir      *directory.Directory
	trash    *trash.Trash
	verify   *verify.Verifier
	channels *channel.ChannelRegistry
	console  *console.Console
	demo     *demoHost
	api      *httpapi.Server // its routes, deskkit's and the host's, for tests
	handler  http.Handler
}

func newApp(db *bun.DB, cfg appConfig) (*app, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MeterProvider != nil {
		if err := observePool(cfg.MeterProvider, db.DB); err != nil {
			return nil, err
		}
	}
	if cfg.TracerProvider != nil {
		db = traceQueries(db, cfg.TracerProvider)
		if cfg.ReadDB != nil {
			cfg.ReadDB = traceQueries(cfg.ReadDB, cfg.TracerProvider)
		}
	}
	dir, err := directory.New(db, &directory.Config{Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	demo, err := newDemoHost(db)
	if err != nil {
		return nil, err
	}
	secret := cfg.Verify.secret
	if secret == nil {
		if secret, err = storedSecret(context.Background(), db); err != nil {
			return nil, err
		}
	}
	reg, err := newChannels(db, secret, dir, cfg)
	if err != nil {
		return nil, err
	}
	// The catalogue: every service's event types and the demo host's own,
	// which subscriptions are checked against and Publish accepts. It is
	// registered here, in code, and nowhere else: the same in every replica,
	// and for every tenant.
	if err := reg.RegisterEventTypes(slices.Concat(trash.EventTypes(), verify.EventTypes(), demoEventTypes())...); err != nil {
		return nil, err
	}
	tr, err := trash.New(db, demo, &trash.Config{Users: trashUsers{dir}, Now: cfg.Now, Retention: cfg.Retention, Publisher: reg,
		ReadDB: cfg.ReadDB, ReadMaxLag: cfg.ReadMaxLag})
	if err != nil {
		return nil, err
	}
	demo.trash = tr
	v, err := newVerifier(db, verifyUsers{dir}, secret, reg, cfg)
	if err != nil {
		return nil, err
	}
	api, err := httpapi.New(&httpapi.Config{
		Authenticator: authUsers{dir}, Trash: tr, Verifier: v, Channels: reg, Logger: cfg.Logger, Now: cfg.Now, RequestTimeout: cfg.RequestTimeout,
		DefaultLanguage: cfg.DefaultLanguage, TrustedProxies: cfg.TrustedProxies,
	})
	if err != nil {
		return nil, err
	}
	demo.mount(api)
	mountRedeem(api, v)
	mountPublish(api, db, reg)
	con, err := newConsole(db, dir, tr, v, reg, secret, cfg)
	if err != nil {
		return nil, err
	}
	ready := &readiness{db: db, logger: cfg.Logger}
	h := httpapi.RequestIDs(accessLog(cfg.Logger, api, rememberUsers(routes(api, ready, con))))
	if cfg.TracerProvider != nil {
		h = traceContext(h)
	}
	return &app{db: db, dir: dir, trash: tr, verify: v, channels: reg, console: con, demo: demo, api: api, handler: h}, nil
}

// routes answers the two probes itself and hands every other request to
// api, path and all, as it came. No http.ServeMux stands in between: a
// ServeMux answers a path that is not clean ("/api/v1//task/trash/search",
// "/api/v1/task/trash/7/..") with a redirect to its cleaned form, without
// an envelope, and a client that follows the 307 of
// "DELETE /api/v1/task/trash/7/..?projectId=P" clears all of project P.
// deskkit's own router never redirects: such paths answer a 404 envelope.
// The console (/console/, /docs) gets its paths as they came too, and
// refuses unclean ones with a 404 page rather than a redirect.
func routes(api http.Handler, ready *readiness, con *console.Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var probe func(http.ResponseWriter, *http.Request)
		switch r.URL.Path {
		case "/healthz":
			// Liveness: the process answers. It never touches the database,
			// so a database outage does not get the process restarted.
			probe = func(w http.ResponseWriter, _ *http.Request) { writeStatus(w, http.StatusOK, "ok") }
		case "/readyz":
			probe = ready.serve
		default:
			if con.Handles(r.URL.Path) {
				con.ServeHTTP(w, r)
				return
			}
			// Everything else, /api/v1 and unknown paths alike, gets
			// deskkit's envelope.
			api.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeStatus(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		probe(w, r)
	})
}

// readiness answers /readyz: ready when the database answers a ping in
// time. Probes come every few seconds, so it logs only when the answer
// changes, not once per probe of an outage.
type readiness struct {
	db     *bun.DB
	logger *slog.Logger
	down   atomic.Bool // the last probe found the database unavailable
}

func (rd *readiness) serve(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := rd.db.PingContext(ctx); err != nil {
		if !rd.down.Swap(true) {
			rd.logger.WarnContext(ctx, "not ready: the database does not answer", slog.Any("error", err))
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(readyTimeout/time.Second)))
		writeStatus(w, http.StatusServiceUnavailable, "database unavailable")
		return
	}
	if rd.down.Swap(false) {
		rd.logger.InfoContext(ctx, "ready: the database answers again")
	}
	writeStatus(w, http.StatusOK, "ok")
}

func writeStatus(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"status\":%q}\n", msg)
}

// purgeLoop purges expired trash entries on every tick until ctx ends. The
// ticks come in as a channel so that tests can drive the loop.
func purgeLoop(ctx context.Context, tr *trash.Trash, tick <-chan time.Time, logger *slog.Logger) {
	purgeOnce(ctx, tr, logger)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			purgeOnce(ctx, tr, logger)
		}
	}
}

func purgeOnce(ctx context.Context, tr *trash.Trash, logger *slog.Logger) {
	start := time.Now()
	n, err := tr.PurgeExpired(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: the batches done so far stay done.
	case err != nil:
		logger.ErrorContext(ctx, "trash purge failed", slog.Int("purged", n), slog.Any("error", err))
	case n > 0:
		logger.InfoContext(ctx, "trash purged", slog.Int("purged", n), slog.String("took", time.Since(start).String()))
	}
}

// accessLog logs every request but the health probes, which come every few
// seconds and would drown the rest, and but the 503s: during an outage
// every request answers 503, and httpapi logs the outage itself, with the
// error, once per interval and once more when it ends, with the count of
// 503s it left out. One suppressor, not a second one here.
func accessLog(logger *slog.Logger, api *httpapi.Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		if sw.status == http.StatusServiceUnavailable {
			return
		}
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.EscapedPath()),
			slog.Int("status", sw.status),
			slog.String("took", time.Since(start).String()),
			slog.String("client", clientOf(api, r)),
		)
	})
}

// clientOf is the client address the access log writes: the one
// -trusted-proxies lets the API believe (Server.Client), or the
// connection's RemoteAddr as it is when that is no IP address.
func clientOf(api *httpapi.Server, r *http.Request) string {
	if a := api.Client(r).Addr; a.IsValid() {
		return a.String()
	}
	return r.RemoteAddr
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
