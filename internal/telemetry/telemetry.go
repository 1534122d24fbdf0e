// Package telemetry holds what deskkit's packages share to record metrics
// and spans through the OpenTelemetry API: the providers' defaults, the
// attribute keys, instruments that never fail, the result of an operation
// as an attribute value, and a span's end.
//
// Only the API is imported (go.opentelemetry.io/otel, /metric, /trace):
// the SDK and its exporters are the host's choice. A nil provider means
// the global one (otel.GetMeterProvider, otel.GetTracerProvider), which
// records nothing until the host installs one; deskkit never registers
// anything globally itself.
package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
)

// Attribute keys of deskkit's instruments and spans.
const (
	Operation   = attribute.Key("deskkit.operation")
	Kind        = attribute.Key("deskkit.kind")
	Result      = attribute.Key("deskkit.result")
	Channel     = attribute.Key("deskkit.channel")
	Limit       = attribute.Key("deskkit.limit")
	EventType   = attribute.Key("deskkit.event.type")
	ChannelType = attribute.Key("deskkit.channel.type")
)

// OK is the result of an operation that succeeded.
const OK = "ok"

// Meter is mp's meter of scope (a package's import path); mp nil means the
// global provider.
func Meter(mp metric.MeterProvider, scope string) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(scope)
}

// Tracer is tp's tracer of scope; tp nil means the global provider.
func Tracer(tp trace.TracerProvider, scope string) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(scope)
}

// Counter returns m's Int64Counter name. An instrument the provider
// refuses (it cannot, for deskkit's constant names, but a provider may
// fail) is reported to otel.Handle and replaced by a no-op one: metrics
// never stop a service.
func Counter(m metric.Meter, name, unit, desc string) metric.Int64Counter {
	c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil || c == nil {
		otel.Handle(err)
		return noop.Int64Counter{}
	}
	return c
}

// DurationBuckets are the bucket boundaries, in seconds, of deskkit's
// duration histograms: OpenTelemetry's advice for
// http.server.request.duration.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Seconds returns m's Float64Histogram name, in seconds with
// DurationBuckets, with Counter's fallback.
func Seconds(m metric.Meter, name, desc string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	if err != nil || h == nil {
		otel.Handle(err)
		return noop.Float64Histogram{}
	}
	return h
}

// LimitBuckets are the bucket boundaries of deskkit's histograms of
// in-flight limits: small counts, then doublings.
var LimitBuckets = []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128}

// Histogram returns m's Float64Histogram name, in unit with
// LimitBuckets, with Counter's fallback.
func Histogram(m metric.Meter, name, unit, desc string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(LimitBuckets...))
	if err != nil || h == nil {
		otel.Handle(err)
		return noop.Float64Histogram{}
	}
	return h
}

// Key names the result of a service's own error: Name when errors.Is(err,
// Err).
type Key struct {
	Err  error
	Name string
}

// Result keys of the error classes: the ext.eKey values httpapi answers
// for them, so that a metric's result and a client's error read alike.
const (
	ResultInvalid         = "param_validation_error"
	ResultUnauthenticated = "unauthorized"
	ResultForbidden       = "forbidden"
	ResultNotFound        = "resource_not_found"
	ResultConflict        = "resource_conflict"
	ResultRateLimited     = "too_many_requests"
	ResultUnavailable     = "service_unavailable"
	ResultInternal        = "internal_error"
)

// ResultOf is the result attribute's value for err: OK for nil, the Name
// of the first of own that err matches, else the key of its class
// (ResultInvalid...), ResultUnavailable for a dependency that did not
// answer in time (or a caller that went away), and ResultInternal for
// anything else. The values are few and fixed: never an error's text.
func ResultOf(err error, own ...Key) string {
	if err == nil {
		return OK
	}
	for _, k := range own {
		if errors.Is(err, k.Err) {
			return k.Name
		}
	}
	switch {
	case errors.Is(err, deskkit.ErrInvalid):
		return ResultInvalid
	case errors.Is(err, deskkit.ErrUnauthenticated):
		return ResultUnauthenticated
	case errors.Is(err, deskkit.ErrForbidden):
		return ResultForbidden
	case errors.Is(err, deskkit.ErrNotFound):
		return ResultNotFound
	case errors.Is(err, deskkit.ErrConflict):
		return ResultConflict
	case errors.Is(err, deskkit.ErrRateLimited):
		return ResultRateLimited
	case errors.Is(err, deskkit.ErrUnavailable), errors.Is(err, context.Canceled), database.Unavailable(err):
		return ResultUnavailable
	}
	return ResultInternal
}

// Expected reports whether result is an answer the service gave (a
// refusal, a rate limit) rather than a failure of its own: a span records
// the error itself only for failures.
func Expected(result string) bool {
	return result != ResultInternal && result != ResultUnavailable
}

// End ends span with result as its deskkit.result attribute: status Error
// with result as the description when err is not nil, and err recorded as
// an event when it is a failure rather than a refusal (Expected).
func End(span trace.Span, err error, result string) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(Result.String(result))
	if err != nil {
		span.SetStatus(codes.Error, result)
		if !Expected(result) {
			span.RecordError(err)
		}
	}
	span.End()
}

// Ops spans a service's operations and, with a Counter, counts them by
// operation, kind and result.
type Ops struct {
	Tracer  trace.Tracer
	Counter metric.Int64Counter // nil: spans only
	Own     []Key               // the service's own results (ResultOf)
}

// Call is one operation under way.
type Call struct {
	ops  *Ops
	ctx  context.Context
	span trace.Span
	op   string
	// Kind is the deskkit.kind attribute, once the operation knows it
	// ("" until then, and for operations of no kind).
	Kind string
}

// Start starts the span name (the operation's method, "trash.Restore")
// for operation (the counter's deskkit.operation, "restore"), and returns
// the context to run the operation with.
func (o *Ops) Start(ctx context.Context, name, operation string) (context.Context, *Call) {
	ctx, span := o.Tracer.Start(ctx, name)
	return ctx, &Call{ops: o, ctx: ctx, span: span, op: operation}
}

// End records the operation's outcome and ends its span; it returns the
// result (ResultOf).
func (c *Call) End(err error) string {
	result := ResultOf(err, c.ops.Own...)
	if c.ops.Counter != nil && c.ops.Counter.Enabled(c.ctx) {
		c.ops.Counter.Add(c.ctx, 1, metric.WithAttributes(
			Operation.String(c.op), Kind.String(c.Kind), Result.String(result)))
	}
	if c.Kind != "" && c.span.IsRecording() {
		c.span.SetAttributes(Kind.String(c.Kind))
	}
	End(c.span, err, result)
	return result
}
