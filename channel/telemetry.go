package channel

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/deskkit/deskkit/internal/telemetry"
)

// scope is the instrumentation scope of the registry's meter and tracer.
const scope = "github.com/deskkit/deskkit/channel"

// newTelemetry is the registry's instruments: a span per operation, and
// the counter of events published by type. The worker's attempts are
// recorded by the outbox (deskkit.deliveries, deskkit.delivery.duration).
func newTelemetry(c Config) (telemetry.Ops, metric.Int64Counter) {
	m := telemetry.Meter(c.MeterProvider, scope)
	ops := telemetry.Ops{
		Tracer: telemetry.Tracer(c.TracerProvider, scope),
		Own: []telemetry.Key{
			{Err: ErrNameTaken, Name: "channel_name_taken"},
			{Err: ErrQuotaExceeded, Name: "channel_quota_exceeded"},
			{Err: ErrChannelDisabled, Name: "channel_disabled"},
			{Err: ErrAddressBlocked, Name: "channel_address_blocked"},
			{Err: ErrDeliveryFailed, Name: "channel_test_failed"},
		},
	}
	published := telemetry.Counter(m, "deskkit.events.published", "{event}",
		"Events published (new ones; a publish of an id the tenant already published is not counted), by type. Counted when Publish returns, inside the caller's transaction, which may still roll back.")
	return ops, published
}
