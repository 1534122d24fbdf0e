package telemetry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deskkit/deskkit"
)

func TestResultOf(t *testing.T) {
	errOwn := deskkit.NewError(deskkit.ErrInvalid, "code wrong", "the code is wrong")
	own := []Key{{Err: errOwn, Name: "verification_code_wrong"}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, OK},
		{fmt.Errorf("check: %w", errOwn), "verification_code_wrong"}, // above its class
		{deskkit.Invalid("name", "is required"), ResultInvalid},
		{context.Canceled, ResultUnavailable},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), ResultUnavailable},
		{errors.New("boom"), ResultInternal},
	} {
		if got := ResultOf(tc.err, own...); got != tc.want {
			t.Errorf("ResultOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A refusal sets the span's status; only a failure records the error
// (its text may say more than a refusal's key).
func TestEnd(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t")
	ops := &Ops{Tracer: tr}
	for _, err := range []error{nil, deskkit.ErrNotFound, errors.New("boom")} {
		_, call := ops.Start(context.Background(), "op", "op")
		call.Kind = "task"
		call.End(err)
	}
	type got struct {
		Status codes.Code
		Desc   string
		Events int
	}
	var spans []got
	for _, s := range rec.Ended() {
		spans = append(spans, got{s.Status().Code, s.Status().Description, len(s.Events())})
	}
	want := []got{{codes.Unset, "", 0}, {codes.Error, ResultNotFound, 0}, {codes.Error, ResultInternal, 1}}
	if len(spans) != len(want) {
		t.Fatalf("%d spans", len(spans))
	}
	for i := range want {
		if spans[i] != want[i] {
			t.Errorf("span %d = %+v, want %+v", i, spans[i], want[i])
		}
	}
}
