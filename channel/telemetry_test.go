package channel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// collected is what a ManualReader holds: the sums and the histograms'
// counts, by "scope name {k=v,...}".
func collected(t *testing.T, reader *sdkmetric.ManualReader) (map[string]int64, map[string]uint64, map[string]float64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	sums, hists, gauges := map[string]int64{}, map[string]uint64{}, map[string]float64{}
	key := func(scope, name string, s attribute.Set) string {
		return scope + " " + name + " {" + s.Encoded(attribute.DefaultEncoder()) + "}"
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					sums[key(sm.Scope.Name, m.Name, dp.Attributes)] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					hists[key(sm.Scope.Name, m.Name, dp.Attributes)] += dp.Count
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					gauges[key(sm.Scope.Name, m.Name, dp.Attributes)] = float64(dp.Value)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					gauges[key(sm.Scope.Name, m.Name, dp.Attributes)] = dp.Value
				}
			}
		}
	}
	return sums, hists, gauges
}

const (
	scopeChannel = "github.com/deskkit/deskkit/channel"
	scopeOutbox  = "github.com/deskkit/deskkit/internal/outbox"
)

// Publishes count by type (a second publish of one id does not); the
// worker's attempts count by channel type and result, with their duration
// and a span each.
func TestTelemetry(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		f := newEvFixture(t, db, channel.Config{MeterProvider: mp, TracerProvider: tp})
		f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)

		ev := newEvent("task.trashed")
		f.publish(t, 10, ev)
		f.publish(t, 10, ev) // the same id: not published again
		f.publish(t, 10, newEvent("task.restored"))
		if n := f.run(t); n != 2 {
			t.Fatalf("claimed %d, want 2", n)
		}
		f.recv.answer(http.StatusInternalServerError, "{}")
		f.publish(t, 10, newEvent("task.trashed"))
		if n := f.run(t); n != 1 {
			t.Fatalf("claimed %d, want 1", n)
		}

		sums, hists, _ := collected(t, reader)
		want := map[string]int64{
			scopeChannel + " deskkit.events.published {deskkit.event.type=task.trashed}":                2,
			scopeChannel + " deskkit.events.published {deskkit.event.type=task.restored}":               1,
			scopeOutbox + " deskkit.deliveries {deskkit.channel.type=WEBHOOK,deskkit.result=succeeded}": 2,
			scopeOutbox + " deskkit.deliveries {deskkit.channel.type=WEBHOOK,deskkit.result=retrying}":  1,
		}
		if diff := cmp.Diff(want, sums); diff != "" {
			t.Errorf("sums (-want +got):\n%s", diff)
		}
		wantHists := map[string]uint64{
			scopeOutbox + " deskkit.delivery.duration {deskkit.channel.type=WEBHOOK,deskkit.result=succeeded}": 2,
			scopeOutbox + " deskkit.delivery.in_flight_limit {deskkit.channel.type=WEBHOOK}":                   2,
			scopeOutbox + " deskkit.delivery.duration {deskkit.channel.type=WEBHOOK,deskkit.result=retrying}":  1,
		}
		if diff := cmp.Diff(wantHists, hists); diff != "" {
			t.Errorf("histograms (-want +got):\n%s", diff)
		}

		var deliver []string
		published := 0
		for _, s := range spans.Ended() {
			switch s.Name() {
			case "channel.deliver":
				attrs := attribute.NewSet(s.Attributes()...)
				typ, _ := attrs.Value("deskkit.event.type")
				ct, _ := attrs.Value("deskkit.channel.type")
				res, _ := attrs.Value("deskkit.result")
				deliver = append(deliver, typ.AsString()+" "+ct.AsString()+" "+res.AsString()+" "+s.Status().Code.String())
			case "channel.Publish":
				published++
			}
		}
		wantDeliver := []string{"task.trashed WEBHOOK succeeded Unset", "task.restored WEBHOOK succeeded Unset", "task.trashed WEBHOOK retrying Error"}
		if diff := cmp.Diff(wantDeliver, deliver, sortStrings); diff != "" {
			t.Errorf("channel.deliver spans (-want +got):\n%s", diff)
		}
		if published != 4 {
			t.Errorf("%d channel.Publish spans, want 4", published)
		}
	})
}

// Run registers the outbox's gauges while it runs, and unregisters them
// when it returns. (What they read is tested in package outbox.)
func TestOutboxGaugesWhileRunning(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		f := newEvFixture(t, db, channel.Config{MeterProvider: mp})
		// A receiver that reads the gauges while Run makes its attempt.
		seen := make(chan map[string]float64, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _, g := collected(t, reader)
			select {
			case seen <- g:
			default:
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		f.add(t, f.ann, "WEBHOOK", "hook", srv.URL+"/hook", nil)
		f.publish(t, 10, newEvent("task.trashed"))

		if _, _, g := collected(t, reader); len(g) != 0 {
			t.Errorf("gauges before Run: %v", g)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.r.Run(ctx) }()
		var g map[string]float64
		select {
		case g = <-seen:
		case <-time.After(30 * time.Second):
			t.Fatal("Run made no attempt")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// The delivery under its attempt is PENDING, and leased, so not due.
		want := map[string]float64{
			scopeOutbox + " deskkit.outbox.depth {}":          1,
			scopeOutbox + " deskkit.outbox.oldest_due_age {}": 0,
		}
		if diff := cmp.Diff(want, g); diff != "" {
			t.Errorf("gauges during Run (-want +got):\n%s", diff)
		}
		if _, _, g := collected(t, reader); len(g) != 0 {
			t.Errorf("gauges after Run: %v", g)
		}
	})
}

var sortStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })
