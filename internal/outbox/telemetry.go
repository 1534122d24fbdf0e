package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit/internal/telemetry"
)

// scope is the instrumentation scope of the outbox's meter and tracer.
const scope = "github.com/deskkit/deskkit/internal/outbox"

// Results of an attempt in metrics and spans.
const (
	ResultSucceeded = "succeeded" // the far end took it
	ResultFailed    = "failed"    // the delivery ends FAILED
	ResultRetrying  = "retrying"  // failed; the schedule tries again
)

// status is the delivery's status after the attempt whose outcome is o.
func (w *Worker) status(d Delivery, o Outcome) string {
	switch {
	case o.OK:
		return Succeeded
	case o.Final || d.step+1 >= len(w.cfg.Schedule):
		return Failed
	}
	return Pending
}

// attemptTelemetry records the attempts of a worker.
type attemptTelemetry struct {
	tracer     trace.Tracer
	deliveries metric.Int64Counter
	duration   metric.Float64Histogram
	limits     metric.Float64Histogram
}

func newAttemptTelemetry(c Config) attemptTelemetry {
	m := telemetry.Meter(c.MeterProvider, scope)
	return attemptTelemetry{
		tracer: telemetry.Tracer(c.TracerProvider, scope),
		deliveries: telemetry.Counter(m, "deskkit.deliveries", "{delivery}",
			"Delivery attempts of the outbox, by channel type (verify.notice for notices to old addresses) and result (succeeded, failed, retrying)."),
		duration: telemetry.Seconds(m, "deskkit.delivery.duration",
			"Duration of delivery attempts, from the send to the far end's answer, by channel type and result."),
		limits: telemetry.Histogram(m, "deskkit.delivery.in_flight_limit", "{delivery}",
			"In-flight limit of each target (a channel) after each flush of its outcomes, by channel type: how many of its deliveries may be in flight at once, between the floor and the ceiling."),
	}
}

// limit records a target's in-flight limit after a flush, label its
// channel type.
func (t attemptTelemetry) limit(ctx context.Context, label string, v float64) {
	if t.limits.Enabled(ctx) {
		t.limits.Record(ctx, v, metric.WithAttributes(telemetry.ChannelType.String(label)))
	}
}

// start starts the span of one attempt of d.
func (t attemptTelemetry) start(ctx context.Context, name string, d Delivery) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithAttributes(
		telemetry.EventType.String(d.Event.Type),
		attribute.Int64("deskkit.delivery.id", d.ID),
		attribute.Int("deskkit.delivery.attempt", d.Attempt)))
}

// end records one attempt of d, whose outcome o left the delivery in
// status, and which took took, and ends its span.
func (t attemptTelemetry) end(ctx context.Context, span trace.Span, d Delivery, o Outcome, status string, took time.Duration) {
	label := o.Label
	if label == "" {
		label = d.Kind
	}
	result := ResultRetrying
	switch status {
	case Succeeded:
		result = ResultSucceeded
	case Failed:
		result = ResultFailed
	}
	if t.deliveries.Enabled(ctx) || t.duration.Enabled(ctx) {
		attrs := metric.WithAttributes(telemetry.ChannelType.String(label), telemetry.Result.String(result))
		t.deliveries.Add(ctx, 1, attrs)
		t.duration.Record(ctx, took.Seconds(), attrs)
	}
	if span.IsRecording() {
		span.SetAttributes(telemetry.ChannelType.String(label), telemetry.Result.String(result))
		if o.StatusCode != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", o.StatusCode))
		}
		if !o.OK {
			// Not the outcome's error: a notice's may name an address.
			span.SetStatus(codes.Error, result)
		}
	}
	span.End()
}

// GaugeTimeout bounds the query of one collection of the outbox's gauges.
const GaugeTimeout = 2 * time.Second

// RegisterGauges registers, with mp's meter (the global provider if nil),
// the observable gauges deskkit.outbox.depth (the deliveries PENDING, of
// every kind, those under an attempt included) and
// deskkit.outbox.oldest_due_age (how long the oldest due delivery has
// waited past its due time, 0 when none is due), read by one query over
// the pending deliveries' partial index, within GaugeTimeout, at each
// collection. Unregister the registration when done.
func RegisterGauges(db *bun.DB, mp metric.MeterProvider, now func() time.Time) (metric.Registration, error) {
	m := telemetry.Meter(mp, scope)
	depth, err := m.Int64ObservableGauge("deskkit.outbox.depth", metric.WithUnit("{delivery}"),
		metric.WithDescription("Deliveries of the outbox still PENDING, of every kind (channels' events and verify's notices), those under an attempt included."))
	if err != nil {
		return nil, err
	}
	age, err := m.Float64ObservableGauge("deskkit.outbox.oldest_due_age", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest due PENDING delivery has waited past its due time; 0 when none is due."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, GaugeTimeout)
		defer cancel()
		at := now()
		n, oldest, err := Depth(ctx, db, at)
		if err != nil {
			return fmt.Errorf("outbox: gauges: %w", err)
		}
		o.ObserveInt64(depth, n)
		o.ObserveFloat64(age, oldest.Seconds())
		return nil
	}, depth, age)
}

// Depth returns how many deliveries are PENDING and how long past its due
// time the oldest one due at now has waited (0 if none is due).
func Depth(ctx context.Context, db bun.IDB, now time.Time) (int64, time.Duration, error) {
	ms := now.UnixMilli()
	var out []struct {
		N      int64  `bun:"n"`
		Oldest *int64 `bun:"oldest"`
	}
	err := db.NewRaw(strings.TrimSpace(`
SELECT count(*) AS n, min(CASE WHEN due_at_ms <= ? THEN due_at_ms END) AS oldest
FROM deskkit_outbox_deliveries WHERE status = 'PENDING'`), ms).Scan(ctx, &out)
	if err != nil || len(out) == 0 {
		return 0, 0, err
	}
	var age time.Duration
	if out[0].Oldest != nil {
		age = time.Duration(ms-*out[0].Oldest) * time.Millisecond
	}
	return out[0].N, age, nil
}
