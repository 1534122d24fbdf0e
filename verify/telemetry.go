package verify

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"

	"github.com/deskkit/deskkit/internal/limiter"
	"github.com/deskkit/deskkit/internal/telemetry"
)

// Telemetry of the notices, in detail (Config.MeterProvider says the
// contract):
//
// The notices to old addresses share the module's outbox with the
// channels' events: each attempt is a span "verify.notice" (a child of
// the change's span when the change sends it itself) and counts in the
// outbox's deskkit.deliveries and deskkit.delivery.duration (under the
// outbox's instrumentation scope, as the channels' are) with
// deskkit.channel.type verify.notice and deskkit.result succeeded,
// retrying or failed. The outbox's gauges (its depth, its oldest due
// delivery's age) count the notices too; channel.ChannelRegistry.Run
// registers them, not the Verifier's Run.

// scope is the instrumentation scope of the Verifier's meter and tracer.
const scope = "github.com/deskkit/deskkit/verify"

// Names of the rate limits in deskkit.verify.rate_limited's deskkit.limit.
const (
	limitResendInterval   = "resend_interval"     // ResendInterval
	limitPerHour          = "per_hour"            // SendsPerHour
	limitPerAddressPerDay = "per_address_per_day" // SendsPerAddressPerDay
	limitPerDay           = "per_day"             // SendsPerDay
	limitFailuresPerDay   = "failures_per_day"    // FailuresPerDay
)

// instruments are the Verifier's counters.
type instruments struct {
	sent, checked metric.Int64Counter
	rateLimited   metric.Int64Counter
}

func newTelemetry(c Config) (telemetry.Ops, instruments) {
	m := telemetry.Meter(c.MeterProvider, scope)
	ops := telemetry.Ops{
		Tracer: telemetry.Tracer(c.TracerProvider, scope),
		// The keys httpapi answers with, so that a result reads as the
		// client's error does.
		Own: []telemetry.Key{
			{Err: ErrCodeWrong, Name: "verification_code_wrong"},
			{Err: ErrCodeExpired, Name: "verification_code_expired"},
			{Err: ErrCodeMissing, Name: "verification_code_missing"},
			{Err: ErrCodeExhausted, Name: "verification_code_exhausted"},
			{Err: ErrTooManyFailures, Name: "verification_failures_exceeded"},
			{Err: ErrSendThrottled, Name: "verification_send_throttled"},
			{Err: ErrSendFailed, Name: "verification_send_failed"},
			{Err: ErrAddressTaken, Name: "verification_address_taken"},
			{Err: ErrAlreadyBound, Name: "verification_already_bound"},
			{Err: ErrNotBound, Name: "verification_not_bound"},
			{Err: ErrLinkSecret, Name: "link_secret_invalid"},
		},
	}
	return ops, instruments{
		sent: telemetry.Counter(m, "deskkit.verify.codes.sent", "{code}",
			"Requests for verification codes (SendSMS, SendEmail), by channel (sms, email) and result (ok, or the error key the API answers)."),
		checked: telemetry.Counter(m, "deskkit.verify.codes.checked", "{code}",
			"Checks of verification codes (CheckSMS, CheckEmail), by channel (sms, email) and result (ok, or the error key the API answers)."),
		rateLimited: telemetry.Counter(m, "deskkit.verify.rate_limited", "{refusal}",
			"Requests a rate limit refused, by limit (resend_interval, per_hour, per_address_per_day, per_day, failures_per_day)."),
	}
}

// countCode adds a code sent or checked to c, by channel and result;
// without an SDK recording c, it builds no attributes.
func countCode(ctx context.Context, c metric.Int64Counter, channel, result string) {
	if c.Enabled(ctx) {
		c.Add(ctx, 1, metric.WithAttributes(telemetry.Channel.String(channel), telemetry.Result.String(result)))
	}
}

// noteRefusal counts err if a rate limit refused (a *limiter.Refusal).
func (v *Verifier) noteRefusal(ctx context.Context, err error) {
	var r *limiter.Refusal
	if errors.As(err, &r) && r.Limit != "" && v.tel.rateLimited.Enabled(ctx) {
		v.tel.rateLimited.Add(ctx, 1, metric.WithAttributes(telemetry.Limit.String(r.Limit)))
	}
}
