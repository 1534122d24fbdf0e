package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// served is a reference server started by startServing: where it listens,
// the demo user's token, its log, and stop, which shuts it down and
// returns run's error.
type served struct {
	base, metrics, token string
	stderr               *lockedBuffer
	stop                 func() error
}

var (
	listeningLine = regexp.MustCompile(`^deskkit is listening on (http://\S+)$`)
	metricsLine   = regexp.MustCompile(`^Metrics are served on (http://\S+)/metrics$`)
	curlTokenLine = regexp.MustCompile(`curl -H 'Authorization: Bearer (dk_[A-Za-z0-9_-]{43})' `)
)

// startServing runs the reference server with args and the environment
// vars, the demo on, and reads what it prints up to the demo user's curl
// line.
func startServing(t *testing.T, args []string, vars map[string]string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	s := &served{stderr: &lockedBuffer{}}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), outW, s.stderr, env(vars))
		outW.Close()
	}()
	var once sync.Once
	var runErr error
	s.stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("run: %v\n%s", err, s.stderr.String())
		}
	})
	sc := bufio.NewScanner(outR)
	for s.token == "" && sc.Scan() {
		line := sc.Text()
		if m := listeningLine.FindStringSubmatch(line); m != nil {
			s.base = m[1]
		}
		if m := metricsLine.FindStringSubmatch(line); m != nil {
			s.metrics = m[1]
		}
		if m := curlTokenLine.FindStringSubmatch(line); m != nil {
			s.token = m[1]
		}
	}
	if s.token == "" || s.base == "" {
		cancel()
		t.Fatalf("the server did not start: %v\n%s", <-done, s.stderr.String())
	}
	go io.Copy(io.Discard, outR) //nolint:errcheck // drain
	return s
}

// get answers GET url's status and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// valueCheck is what a series' value must be.
type valueCheck struct {
	desc string
	ok   func(float64) bool
}

func atLeast(n float64) valueCheck {
	return valueCheck{fmt.Sprintf(">= %g", n), func(v float64) bool { return v >= n }}
}

func equal(n float64) valueCheck {
	return valueCheck{fmt.Sprintf("== %g", n), func(v float64) bool { return v == n }}
}

// seriesWant is a series /metrics must have: a family by its Prometheus
// name, the labels one of its series carries (others may be there), and
// that series' value: a counter's or gauge's, a histogram's count.
type seriesWant struct {
	family string
	labels map[string]string
	value  valueCheck
}

// serverSeries are the series of the server's own instruments (METRICS.md),
// after TestMetricsListener's requests (three trash searches, one current
// user) on a pool of -db-max-conns 4. The library's are libraryCases. How
// many connections are idle or used at the scrape is the background
// workers' and the pool's affair (on a shared PostgreSQL the pool may just
// have dropped a broken one): the two states are checked to be reported,
// and the pool's bound to be the flag's.
var serverSeries = []seriesWant{
	{"db_client_connection_count", map[string]string{"db_client_connection_state": "idle", "otel_scope_name": scopeName}, atLeast(0)},
	{"db_client_connection_count", map[string]string{"db_client_connection_state": "used", "otel_scope_name": scopeName}, atLeast(0)},
	{"db_client_connection_max", map[string]string{"otel_scope_name": scopeName}, equal(4)},
	{"db_client_connection_wait_count_total", map[string]string{"otel_scope_name": scopeName}, atLeast(0)},
	{"db_client_connection_wait_time_seconds_total", map[string]string{"otel_scope_name": scopeName}, atLeast(0)},
	// The Go runtime's collector, on the same registry.
	{"go_goroutines", nil, atLeast(1)},
}

// scrape reads url's Prometheus text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("GET %s: not the Prometheus text format: %v", url, err)
	}
	return families
}

// checkSeries reports each of want that families lack.
func checkSeries(t *testing.T, families map[string]*dto.MetricFamily, want []seriesWant) {
	t.Helper()
	for _, w := range want {
		fam, ok := families[w.family]
		if !ok {
			t.Errorf("/metrics has no %s", w.family)
			continue
		}
		var seen []string
		found := false
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			matches := true
			for k, v := range w.labels {
				matches = matches && labels[k] == v
			}
			v := seriesValue(m)
			seen = append(seen, fmt.Sprintf("%v = %g", labels, v))
			if matches && w.value.ok(v) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s has no series with %v and a value %s; it has:\n  %s", w.family, w.labels, w.value.desc, strings.Join(seen, "\n  "))
		}
	}
}

func seriesValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// TestMetricsListener starts the server with -metrics-addr and -pprof,
// makes a few API requests, and finds the server's instruments on
// /metrics with their labels; profiles are on the metrics listener, and
// neither profiles nor metrics are on the API's.
func TestMetricsListener(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		s := startServing(t, []string{"-metrics-addr", "127.0.0.1:0", "-pprof", "-db-max-conns", "4"}, map[string]string{envDatabaseURL: rawURL})
		if s.metrics == "" {
			t.Fatalf("no metrics line printed\n%s", s.stderr.String())
		}
		if s.metrics == s.base {
			t.Fatalf("metrics on the API's listener %s", s.base)
		}
		for range 3 {
			if status, body := get(t, s.base+"/api/v1/task/trash/search?targetType=TASK", s.token); status != http.StatusOK {
				t.Fatalf("search: %d %s", status, body)
			}
		}
		if status, body := get(t, s.base+"/api/v1/user/current", s.token); status != http.StatusOK {
			t.Fatalf("current user: %d %s", status, body)
		}
		checkSeries(t, scrape(t, s.metrics+"/metrics"), serverSeries)

		for _, c := range []struct {
			url  string
			want int
		}{
			{s.metrics + "/debug/pprof/", http.StatusOK},
			{s.metrics + "/debug/pprof/cmdline", http.StatusOK},
			{s.base + "/debug/pprof/", http.StatusNotFound},
			{s.base + "/debug/pprof/cmdline", http.StatusNotFound},
			{s.base + "/metrics", http.StatusNotFound},
		} {
			if got, body := get(t, c.url, ""); got != c.want {
				t.Errorf("GET %s = %d, want %d\n%.200s", c.url, got, c.want, body)
			}
		}
		if err := s.stop(); err != nil {
			t.Fatalf("run: %v\n%s", err, s.stderr.String())
		}
		if _, err := http.Get(s.metrics + "/metrics"); err == nil {
			t.Error("the metrics listener still answers after shutdown")
		}
		if logs := s.stderr.String(); !strings.Contains(logs, `"msg":"metrics listening"`) {
			t.Errorf("logs lack the metrics listener:\n%s", logs)
		}
	})
}

// libraryCases are the library's instruments (trash, verify, channel and
// the outbox, httpapi) as TestMetricsLibraryInstruments' requests leave
// them on /metrics: each instrument under its Prometheus name, with the
// labels the requests give it.
var libraryCases = []seriesWant{
	{"http_server_request_duration_seconds", map[string]string{"http_route": "/api/v1/task/trash/search", "http_request_method": "GET", "http_response_status_code": "200"}, atLeast(2)},
	{"http_server_request_duration_seconds", map[string]string{"http_route": "/api/v1/task/trash/{id}/back", "http_request_method": "PATCH", "http_response_status_code": "404"}, atLeast(1)},
	{"deskkit_trash_operations_total", map[string]string{"deskkit_operation": "search", "deskkit_result": "ok"}, atLeast(2)},
	{"deskkit_trash_operations_total", map[string]string{"deskkit_operation": "restore", "deskkit_result": "resource_not_found"}, atLeast(1)},
	{"deskkit_verify_codes_sent_total", map[string]string{"deskkit_channel": "sms", "deskkit_result": "ok"}, atLeast(1)},
	{"deskkit_verify_rate_limited_total", map[string]string{"deskkit_limit": "resend_interval"}, atLeast(1)},
	{"deskkit_verify_codes_checked_total", map[string]string{"deskkit_channel": "sms", "deskkit_result": "verification_code_wrong"}, atLeast(1)},
	{"deskkit_events_published_total", map[string]string{"deskkit_event_type": "demo.hello"}, equal(1)},
	{"deskkit_deliveries_total", map[string]string{"deskkit_channel_type": "WEBHOOK", "deskkit_result": "succeeded"}, equal(1)},
	{"deskkit_delivery_duration_seconds", map[string]string{"deskkit_channel_type": "WEBHOOK", "deskkit_result": "succeeded"}, equal(1)},
	{"deskkit_outbox_depth", nil, equal(0)},
	{"deskkit_outbox_oldest_due_age_seconds", nil, equal(0)},
}

