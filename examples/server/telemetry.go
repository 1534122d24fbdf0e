package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/extra/bunotel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Environment variables of the serve command's telemetry. The OTLP ones are
// OpenTelemetry's own names, read as its SDKs read them; they have no flag.
const (
	envMetricsAddr        = "DESKKIT_METRICS_ADDR"
	envPprof              = "DESKKIT_PPROF"
	envOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// scopeName names the server's own meter, as the library's packages name
// theirs: by import path.
const scopeName = "github.com/deskkit/deskkit/examples/server"

// serviceName is the service.name resource attribute, unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
const serviceName = "deskkit"

// usageTelemetry ends serve's -h: the variables that turn on traces.
const usageTelemetry = `
Traces are exported over OTLP/HTTP (protobuf) when one of these is set, as OpenTelemetry's SDKs read them:
  ` + envOTLPEndpoint + `          base URL of the collector, e.g. http://127.0.0.1:4318
                                       (traces go to its /v1/traces)
  ` + envOTLPTracesEndpoint + `   the traces URL itself; wins over the one above
  (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply too)
`

// telemetryConfig is what the serve command's telemetry flags and
// variables ask for.
type telemetryConfig struct {
	metricsAddr string // listen address of /metrics; "" for none
	pprof       bool   // /debug/pprof/ on the metrics listener
	tracesURL   string // OTLP/HTTP traces endpoint; "" for no traces
}

// addTelemetryFlags declares -metrics-addr and -pprof on fs, and returns a
// function that checks them and reads the OTLP endpoint once fs is parsed.
func addTelemetryFlags(fs *flagSet, cfg *telemetryConfig) func(apiAddr string) error {
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", "", "listen address of a second listener serving /metrics (Prometheus); empty: none")
	fs.fromEnv("metrics-addr", envMetricsAddr)
	fs.BoolVar(&cfg.pprof, "pprof", false, "serve /debug/pprof/ on the metrics listener, never on the API's (needs -metrics-addr)")
	fs.fromEnv("pprof", envPprof)
	return func(apiAddr string) error {
		if cfg.pprof && cfg.metricsAddr == "" {
			return errors.New("-pprof needs -metrics-addr: profiles are served on the metrics listener only, never on the API's")
		}
		if cfg.metricsAddr != "" && cfg.metricsAddr == apiAddr {
			if _, port, err := net.SplitHostPort(apiAddr); err != nil || port != "0" {
				return fmt.Errorf("-metrics-addr %s is -addr's: metrics are served on a listener of their own", cfg.metricsAddr)
			}
		}
		u, err := tracesEndpoint(fs.getenv)
		cfg.tracesURL = u
		return err
	}
}

// tracesEndpoint is the URL spans are posted to:
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended to its path, as
// OpenTelemetry's specification has it; "" when neither is set.
func tracesEndpoint(getenv func(string) string) (string, error) {
	variable, v, suffix := envOTLPTracesEndpoint, getenv(envOTLPTracesEndpoint), ""
	if v == "" {
		variable, v, suffix = envOTLPEndpoint, getenv(envOTLPEndpoint), "/v1/traces"
	}
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%q: must be an http:// or https:// URL such as http://127.0.0.1:4318", variable, v)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + suffix
	return u.String(), nil
}

// telemetry is the server's OpenTelemetry: providers, the /metrics
// handler, and what to flush on shutdown.
type telemetry struct {
	meters  metric.MeterProvider // nil without -metrics-addr
	tracers trace.TracerProvider // nil without an OTLP endpoint
	metrics http.Handler         // /metrics and, with -pprof, /debug/pprof/; nil without -metrics-addr
	logger  *slog.Logger
	stop    []func(context.Context) error
	restore func() // puts the global providers back
}

// startTelemetry builds the providers cfg asks for and makes them the
// global ones, which the library's packages default to; the services must
// be built after it. The Prometheus exporter registers on a registry of
// its own, never on the global one.
func startTelemetry(ctx context.Context, cfg telemetryConfig, logger *slog.Logger) (*telemetry, error) {
	t := &telemetry{logger: logger, restore: func() {}}
	if cfg.metricsAddr == "" && cfg.tracesURL == "" {
		return t, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	if cfg.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		// The Go runtime's and the process's own collectors, on the same
		// registry: goroutines, heap, GC pauses, open files.
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
		t.meters = mp
		t.stop = append(t.stop, mp.Shutdown)
		t.metrics = metricsHandler(reg, cfg.pprof, logger)
	}
	if cfg.tracesURL != "" {
		// Options given here win over the environment's; the others
		// (headers, timeout, compression) come from it.
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.tracesURL))
		if err != nil {
			t.close(ctx)
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.tracers = tp
		// First in line: spans the last requests made are flushed before
		// the meters stop.
		t.stop = append([]func(context.Context) error{tp.Shutdown}, t.stop...)
	}
	t.restore = setGlobals(t.meters, t.tracers, logger)
	return t, nil
}

