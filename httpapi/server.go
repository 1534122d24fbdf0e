package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/i18n"
	"github.com/deskkit/deskkit/internal/ratelog"
	"github.com/deskkit/deskkit/internal/telemetry"
)

// Prefix is where every route is mounted.
const Prefix = "/api/v1"

// Defaults of Config.
const (
	// DefaultMaxBodyBytes is the largest request body DecodeJSON accepts.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultRequestTimeout is every request's deadline: well above the
	// trash's slowest operations (a 100,000-entry clear takes seconds), and
	// short enough that a client learns of an outage while it still waits.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultRetryAfter is the Retry-After of a 503 whose error does not
	// say when to retry: long enough for a pool to drain or a database to
	// fail over, short enough not to turn a blip into an outage.
	DefaultRetryAfter = 5 * time.Second
	// DefaultOutageLogInterval is how often an outage is logged.
	DefaultOutageLogInterval = 10 * time.Second
)

// Authenticator turns a bearer token into the principal it names.
// Authenticate returns an error wrapping deskkit.ErrUnauthenticated for a
// token it does not know (answered 401); any other error is unexpected
// (answered 500 and logged).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (deskkit.Principal, error)
}

// Config names the services to mount; nil services (a nil interface or a
// nil pointer in one) are not mounted, and their routes answer 404. The
// services are interfaces that *trash.Trash, *verify.Verifier and
// *channel.ChannelRegistry implement, so a host can mount a wrapper or a
// fake.
type Config struct {
	Authenticator Authenticator // required
	Trash         TrashService
	Verifier      VerifyService
	Channels      ChannelService
	Logger        *slog.Logger     // unexpected errors go here; slog.Default if nil
	Now           func() time.Time // the clock of envelope datetimes and outage logging; time.Now if nil
	MaxBodyBytes  int64            // DefaultMaxBodyBytes if 0

	// RequestTimeout is the deadline of every request's context, set
	// before authentication, so that no request waits for the pool or the
	// database for ever; a request that runs out of it answers 503.
	// DefaultRequestTimeout if 0.
	RequestTimeout time.Duration
	// RetryAfter is the Retry-After of a 503 whose error does not carry
	// its own (deskkit.RetryAfterer). DefaultRetryAfter if 0.
	//
	// An outage is answered 503 service_unavailable with Retry-After and
	// a generic message, never 500: that is deskkit.ErrUnavailable,
	// whatever deskkit recognises as an outage (the pool or a statement
	// out of time, connections refused or reset, too many clients,
	// shutdown, SQLite busy, the request deadline), a closed pool, and any
	// error once the request deadline has passed. Nothing such a request
	// did was committed; the client may retry.
	RetryAfter time.Duration
	// OutageLogInterval: 503s are logged once per interval, with the
	// number left out since the last line. DefaultOutageLogInterval if 0.
	//
	// The interval runs on the clock of Now: the first 503 is logged, the
	// ones that follow within the interval are only counted, and the next
	// line says how many ("suppressed"). When the outage ends, that is at
	// the first request that succeeds after 503s were left out, a line
	// "service available again" gives their count at once, rather than
	// with the next outage; so that a database that fails and recovers
	// many times a second does not log a line each time, that line too
	// comes at most once per interval (a count not given yet comes with a
	// later line). A client that went away (its context cancelled) is not
	// logged at all.
	OutageLogInterval time.Duration

	// MeterProvider records http.server.request.duration; the global
	// provider (otel.GetMeterProvider) if nil, which records nothing
	// until the host installs one. Nothing is registered on a global
	// registry.
	//
	// Under the scope github.com/deskkit/deskkit/httpapi, the histogram
	// http.server.request.duration is in seconds (OpenTelemetry's name,
	// buckets and attributes): http.route, the template of the operation
	// that served the request (/api/v1/task/trash/{id}, as Routes writes
	// it; never the path, and absent when no route matched, for 404s and
	// 405s), the http.request.method (_OTHER for a method HTTP does not
	// define) and http.response.status_code. examples/bench/README.md
	// gives what the metrics cost a request.
	MeterProvider metric.MeterProvider
	// TracerProvider starts a server span per request; the global
	// provider (otel.GetTracerProvider) if nil.
	//
	// Each request is a server span named "METHOD /route/template" ("GET"
	// alone when no route matched), a child of the span the global
	// propagator (otel.GetTextMapPropagator) extracts from its headers, if
	// the host set one; its status is Error for 5xx answers only, and its
	// client.address the client's: the connection's, or behind
	// TrustedProxies the one they name (Proxies; Server.Client answers the
	// same for a host's own logs). The services' spans are its children.
	TracerProvider trace.TracerProvider

	// Messages writes the envelope's msg in the reader's language (see
	// Languages in the package documentation); nil is deskkit.NewMessages()
	// with the languages deskkit ships, English and Simplified Chinese.
	// A host that adds a language or rewords a message passes its own.
	//
	// What is written in the reader's language: "Success", each error
	// row's message, the services' own messages (errors that are
	// deskkit.LocalizedMessagers), the router's 404 and 405, and every
	// field-level message of the parameter checks and DecodeJSON. English
	// answers are the messages as the code writes them.
	//
	// The language is Messages.Match of, in this order: the request's
	// Accept-Language (quality values order it; zh, zh-CN, zh-Hans and
	// zh-Hans-CN are all Simplified Chinese), the user's preferred locale
	// and the tenant's default locale, then DefaultLanguage, then English.
	// A choice that names none of Messages' languages is skipped. The
	// user's and tenant's locales come from the Authenticator when it
	// also implements deskkit.LocaleResolver, asked once per authenticated
	// request after Authenticate; its error is answered as any error (one
	// wrapping deskkit.ErrUnavailable is a 503). Without it, and for a
	// request whose authentication fails (401, which has no principal),
	// only Accept-Language and the default remain.
	//
	// A host's own catalogues come in an fs.FS:
	//
	//	msgs, err := deskkit.NewMessages(os.DirFS("catalogues")) // ja.json, zh-Hans.json...
	//	api, err := httpapi.New(&httpapi.Config{Authenticator: auth, Messages: msgs, DefaultLanguage: "ja"})
	//
	// The same Messages go to verify.Config.Messages and
	// channel.Config.Messages, so that codes and event messages read as
	// the answers do.
	Messages *deskkit.Messages
	// DefaultLanguage is the server's default language, the last of the
	// choices a request's language is matched against: a BCP 47 tag that
	// names one of Messages.Languages exactly (deskkit.Messages.Language:
	// "en", "zh-CN"; New refuses "zh-TW", which names none of the shipped
	// ones). Empty, answers are in English
	// when nothing else names a language, and the service's context then
	// carries none (see Languages in the package documentation).
	//
	// The language is on the context the service is called with
	// (deskkit.WithLocalizer), so that what it sends for the request (a
	// verification code) is written in it too; with no language on the
	// context the service keeps its own default (verify writes English,
	// and a template SMS provider its own DefaultLocale).
	DefaultLanguage string
	// TrustedProxies are the reverse proxies in front of the server whose
	// Forwarded and X-Forwarded-For headers give the client's address:
	// IP addresses and CIDR prefixes ("10.0.0.0/8", "192.0.2.7",
	// "::1"). Empty, every request's client is its connection's peer
	// (RemoteAddr) and those headers are never read. The client is what
	// Server.Client answers and the client.address of the request's span;
	// see Proxies for the rules.
	TrustedProxies []string
}

