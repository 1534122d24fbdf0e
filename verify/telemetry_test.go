package verify_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
)

// sums returns the reader's Int64 sums by "scope name {attributes}".
func sums(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range d.DataPoints {
					out[sm.Scope.Name+" "+m.Name+" {"+dp.Attributes.Encoded(attribute.DefaultEncoder())+"}"] += dp.Value
				}
			}
		}
	}
	return out
}

type recorders struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	cfg    *verify.Config
}

func newRecorders(cfg verify.Config) recorders {
	r := recorders{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	cfg.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	r.cfg = &cfg
	return r
}

// spanResults lists the ended spans as "name result status".
func (r recorders) spanResults() []string {
	var out []string
	for _, s := range r.spans.Ended() {
		a := attribute.NewSet(s.Attributes()...)
		res, _ := a.Value("deskkit.result")
		out = append(out, s.Name()+" "+res.AsString()+" "+s.Status().Code.String())
	}
	return out
}

const scopeVerify = "github.com/deskkit/deskkit/verify"

// Codes sent and checked count by channel and result, refusals of rate
// limits by limit, and every operation has a span.
func TestTelemetry(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		rec := newRecorders(verify.Config{FailuresPerDay: 1})
		f := setup(t, db, rec.cfg)
		ctx := context.Background()

		f.sendSMS(t, f.ann, "SIGNIN", annMobile)
		if _, err := f.v.SendSMS(ctx, f.ann, verify.SMSSend{BizKey: "SIGNIN", Mobile: annMobile, Country: "CN"}); err == nil {
			t.Fatal("sent twice within the resend interval")
		}
		code := f.sink.LastCode(annMobile)
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, wrong(code)); err == nil {
			t.Fatal("a wrong code passed")
		}
		if _, err := f.checkSMS(f.ann, "SIGNIN", annMobile, code); err == nil {
			t.Fatal("a check passed after the day's failures")
		}
		bobCode := f.sendSMS(t, f.bob, "SIGNIN", bobMobile)
		if _, err := f.checkSMS(f.bob, "SIGNIN", bobMobile, bobCode); err != nil {
			t.Fatal(err)
		}

		want := map[string]int64{
			scopeVerify + " deskkit.verify.codes.sent {deskkit.channel=sms,deskkit.result=ok}":                                2,
			scopeVerify + " deskkit.verify.codes.sent {deskkit.channel=sms,deskkit.result=too_many_requests}":                 1,
			scopeVerify + " deskkit.verify.codes.checked {deskkit.channel=sms,deskkit.result=verification_code_wrong}":        1,
			scopeVerify + " deskkit.verify.codes.checked {deskkit.channel=sms,deskkit.result=verification_failures_exceeded}": 1,
			scopeVerify + " deskkit.verify.codes.checked {deskkit.channel=sms,deskkit.result=ok}":                             1,
			scopeVerify + " deskkit.verify.rate_limited {deskkit.limit=resend_interval}":                                      1,
			scopeVerify + " deskkit.verify.rate_limited {deskkit.limit=failures_per_day}":                                     1,
		}
		if diff := cmp.Diff(want, sums(t, rec.reader)); diff != "" {
			t.Errorf("sums (-want +got):\n%s", diff)
		}
		wantSpans := []string{
			"verify.SendSMS ok Unset",
			"verify.SendSMS too_many_requests Error",
			"verify.CheckSMS verification_code_wrong Error",
			"verify.CheckSMS verification_failures_exceeded Error",
			"verify.SendSMS ok Unset",
			"verify.CheckSMS ok Unset",
		}
		if diff := cmp.Diff(wantSpans, rec.spanResults()); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
	})
}

// A notice to the old address is a delivery of the outbox: it counts
// under deskkit.deliveries as verify.notice, with its span.
func TestTelemetryNotice(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		rec := newRecorders(verify.Config{})
		f := setup(t, db, rec.cfg)
		f.changeMobile(t, f.v, annMobile, newMobile)
		got := sums(t, rec.reader)
		key := "github.com/deskkit/deskkit/internal/outbox deskkit.deliveries {deskkit.channel.type=verify.notice,deskkit.result=succeeded}"
		if got[key] != 1 {
			t.Errorf("%s = %d, want 1; all: %v", key, got[key], got)
		}
		// Sent by the change itself (no Run runs), under its span.
		var change, notice sdktrace.ReadOnlySpan
		for _, sp := range rec.spans.Ended() {
			switch sp.Name() {
			case "verify.ChangeMobile":
				change = sp
			case "verify.notice":
				notice = sp
			}
		}
		if change == nil || notice == nil {
			t.Fatalf("spans %v lack verify.ChangeMobile or verify.notice", rec.spanResults())
		}
		if notice.Parent().SpanID() != change.SpanContext().SpanID() || notice.Status().Code != codes.Unset {
			t.Errorf("verify.notice: parent %s status %s; verify.ChangeMobile is %s", notice.Parent().SpanID(), notice.Status().Code, change.SpanContext().SpanID())
		}
	})
}
