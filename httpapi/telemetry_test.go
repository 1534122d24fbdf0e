package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
)

// telemetrySetup is a server with a parametrised host route, recording
// into a ManualReader and a SpanRecorder, logging JSON through
// deskkit.LogHandler into logs.
type telemetrySetup struct {
	api    *httpapi.Server
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	logs   *bytes.Buffer
}

func newTelemetrySetup(t *testing.T) *telemetrySetup {
	t.Helper()
	s := &telemetrySetup{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), logs: &bytes.Buffer{}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(t.Context())
		_ = tp.Shutdown(t.Context())
	})
	logger := slog.New(deskkit.LogHandler(slog.NewJSONHandler(s.logs, nil)))
	api, err := httpapi.New(&httpapi.Config{
		Authenticator:  bearer{"t": {UserID: 1, TenantID: 1}},
		Logger:         logger,
		MeterProvider:  mp,
		TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	api.Handle(http.MethodGet, "/demo/task/{id}", func(r *http.Request, _ deskkit.Principal) (any, error) {
		switch r.PathValue("id") {
		case "404":
			return nil, deskkit.ErrNotFound
		case "500":
			return nil, errors.New("the disk is on fire")
		}
		return map[string]string{"id": r.PathValue("id")}, nil
	})
	s.api = api
	return s
}

func (s *telemetrySetup) get(t *testing.T, target, requestID string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer t")
	if requestID != "" {
		req.Header.Set(httpapi.RequestIDHeader, requestID)
	}
	rec := httptest.NewRecorder()
	s.api.ServeHTTP(rec, req)
	return rec
}

// durations returns the http.server.request.duration points: attribute
// set to count.
func (s *telemetrySetup) durations(t *testing.T) map[attribute.Distinct]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[attribute.Distinct]metricdata.HistogramDataPoint[float64]{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "http.server.request.duration" {
				continue
			}
			if sm.Scope.Name != "github.com/deskkit/deskkit/httpapi" || m.Unit != "s" {
				t.Errorf("scope %q unit %q", sm.Scope.Name, m.Unit)
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				out[dp.Attributes.Equivalent()] = dp
			}
		}
	}
	return out
}