// setGlobals makes mp and tp, those not nil, the global providers, with
// W3C trace context as the propagator when tp is set and the SDK's errors
// logged through logger; it returns a function that puts back what was
// there, so that a process that serves again (a test) starts from where it
// was.
func setGlobals(mp metric.MeterProvider, tp trace.TracerProvider, logger *slog.Logger) (restore func()) {
	prevMP, prevTP, prevProp, prevErr := otel.GetMeterProvider(), otel.GetTracerProvider(), otel.GetTextMapPropagator(), otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry", slog.Any("error", err))
	}))
	if mp != nil {
		otel.SetMeterProvider(mp)
	}
	if tp != nil {
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
	}
	return func() {
		if mp != nil {
			otel.SetMeterProvider(prevMP)
		}
		if tp != nil {
			otel.SetTracerProvider(prevTP)
			otel.SetTextMapPropagator(prevProp)
		}
		otel.SetErrorHandler(prevErr)
	}
}

// close flushes the spans still buffered, stops the providers and puts the
// global ones back. A collector that cannot be reached is logged, not an
// error of the server's shutdown. It may be called more than once.
func (t *telemetry) close(ctx context.Context) {
	for _, stop := range t.stop {
		if err := stop(ctx); err != nil {
			t.logger.WarnContext(ctx, "telemetry: flush on shutdown failed", slog.Any("error", err))
		}
	}
	t.stop = nil
	t.restore()
	t.restore = func() {}
}

// metricsHandler serves /metrics from reg and, with withPprof, the
// runtime's profiles under /debug/pprof/. It is mounted on the metrics
// listener alone: neither is ever reachable through the API's.
func metricsHandler(reg *prometheus.Registry, withPprof bool, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// observePool reports db's connection pool through mp, under the names of
// OpenTelemetry's database conventions: connections in use and idle, the
// most the pool opens, and how often and how long requests waited for
// one. The values are read from db.Stats() at each collection, so a
// request pays nothing for them.
func observePool(mp metric.MeterProvider, db *sql.DB) error {
	m := mp.Meter(scopeName)
	count, err1 := m.Int64ObservableGauge("db.client.connection.count",
		metric.WithUnit("{connection}"), metric.WithDescription("Connections of the pool, by state: used or idle."))
	most, err2 := m.Int64ObservableGauge("db.client.connection.max",
		metric.WithUnit("{connection}"), metric.WithDescription("The most connections the pool opens."))
	waits, err3 := m.Int64ObservableCounter("db.client.connection.wait_count",
		metric.WithUnit("{wait}"), metric.WithDescription("Times a statement waited for a free connection."))
	waited, err4 := m.Float64ObservableCounter("db.client.connection.wait_time",
		metric.WithUnit("s"), metric.WithDescription("Time statements spent waiting for a free connection."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	used := metric.WithAttributeSet(attribute.NewSet(attribute.String("db.client.connection.state", "used")))
	idle := metric.WithAttributeSet(attribute.NewSet(attribute.String("db.client.connection.state", "idle")))
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := db.Stats()
		o.ObserveInt64(count, int64(s.InUse), used)
		o.ObserveInt64(count, int64(s.Idle), idle)
		o.ObserveInt64(most, int64(s.MaxOpenConnections))
		o.ObserveInt64(waits, s.WaitCount)
		o.ObserveFloat64(waited, s.WaitDuration.Seconds())
		return nil
	}, count, most, waits, waited)
	if err != nil {
		return fmt.Errorf("pool metrics: %w", err)
	}
	return nil
}

// traceQueries returns db with bun's OpenTelemetry query hook, so that
// every statement is a span of tp, child of the operation that ran it.
// Statements are recorded as written, with their placeholders, never with
// their arguments (token hashes, addresses).
func traceQueries(db *bun.DB, tp trace.TracerProvider) *bun.DB {
	h := bunotel.NewQueryHook(bunotel.WithTracerProvider(tp), bunotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	return db.WithQueryHook(querySpans{h})
}

// querySpans is bunotel's hook without its Init, which would register
// go.sql.* pool metrics on the global MeterProvider beside the server's
// own db.client.connection.* (observePool). Its query-duration histogram
// is off too (a no-op meter): its unit is not UCUM, and the spans carry
// each statement's duration already.
type querySpans struct{ h *bunotel.QueryHook }

var _ bun.QueryHook = querySpans{}

func (q querySpans) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	return q.h.BeforeQuery(ctx, e)
}

func (q querySpans) AfterQuery(ctx context.Context, e *bun.QueryEvent) { q.h.AfterQuery(ctx, e) }

// traceContext continues the trace of an incoming W3C traceparent header:
// the spans a request makes become children of the caller's.
func traceContext(next http.Handler) http.Handler {
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))))
	})
}