// withDefaults returns a copy of c (nil: of the zero Config) with the
// defaults filled in. New calls it, then validate on the copy, as every
// constructor of the module does.
func (c *Config) withDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.MaxBodyBytes == 0 {
		out.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if out.RequestTimeout == 0 {
		out.RequestTimeout = DefaultRequestTimeout
	}
	if out.RetryAfter == 0 {
		out.RetryAfter = DefaultRetryAfter
	}
	if out.OutageLogInterval == 0 {
		out.OutageLogInterval = DefaultOutageLogInterval
	}
	if out.Messages == nil {
		// The shipped catalogues only: NewMessages cannot fail on them.
		out.Messages, _ = deskkit.NewMessages()
	}
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	if c.Authenticator == nil {
		return errors.New("httpapi: Authenticator is required")
	}
	if c.MaxBodyBytes < 0 || c.RequestTimeout < 0 || c.RetryAfter < 0 || c.OutageLogInterval < 0 {
		return errors.New("httpapi: MaxBodyBytes, RequestTimeout, RetryAfter and OutageLogInterval must not be negative")
	}
	if c.DefaultLanguage != "" {
		if _, err := defaultLanguage(c.Messages, c.DefaultLanguage); err != nil {
			return err
		}
	}
	if _, err := ParseProxies(c.TrustedProxies); err != nil {
		return fmt.Errorf("httpapi: Config.%w", err)
	}
	return nil
}