// TestMetricsLibraryInstruments drives each service through the reference
// server (two trash searches and a miss, an SMS code sent, refused by the
// resend interval and checked wrong, an event published to a loopback
// webhook and delivered) and finds every library instrument on /metrics
// with its labels.
func TestMetricsLibraryInstruments(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		rcv := startReceiver(t, nil)
		s := startServing(t, []string{"-metrics-addr", "127.0.0.1:0", "-channel-allow-private-networks"}, map[string]string{envDatabaseURL: rawURL})
		for range 2 {
			ok(t, s.base, s.token, http.MethodGet, "/api/v1/task/trash/search?targetType=TASK", nil, nil)
		}
		if status, _ := call(t, s.base, s.token, http.MethodPatch, "/api/v1/task/trash/999999/back", nil); status != http.StatusNotFound {
			t.Fatalf("trash entry 999999: %d, want 404", status)
		}
		send := map[string]any{"bizKey": "BIND_MOBILE", "mobile": "13800138000", "country": "CN"}
		ok(t, s.base, s.token, http.MethodPost, "/api/v1/user/current/sms/send", send, nil)
		if status, _ := call(t, s.base, s.token, http.MethodPost, "/api/v1/user/current/sms/send", send); status != http.StatusTooManyRequests {
			t.Fatalf("a second send at once: %d, want 429", status)
		}
		if status, _ := call(t, s.base, s.token, http.MethodGet, "/api/v1/user/current/sms/check?"+url.Values{
			"bizKey": {"BIND_MOBILE"}, "mobile": {"+8613800138000"}, "country": {"CN"}, "verificationCode": {"000000"},
		}.Encode(), nil); status != http.StatusBadRequest {
			t.Fatalf("a wrong code: %d, want 400", status)
		}
		id := addWebhook(t, s.base, s.token, "metrics", rcv, "/metrics", nil)
		ok(t, s.base, s.token, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "counted"}, nil)
		var page struct {
			Total int
			List  []struct{ Status string }
		}
		waitFor(t, rcv, 30*time.Second, func() bool {
			ok(t, s.base, s.token, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries", id), nil, &page)
			return page.Total == 1 && page.List[0].Status == "SUCCEEDED"
		}, func() string { return fmt.Sprintf("the delivery did not succeed: %+v", page) })
		checkSeries(t, scrape(t, s.metrics+"/metrics"), libraryCases)
	})
}

// Without -pprof, the metrics listener serves no profiles.
func TestMetricsListenerWithoutPprof(t *testing.T) {
	s := startServing(t, []string{"-metrics-addr", "127.0.0.1:0"}, map[string]string{envDatabaseURL: "sqlite:" + t.TempDir() + "/deskkit.db"})
	for _, c := range []struct {
		url  string
		want int
	}{
		{s.metrics + "/metrics", http.StatusOK},
		{s.metrics + "/debug/pprof/", http.StatusNotFound},
		{s.base + "/debug/pprof/", http.StatusNotFound},
	} {
		if got, _ := get(t, c.url, ""); got != c.want {
			t.Errorf("GET %s = %d, want %d", c.url, got, c.want)
		}
	}
}

// Without -metrics-addr there is no metrics listener and no metrics line.
func TestNoMetricsByDefault(t *testing.T) {
	s := startServing(t, nil, map[string]string{envDatabaseURL: "sqlite:" + t.TempDir() + "/deskkit.db"})
	if s.metrics != "" {
		t.Errorf("metrics served on %s without -metrics-addr", s.metrics)
	}
	for _, p := range []string{"/metrics", "/debug/pprof/"} {
		if got, _ := get(t, s.base+p, ""); got != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, got)
		}
	}
}

