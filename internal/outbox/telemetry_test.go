package outbox

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// metrics returns the reader's points by "name {attributes}": sums and
// gauges their value, histograms their count.
func metrics(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			key := func(s attribute.Set) string { return m.Name + " {" + s.Encoded(attribute.DefaultEncoder()) + "}" }
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] += float64(dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] += float64(dp.Count)
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] = float64(dp.Value)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					out[key(dp.Attributes)] = dp.Value
				}
			}
		}
	}
	return out
}

// The gauges read the pending deliveries and the oldest due one's wait;
// unregistered, they read nothing.
func TestGauges(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		reg, err := RegisterGauges(db, mp, clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		empty := map[string]float64{"deskkit.outbox.depth {}": 0, "deskkit.outbox.oldest_due_age {}": 0}
		if diff := cmp.Diff(empty, metrics(t, reader)); diff != "" {
			t.Errorf("empty outbox (-want +got):\n%s", diff)
		}
		enqueue(t, db, event("e1"), t0, 1, 2)               // due at t0
		enqueue(t, db, event("e2"), t0.Add(time.Minute), 3) // due a minute later
		clock.Advance(90 * time.Second)
		want := map[string]float64{"deskkit.outbox.depth {}": 3, "deskkit.outbox.oldest_due_age {}": 90}
		if diff := cmp.Diff(want, metrics(t, reader)); diff != "" {
			t.Errorf("three pending (-want +got):\n%s", diff)
		}
		// Delivered, they leave the gauges.
		w := newWorker(t, db, newScript(), clock)
		if n := runOnce(t, w); n != 3 {
			t.Fatalf("claimed %d", n)
		}
		got := metrics(t, reader)
		if got["deskkit.outbox.depth {}"] != 0 || got["deskkit.outbox.oldest_due_age {}"] != 0 {
			t.Errorf("after delivery: %v", got)
		}
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
		if got := metrics(t, reader); len(got) != 0 {
			t.Errorf("unregistered: %v", got)
		}
	})
}

// Every attempt counts by kind (or the outcome's label) and result, with
// its duration and a span.
func TestAttemptTelemetry(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		reader := sdkmetric.NewManualReader()
		spans := tracetest.NewSpanRecorder()
		s := newScript()
		s.outcomes[1] = Outcome{Error: deskkit.Plain("refused"), StatusCode: 500, Label: "WEBHOOK"}
		s.outcomes[2] = Outcome{Error: deskkit.Plain("gone"), Final: true}
		w, err := NewWorker(db, Config{
			Kind: "test", Handler: s, Lease: 30 * time.Second, Schedule: []time.Duration{0, time.Second, time.Minute},
			Now: clock.Now, Rand: func() float64 { return 0.5 },
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
			SpanName:       "test.deliver",
		})
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, event("e1"), t0)
		runOnce(t, w) // attempt 1: retrying
		clock.Advance(time.Second)
		runOnce(t, w) // attempt 2: final
		s.mu.Lock()
		clear(s.outcomes)
		s.mu.Unlock()
		enqueue(t, db, event("e2"), clock.Now())
		runOnce(t, w) // succeeded
		want := map[string]float64{
			"deskkit.deliveries {deskkit.channel.type=WEBHOOK,deskkit.result=retrying}":        1,
			"deskkit.deliveries {deskkit.channel.type=test,deskkit.result=failed}":             1,
			"deskkit.deliveries {deskkit.channel.type=test,deskkit.result=succeeded}":          1,
			"deskkit.delivery.duration {deskkit.channel.type=WEBHOOK,deskkit.result=retrying}": 1,
			"deskkit.delivery.duration {deskkit.channel.type=test,deskkit.result=failed}":      1,
			"deskkit.delivery.duration {deskkit.channel.type=test,deskkit.result=succeeded}":   1,
			// One limit per flush of a target's outcomes, by the channel
			// type of the flush's first outcome of it.
			"deskkit.delivery.in_flight_limit {deskkit.channel.type=WEBHOOK}": 1,
			"deskkit.delivery.in_flight_limit {deskkit.channel.type=test}":    2,
		}
		if diff := cmp.Diff(want, metrics(t, reader)); diff != "" {
			t.Errorf("metrics (-want +got):\n%s", diff)
		}
		var got []string
		for _, sp := range spans.Ended() {
			a := attribute.NewSet(sp.Attributes()...)
			res, _ := a.Value("deskkit.result")
			typ, _ := a.Value("deskkit.event.type")
			got = append(got, sp.Name()+" "+typ.AsString()+" "+res.AsString()+" "+sp.Status().Code.String())
		}
		wantSpans := []string{"test.deliver task.trashed retrying Error", "test.deliver task.trashed failed Error", "test.deliver task.trashed succeeded Unset"}
		if diff := cmp.Diff(wantSpans, got); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
	})
}