// defaultLanguage is the language of Messages that tag names exactly
// (deskkit.Messages.Language: zh-CN names zh-Hans, zh-TW does not), or an
// error naming the setting and the languages there are.
func defaultLanguage(m *deskkit.Messages, tag string) (language.Tag, error) {
	if _, err := i18n.Parse(tag); err != nil {
		return language.Und, fmt.Errorf("httpapi: Config.DefaultLanguage %q is no BCP 47 language tag; Messages has %s", tag, languageList(m))
	}
	got, ok := m.Language(tag)
	if !ok {
		return language.Und, fmt.Errorf("httpapi: Config.DefaultLanguage %q is none of the languages of Messages: %s (a tag of the same language and script, such as en-US or zh-CN, names one; the closest is not enough)", tag, languageList(m))
	}
	return got, nil
}

// languageList is m's languages, comma separated.
func languageList(m *deskkit.Messages) string {
	var tags []string
	for _, t := range m.Languages() {
		tags = append(tags, t.String())
	}
	return strings.Join(tags, ", ")
}

// Endpoint is an authenticated operation: it gets the request (path
// parameters through r.PathValue, the context with the request deadline)
// and the principal, and returns the data of a success envelope or an error
// for the error table.
type Endpoint func(r *http.Request, p deskkit.Principal) (any, error)

// Server is the HTTP API: an http.Handler that answers every route under
// Prefix with an envelope.
type Server struct {
	cfg      Config
	langs    *Languages // Config.Messages, DefaultLanguage and the Authenticator's locales
	proxies  Proxies    // Config.TrustedProxies
	outages  *outageLog
	tracer   trace.Tracer
	duration metric.Float64Histogram
	mu       sync.Mutex              // held by Handle while it adds to ops and builds
	ops      []*operation            // deskkit's, then the host's, in mounting order
	routing  atomic.Pointer[routing] // built from ops; swapped whole by Handle
	doc      []byte                  // the OpenAPI document of deskkit's operations
}

// New builds the handler of the services cfg names.
func New(cfg *Config) (*Server, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: *c}
	s.proxies, _ = ParseProxies(c.TrustedProxies) // validated
	locales, _ := c.Authenticator.(deskkit.LocaleResolver)
	s.langs, _ = NewLanguages(c.Messages, c.DefaultLanguage, locales) // validated
	s.tracer = telemetry.Tracer(c.TracerProvider, scope)
	s.duration = telemetry.Seconds(telemetry.Meter(c.MeterProvider, scope), "http.server.request.duration", "Duration of HTTP server requests.")
	s.outages = &outageLog{logger: c.Logger, every: &ratelog.Every{Interval: c.OutageLogInterval, Now: c.Now}}
	s.add(operation{id: "getOpenAPIDocument", method: http.MethodGet, path: "/openapi.json", serve: s.serveDocument, doc: getOpenAPIDocumentDoc})
	if Mounted(c.Trash) {
		for _, op := range trashRoutes(c.Trash) {
			s.add(op)
		}
	}
	if Mounted(c.Verifier) {
		for _, op := range verifyRoutes(c.Verifier) {
			s.add(op)
		}
	}
	if Mounted(c.Channels) {
		for _, op := range channelRoutes(c.Channels) {
			s.add(op)
		}
		for _, op := range eventRoutes(c.Channels) {
			s.add(op)
		}
	}
	s.routing.Store(s.build())
	var err error
	if s.doc, err = buildDocument(s.ops); err != nil {
		// A route list's doc is wrong: a programming error, as a bad
		// template is.
		panic("httpapi: OpenAPI document: " + err.Error())
	}
	return s, nil
}

// serveDocument answers the OpenAPI document of the operations New
// mounted (see buildDocument), without authentication. It takes no query
// parameters either.
func (s *Server) serveDocument(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, nil); err != nil {
		s.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(s.doc)
}

// ServeHTTP answers one request. An operation runs within
// Config.RequestTimeout; a panic in it is logged with its stack and
// answered 500. Every request gets a request id (X-Request-Id), a server
// span and a measure of its duration: see the package documentation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx := r.Context()
	if deskkit.RequestID(ctx) == "" { // else RequestIDs gave it one
		id := requestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, id)
		ctx = deskkit.WithRequestID(ctx, id)
	}
	// The language of the answer until the principal's locales are known
	// (localize): what the client asks for, else the server's default;
	// no Localizer on the context when nothing names one (the answer is
	// in English).
	switch l, from, _ := s.langs.Resolve(ctx, nil, r.Header.Get("Accept-Language")); from {
	case FromRequest:
		ctx = context.WithValue(deskkit.WithLocalizer(ctx, l), askedKey{}, true)
	case FromDefault:
		ctx = deskkit.WithLocalizer(ctx, l)
	}
	ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(r.Header))
	method := methodOf(r.Method)
	ctx, span := s.tracer.Start(ctx, spanName(method), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(attrMethod, method), attribute.String("url.path", r.URL.EscapedPath())))
	r = r.WithContext(ctx)
	rw := &responseWriter{ResponseWriter: w}
	defer func() {
		v := recover()
		if v != nil && v != http.ErrAbortHandler {
			s.panicked(rw, r, v, debug.Stack())
		}
		s.finish(ctx, span, rw, r, method, start)
		if v == http.ErrAbortHandler {
			panic(v)
		}
	}()
	s.serveRoute(rw, r, s.routing.Load())
}