func TestTelemetryFlags(t *testing.T) {
	ctx := context.Background()
	dbURL := "sqlite:" + t.TempDir() + "/x.db"
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"-pprof alone", []string{"-pprof"}, nil, "-pprof needs -metrics-addr"},
		{"DESKKIT_PPROF alone", nil, map[string]string{envPprof: "true"}, "-pprof needs -metrics-addr"},
		{"bad DESKKIT_PPROF", nil, map[string]string{envPprof: "sometimes"}, envPprof},
		{"the API's address", []string{"-addr", "127.0.0.1:8089", "-metrics-addr", "127.0.0.1:8089"}, nil, "-metrics-addr 127.0.0.1:8089 is -addr's"},
		{"the API's address from the environment", []string{"-addr", "127.0.0.1:8089"}, map[string]string{envMetricsAddr: "127.0.0.1:8089"}, "is -addr's"},
		{"an endpoint without scheme", nil, map[string]string{envOTLPEndpoint: "127.0.0.1:4318"}, envOTLPEndpoint + `="127.0.0.1:4318": must be an http:// or https:// URL`},
		{"a bad traces endpoint", nil, map[string]string{envOTLPTracesEndpoint: "grpc://x:4317"}, envOTLPTracesEndpoint},
		{"a metrics address that cannot be bound", []string{"-addr", "127.0.0.1:0", "-metrics-addr", "256.0.0.1:1"}, nil, "metrics listener"},
	} {
		vars := map[string]string{envDatabaseURL: dbURL}
		for k, v := range c.env {
			vars[k] = v
		}
		err := run(ctx, c.args, io.Discard, io.Discard, env(vars))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func TestTracesEndpoint(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{envOTLPEndpoint: "http://127.0.0.1:4318"}, "http://127.0.0.1:4318/v1/traces"},
		{map[string]string{envOTLPEndpoint: "https://collector.example/otlp/"}, "https://collector.example/otlp/v1/traces"},
		{map[string]string{envOTLPTracesEndpoint: "http://127.0.0.1:4318/custom"}, "http://127.0.0.1:4318/custom"},
		{map[string]string{envOTLPEndpoint: "http://a:4318", envOTLPTracesEndpoint: "http://b:4318/v1/traces"}, "http://b:4318/v1/traces"},
	} {
		got, err := tracesEndpoint(env(c.env))
		if err != nil || got != c.want {
			t.Errorf("tracesEndpoint(%v) = %q, %v; want %q", c.env, got, err, c.want)
		}
	}
}

// collector is an OTLP/HTTP trace receiver on loopback that keeps what it
// is sent.
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.ResourceSpans
	bad   []string // requests it refused, and why
	*httptest.Server
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(why string) {
			c.mu.Lock()
			c.bad = append(c.bad, why)
			c.mu.Unlock()
			http.Error(w, why, http.StatusBadRequest)
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			refuse(fmt.Sprintf("%s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
			return
		}
		body := io.Reader(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				refuse(err.Error())
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			refuse(err.Error())
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			refuse(err.Error())
			return
		}
		c.mu.Lock()
		c.spans = append(c.spans, req.GetResourceSpans()...)
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out) //nolint:errcheck // the exporter's problem
	}))
	t.Cleanup(c.Close)
	return c
}

// receivedSpan is a span as the collector got it, with its scope and
// resource.
type receivedSpan struct {
	scope    string
	resource map[string]string
	*tracepb.Span
}

func (c *collector) received() []receivedSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []receivedSpan
	for _, rs := range c.spans {
		res := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				out = append(out, receivedSpan{ss.GetScope().GetName(), res, sp})
			}
		}
	}
	return out
}

