package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// BenchmarkMetricsCost measures what metrics cost a request: the demo
// user's trash search (20 entries) through the server's handler, once by
// an app built with metrics off (a no-op MeterProvider, the global one
// no-op too) and once by an app built as serve builds it with
// -metrics-addr (an SDK MeterProvider with the Prometheus exporter as its
// reader, made the global one before the services are built), over the
// same database. The requests alternate between the two, so that drift
// (the page cache, GC, the other processes of the machine) falls on both
// alike. It reports each side's median ns/request and on/off, the median
// ratio of a pair of requests, which issue 14 bounds at 1.05.
func BenchmarkMetricsCost(b *testing.B) {
	for _, backend := range []dbtest.Backend{dbtest.SQLite, dbtest.Postgres} {
		b.Run(string(backend), func(b *testing.B) { benchMetricsCost(b, backend) })
	}
}

func benchMetricsCost(b *testing.B, backend dbtest.Backend) {
	db := dbtest.Open(b, backend)
	ctx := context.Background()
	if err := migrateAll(ctx, db); err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)

	// Off: what a library instrument takes from the global provider is a
	// no-op while this app is built.
	offMP := metricnoop.NewMeterProvider()
	restore := setGlobals(offMP, nil, logger)
	off, err := newApp(db, appConfig{Logger: logger, MeterProvider: offMP})
	restore()
	if err != nil {
		b.Fatal(err)
	}

	// On: as startTelemetry does.
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		b.Fatal(err)
	}
	onMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	b.Cleanup(func() { onMP.Shutdown(context.Background()) }) //nolint:errcheck // nothing to flush to
	b.Cleanup(setGlobals(onMP, nil, logger))
	on, err := newApp(db, appConfig{Logger: logger, MeterProvider: onMP})
	if err != nil {
		b.Fatal(err)
	}

	token, err := off.demoToken(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		var c struct{ ID int64 }
		body := fmt.Sprintf(`{"projectId":1,"name":"bench %d"}`, i)
		if err := benchCallInto(off, token, http.MethodPost, "/api/v1/demo/task", body, &c); err != nil {
			b.Fatal(err)
		}
		if err := benchCall(off, 0, token, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", c.ID), ""); err != nil {
			b.Fatal(err)
		}
	}
	const target = "/api/v1/task/trash/search?targetType=TASK&pageSize=20"
	apps := [2]*app{off, on}
	for range 20 { // warm both: the pool, the statement caches
		for _, a := range apps {
			if err := benchCall(a, 0, token, http.MethodGet, target, ""); err != nil {
				b.Fatal(err)
			}
		}
	}

	// Requests go in pairs, one of each side, the first side taking turns;
	// each request is timed alone. Reported are each side's median and
	// the median of the pairs' ratios: a load that comes and goes on a
	// shared machine falls on both requests of a pair, and medians let
	// the pauses it causes pass.
	var took [2][]time.Duration
	var ratios []float64
	pair := [2]time.Duration{}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		side := i % 2
		if (i/2)%2 == 1 {
			side = 1 - side
		}
		i++
		start := time.Now()
		err := benchCall(apps[side], 0, token, http.MethodGet, target, "")
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		took[side] = append(took[side], d)
		pair[side] = d
		if i%2 == 0 {
			ratios = append(ratios, float64(pair[1])/float64(pair[0]))
		}
	}
	if len(ratios) == 0 {
		return
	}
	b.ReportMetric(median(took[0]), "ns/req-off")
	b.ReportMetric(median(took[1]), "ns/req-on")
	b.ReportMetric(medianOf(ratios), "on/off")

	// The on side was on: its reader has the pool's instruments.
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	found := false
	for _, f := range families {
		found = found || f.GetName() == "db_client_connection_max"
	}
	if !found {
		b.Fatal("the metrics-on app's registry has no db_client_connection_max")
	}
}

// benchCallInto is benchCall that decodes the answer's data into out.
func benchCallInto(a *app, token, method, target, body string, out any) error {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	var env struct {
		Code string
		Data json.RawMessage
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != http.StatusOK || env.Code != "S" {
		return fmt.Errorf("%s %s: %d %s", method, target, rec.Code, rec.Body.String())
	}
	return json.Unmarshal(env.Data, out)
}

// median is the median of d in nanoseconds.
func median(d []time.Duration) float64 {
	f := make([]float64, len(d))
	for i, v := range d {
		f[i] = float64(v)
	}
	return medianOf(f)
}

// medianOf is the median of f; it sorts f.
func medianOf(f []float64) float64 {
	slices.Sort(f)
	if len(f)%2 == 1 {
		return f[len(f)/2]
	}
	return (f[len(f)/2-1] + f[len(f)/2]) / 2
}