// Client is r's client as Config.TrustedProxies tells it: the address
// and scheme a host's own access log or limits should use for a request,
// the same the API's spans record (see Proxies).
func (s *Server) Client(r *http.Request) Client {
	return s.proxies.Client(r)
}

// Wrap returns the handler to serve in place of host (the host's own
// router, an *http.ServeMux for instance) when the API is embedded beside
// the host's routes: every request whose path is under Prefix goes to the
// API as it came, and every other to host.
//
//	mux := http.NewServeMux()
//	mux.HandleFunc("GET /tasks", listTasks) // the host's own routes
//	srv := &http.Server{Handler: api.Wrap(mux)}
//
// Registering the API on the mux instead (mux.Handle("/api/v1/", api))
// is unsafe: an http.ServeMux answers a path that is not clean with a
// redirect to its cleaned form before any handler runs, so DELETE
// /api/v1/task/trash/3/..?projectId=1 answers 307 to
// /api/v1/task/trash?projectId=1, and a client that follows it clears the
// project. Wrap hands the API a request whose path is under Prefix as
// written (escaped), as decoded or once cleaned (//api/v1/...,
// /x/../api/v1/..., /api%2Fv1/...), so that no such path reaches the
// mux; the API answers every one of them without cleaning it (404 for
// the ones above).
func (s *Server) Wrap(host http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if underPrefix(r.URL.EscapedPath()) || underPrefix(r.URL.Path) || underPrefix(path.Clean("/"+r.URL.Path)) {
			s.ServeHTTP(w, r)
			return
		}
		host.ServeHTTP(w, r)
	})
}

func underPrefix(p string) bool {
	return p == Prefix || strings.HasPrefix(p, Prefix+"/")
}

func (s *Server) authenticate(r *http.Request) (deskkit.Principal, error) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return deskkit.Principal{}, deskkit.ErrUnauthenticated
	}
	p, err := s.cfg.Authenticator.Authenticate(r.Context(), token)
	if err != nil {
		return deskkit.Principal{}, err
	}
	if !p.Valid() {
		return deskkit.Principal{}, deskkit.ErrUnauthenticated
	}
	return p, nil
}

// askedKey marks a request context whose Localizer is the one its
// Accept-Language asked for: localize asks no locales then.
type askedKey struct{}

// localizer is what the answers to a request with context ctx are
// written by: its Localizer (ServeHTTP's or localize's), written from
// Config.Messages, else the server's default.
func (s *Server) localizer(ctx context.Context) deskkit.Localizer {
	l, ok := deskkit.LocalizerOf(ctx)
	switch {
	case !ok:
		return s.langs.Default()
	case l.Messages() != s.cfg.Messages:
		// Set by a caller outside the API (deskkit.WithLanguage): its
		// language, in the API's messages.
		return s.cfg.Messages.Localizer(l.Language())
	}
	return l
}

// localize returns r with the language of an authenticated request in its
// context (Languages.Resolve with p): the user's and the tenant's locales
// if the Authenticator is a deskkit.LocaleResolver, else what ServeHTTP
// put there. The resolver is asked only when Accept-Language matched no
// language, so that a host's lookup costs nothing on the requests that
// name their language.
func (s *Server) localize(r *http.Request, p deskkit.Principal) (*http.Request, error) {
	if s.langs.locales == nil || r.Context().Value(askedKey{}) != nil {
		return r, nil
	}
	l, from, err := s.langs.Resolve(r.Context(), &p)
	if err != nil {
		return r, err
	}
	if from != FromPrincipal {
		return r, nil // ServeHTTP put the default, or nothing, already
	}
	return r.WithContext(deskkit.WithLocalizer(r.Context(), l)), nil
}

var getOpenAPIDocumentDoc = &doc{
	tag:         "meta",
	summary:     "This OpenAPI document",
	description: "Returns this OpenAPI 3.1 document, as generated when the server started from the operations it mounts (a host's own routes are not in it). Needs no credential.",
	ok:          "OK. The OpenAPI document (not wrapped in an envelope).",
}
