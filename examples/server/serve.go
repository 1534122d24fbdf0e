package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/directory"
	"github.com/deskkit/deskkit/trash"
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

// serveConfig is the serve command's configuration.
type serveConfig struct {
	addr        string
	databaseURL string
	retention   time.Duration
	demo        bool
}

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, logger *slog.Logger) error {
	var cfg serveConfig
	fs := newFlagSet("serve", stderr, getenv)
	fs.StringVar(&cfg.addr, "addr", defaultAddr, "listen address")
	fs.fromEnv("addr", envAddr)
	dbURL := fs.databaseURL()
	fs.Var(durationFlag{&cfg.retention}, "retention", "purge trash entries deleted longer ago than this, e.g. 720h; 0 keeps them")
	fs.fromEnv("retention", envRetention)
	fs.BoolVar(&cfg.demo, "demo", true, "create the demo tenant and admin user and print a token for it")
	fs.fromEnv("demo", envDemo)
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg.databaseURL = *dbURL
	return serve(ctx, cfg, stdout, logger)
}

// serve runs the server until ctx is cancelled, then shuts it down,
// letting requests in flight finish.
func serve(ctx context.Context, cfg serveConfig, stdout io.Writer, logger *slog.Logger) error {
	db, err := openDB(ctx, cfg.databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	a, err := newApp(db, appConfig{Logger: logger, Retention: cfg.retention})
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
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	base := baseURL(ln.Addr())
	logger.InfoContext(ctx, "listening", slog.String("addr", ln.Addr().String()), slog.Duration("retention", cfg.retention))
	fmt.Fprintf(stdout, "deskkit is listening on %s\n", base)
	if cfg.demo {
		printDemoAccess(stdout, base, token)
	}

	var wg sync.WaitGroup
	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	if cfg.retention > 0 {
		ticker := time.NewTicker(purgeInterval)
		defer ticker.Stop()
		wg.Go(func() { purgeLoop(loopCtx, a.trash, ticker.C, logger) })
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		stopLoop()
		wg.Wait()
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	stopLoop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	wg.Wait()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
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

// appConfig is what an app needs beyond the database; tests set the clock.
type appConfig struct {
	Logger    *slog.Logger
	Now       func() time.Time // time.Now if nil
	Retention time.Duration
}

// app is the server's services wired together over one migrated database.
type app struct {
	db      *bun.DB
	dir     *directory.Directory
	trash   *trash.Trash
	demo    *demoHost
	handler http.Handler
}

func newApp(db *bun.DB, cfg appConfig) (*app, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	dir, err := directory.New(db, &directory.Config{Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	demo, err := newDemoHost(db)
	if err != nil {
		return nil, err
	}
	tr, err := trash.New(db, demo, &trash.Config{Users: trashUsers{dir}, Now: cfg.Now, Retention: cfg.Retention})
	if err != nil {
		return nil, err
	}
	demo.trash = tr
	api, err := httpapi.New(&httpapi.Config{Authenticator: dir, Trash: tr, Logger: cfg.Logger, Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	demo.mount(api)

	mux := http.NewServeMux()
	// Liveness: the process answers. It never touches the database, so a
	// database outage does not get the process restarted.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusOK, "ok")
	})
	// Readiness: the database answers, so requests can be served.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			cfg.Logger.WarnContext(ctx, "not ready", slog.Any("error", err))
			writeStatus(w, http.StatusServiceUnavailable, "database unavailable")
			return
		}
		writeStatus(w, http.StatusOK, "ok")
	})
	// Everything else, /api/v1 and unknown paths alike, gets deskkit's
	// envelope.
	mux.Handle("/", api)
	return &app{db: db, dir: dir, trash: tr, demo: demo, handler: accessLog(cfg.Logger, mux)}, nil
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
		logger.InfoContext(ctx, "trash purged", slog.Int("purged", n), slog.Duration("took", time.Since(start)))
	}
}

// accessLog logs every request but the health probes, which come every few
// seconds and would drown the rest.
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		logger.InfoContext(r.Context(), "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", sw.status),
			slog.Duration("took", time.Since(start)))
	})
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