func spanAttr(sp *tracepb.Span, key string) string {
	for _, kv := range sp.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// TestTracesExported starts the server with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a collector on loopback, makes a request that carries a W3C
// traceparent, shuts the server down, and finds bun's spans of the
// request's statements in the collector, children of the caller's span.
func TestTracesExported(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		col := startCollector(t)
		s := startServing(t, nil, map[string]string{envDatabaseURL: rawURL, envOTLPEndpoint: col.URL})
		const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		req, _ := http.NewRequest(http.MethodGet, s.base+"/api/v1/task/trash/search?targetType=TASK", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body) //nolint:errcheck // the status is what matters
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("search: %d", res.StatusCode)
		}
		// Shutting down flushes the spans the batch processor holds.
		if err := s.stop(); err != nil {
			t.Fatalf("run: %v\n%s", err, s.stderr.String())
		}
		col.mu.Lock()
		bad := col.bad
		col.mu.Unlock()
		if len(bad) > 0 {
			t.Errorf("the collector refused requests: %q", bad)
		}
		spans := col.received()
		if len(spans) == 0 {
			t.Fatalf("no span arrived\n%s", s.stderr.String())
		}
		wantSystem := "sqlite"
		if strings.HasPrefix(rawURL, "postgres") {
			wantSystem = "postgresql"
		}
		var db, child int
		for _, sp := range spans {
			if sp.resource["service.name"] != serviceName {
				t.Errorf("span %q of service %q, want %q", sp.GetName(), sp.resource["service.name"], serviceName)
			}
			if sp.scope != "github.com/uptrace/bun" {
				continue
			}
			db++
			if got := spanAttr(sp.Span, "db.system"); got != wantSystem {
				t.Errorf("bun span %q: db.system %q, want %q", sp.GetName(), got, wantSystem)
			}
			if hex.EncodeToString(sp.GetTraceId()) == traceID && hex.EncodeToString(sp.GetParentSpanId()) == parentID {
				child++
				if stmt := spanAttr(sp.Span, "db.statement"); stmt == "" {
					t.Errorf("bun span %q has no db.statement", sp.GetName())
				}
			}
		}
		if db == 0 {
			t.Errorf("no span from bun among %d", len(spans))
		}
		// The request's statements continue the caller's trace: the
		// search's own statements at least (directly, or under the
		// library's spans once it makes them).
		inTrace := 0
		for _, sp := range spans {
			if hex.EncodeToString(sp.GetTraceId()) == traceID {
				inTrace++
			}
		}
		if inTrace == 0 {
			t.Errorf("no span in the caller's trace %s (bun spans: %d, children of %s: %d)", traceID, db, parentID, child)
		}
		if errs := s.stderr.String(); strings.Contains(errs, `"msg":"telemetry: flush on shutdown failed"`) {
			t.Errorf("flush failed:\n%s", errs)
		}
	})
}

// The pool's instruments read db.Stats() at each collection: a connection
// held is used, the rest idle.
func TestPoolMetrics(t *testing.T) {
	db := dbtest.OpenSQLite(t).DB
	db.SetMaxOpenConns(3)
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(ctx) }) //nolint:errcheck // a manual reader
	if err := observePool(mp, db); err != nil {
		t.Fatal(err)
	}
	conns := make([]*sql.Conn, 2)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	conns[1].Close()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, scopeName)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					state, _ := p.Attributes.Value("db.client.connection.state")
					got[m.Name+" "+m.Unit+" "+state.AsString()] = float64(p.Value)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+" "+m.Unit+" "] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+" "+m.Unit+" "] = p.Value
				}
			default:
				t.Errorf("%s is a %T", m.Name, m.Data)
			}
		}
	}
	want := map[string]float64{
		"db.client.connection.count {connection} used": 1,
		"db.client.connection.count {connection} idle": 1,
		"db.client.connection.max {connection} ":       3,
		"db.client.connection.wait_count {wait} ":      0,
		"db.client.connection.wait_time s ":            0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pool metrics (-want +got):\n%s", diff)
	}
	conns[0].Close()
}

// Every line a request writes carries its id, the access log's included,
// for the API and the console alike: the id the client sent, or the one
// the answer's X-Request-Id names.
func TestRequestIDInAccessLog(t *testing.T) {
	s := startServing(t, nil, map[string]string{envDatabaseURL: "sqlite:" + t.TempDir() + "/deskkit.db"})
	for _, c := range []struct{ method, path, id string }{
		{http.MethodPatch, "/api/v1/task/trash/999999/back", "report-42"},
		{http.MethodGet, "/console/", "console-7"},
		{http.MethodGet, "/api/v1/user/current", ""},
	} {
		req, _ := http.NewRequest(c.method, s.base+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		if c.id != "" {
			req.Header.Set("X-Request-Id", c.id)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// The body's end comes after the handler returned, and so after
		// the access log's line.
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		id := res.Header.Get("X-Request-Id")
		if id == "" || (c.id != "" && id != c.id) {
			t.Fatalf("%s %s: X-Request-Id %q, want %q", c.method, c.path, id, c.id)
		}
		want := `"msg":"request","method":"` + c.method + `","path":"` + c.path + `"`
		found := false
		for line := range strings.Lines(s.stderr.String()) {
			found = found || (strings.Contains(line, want) && strings.Contains(line, `"request_id":"`+id+`"`))
		}
		if !found {
			t.Errorf("no access log line of %s %s with request_id %q:\n%s", c.method, c.path, id, s.stderr.String())
		}
	}
}