func TestRequestDurationRoute(t *testing.T) {
	s := newTelemetrySetup(t)
	for _, target := range []string{"/api/v1/demo/task/7", "/api/v1/demo/task/8", "/api/v1/demo/task/404", "/api/v1/nowhere/at/all"} {
		s.get(t, target, "")
	}
	got := s.durations(t)
	want := []struct {
		attrs attribute.Set
		count uint64
	}{
		// Two ids, one series: the route is the template, never the path.
		{attribute.NewSet(attribute.String("http.route", "/api/v1/demo/task/{id}"), attribute.String("http.request.method", "GET"), attribute.Int("http.response.status_code", 200)), 2},
		{attribute.NewSet(attribute.String("http.route", "/api/v1/demo/task/{id}"), attribute.String("http.request.method", "GET"), attribute.Int("http.response.status_code", 404)), 1},
		// No route matched: no http.route at all.
		{attribute.NewSet(attribute.String("http.request.method", "GET"), attribute.Int("http.response.status_code", 404)), 1},
	}
	for _, w := range want {
		dp, ok := got[w.attrs.Equivalent()]
		if !ok {
			t.Errorf("no point with %v; have %d points", w.attrs.ToSlice(), len(got))
			continue
		}
		if dp.Count != w.count || dp.Sum <= 0 {
			t.Errorf("%v: count %d sum %v, want count %d and a positive sum", w.attrs.ToSlice(), dp.Count, dp.Sum, w.count)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d", len(got), len(want))
	}
	for _, dp := range got {
		for _, kv := range dp.Attributes.ToSlice() { // never a raw path
			if kv.Key == "http.route" && strings.Contains(kv.Value.AsString(), "/7") {
				t.Errorf("route %q holds the path", kv.Value.AsString())
			}
		}
	}
}

func TestRequestSpan(t *testing.T) {
	s := newTelemetrySetup(t)
	s.get(t, "/api/v1/demo/task/7", "")
	s.get(t, "/api/v1/demo/task/500", "")
	s.get(t, "/api/v1/nowhere", "")
	ended := s.spans.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d spans, want 3", len(ended))
	}
	type span struct {
		name   string
		status codes.Code
		route  string
		code   int64
	}
	var got []span
	for _, sp := range ended {
		g := span{name: sp.Name(), status: sp.Status().Code}
		for _, kv := range sp.Attributes() {
			switch kv.Key {
			case "http.route":
				g.route = kv.Value.AsString()
			case "http.response.status_code":
				g.code = kv.Value.AsInt64()
			}
		}
		if sp.SpanKind().String() != "server" {
			t.Errorf("%s: kind %s", sp.Name(), sp.SpanKind())
		}
		got = append(got, g)
	}
	want := []span{
		{"GET /api/v1/demo/task/{id}", codes.Unset, "/api/v1/demo/task/{id}", 200},
		{"GET /api/v1/demo/task/{id}", codes.Error, "/api/v1/demo/task/{id}", 500},
		{"GET", codes.Unset, "", 404},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestRequestID(t *testing.T) {
	s := newTelemetrySetup(t)
	tests := []struct {
		name, in string
		keep     bool
	}{
		{"uuid kept", "0b5e3f6a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", true},
		{"every allowed character", "A-z_0.9:x", true},
		{"64 characters kept", strings.Repeat("a", 64), true},
		{"none", "", false},
		{"65 characters replaced", strings.Repeat("a", 65), false},
		{"a space replaced", "a b", false},
		{"a line break replaced", "a\nrequest_id=forged", false},
		{"non-ASCII replaced", "é", false},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := s.get(t, "/api/v1/demo/task/404", tc.in)
			id := rec.Header().Get(httpapi.RequestIDHeader)
			if tc.keep && id != tc.in {
				t.Errorf("X-Request-Id = %q, want %q echoed", id, tc.in)
			}
			if !tc.keep && (id == tc.in || !httpapi.ValidRequestID(id) || len(id) != 32 || seen[id]) {
				t.Errorf("X-Request-Id = %q, want a new valid id", id)
			}
			seen[id] = true
			var env struct {
				Ext map[string]string `json:"ext"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
				t.Fatal(err)
			}
			if rec.Code != http.StatusNotFound || env.Ext["eKey"] != httpapi.KeyNotFound || env.Ext["requestId"] != id {
				t.Errorf("%d ext %v, want 404 with requestId %q", rec.Code, env.Ext, id)
			}
		})
	}
	// Every answer has one, success included (not in its envelope).
	if rec := s.get(t, "/api/v1/demo/task/7", ""); rec.Code != 200 || !httpapi.ValidRequestID(rec.Header().Get(httpapi.RequestIDHeader)) {
		t.Errorf("success: %d X-Request-Id %q", rec.Code, rec.Header().Get(httpapi.RequestIDHeader))
	}
	// Answers without an operation too.
	if rec := s.get(t, "/api/v1/nowhere", "route-1"); rec.Header().Get(httpapi.RequestIDHeader) != "route-1" || !strings.Contains(rec.Body.String(), `"requestId":"route-1"`) {
		t.Errorf("unknown route: X-Request-Id %q body %s", rec.Header().Get(httpapi.RequestIDHeader), rec.Body)
	}
}

func TestRequestIDInLog(t *testing.T) {
	s := newTelemetrySetup(t)
	rec := s.get(t, "/api/v1/demo/task/500", "")
	id := rec.Header().Get(httpapi.RequestIDHeader)
	if rec.Code != http.StatusInternalServerError || id == "" {
		t.Fatalf("%d X-Request-Id %q", rec.Code, id)
	}
	var line map[string]any
	if err := json.Unmarshal(s.logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", s.logs, err)
	}
	if line["msg"] != "unexpected error" || line["request_id"] != id {
		t.Errorf("log line %v, want the unexpected error with request_id %q", line, id)
	}
	if !strings.Contains(rec.Body.String(), `"requestId":"`+id+`"`) {
		t.Errorf("body %s lacks requestId %q", rec.Body, id)
	}
}

// A host that wraps its handler with RequestIDs logs under the id the
// Server inside uses: one id per request, in the header, the envelope and
// the host's own context.
func TestRequestIDsOutside(t *testing.T) {
	s := newTelemetrySetup(t)
	var hostSaw string
	h := httpapi.RequestIDs(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostSaw = deskkit.RequestID(r.Context())
		s.api.ServeHTTP(w, r)
	}))
	for _, in := range []string{"outer-1", "not valid!"} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/demo/task/404", nil)
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set(httpapi.RequestIDHeader, in)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		ids := rec.Header().Values(httpapi.RequestIDHeader)
		if len(ids) != 1 || ids[0] != hostSaw || !httpapi.ValidRequestID(hostSaw) || (in == "outer-1") != (hostSaw == in) {
			t.Errorf("in %q: X-Request-Id %q, the host saw %q", in, ids, hostSaw)
		}
		if !strings.Contains(rec.Body.String(), `"requestId":"`+hostSaw+`"`) {
			t.Errorf("in %q: body %s lacks requestId %q", in, rec.Body, hostSaw)
		}
	}
}
