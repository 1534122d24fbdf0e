package trash_test

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
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// counts returns the points of the Int64 sum name that reader holds, by
// their attributes written k=v,k=v in key order.
func counts(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if sm.Scope.Name != "github.com/deskkit/deskkit/trash" {
				t.Errorf("%s in scope %q", name, sm.Scope.Name)
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				out[dp.Attributes.Encoded(attribute.DefaultEncoder())] += dp.Value
			}
		}
	}
	return out
}

func TestTelemetry(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		f := setup(t, db, &trash.Config{MeterProvider: mp, TracerProvider: tp})
		ctx := context.Background()

		task := f.add(t, alice, trash.NewEntry{TargetType: trash.TargetTask, TargetID: 10, TargetName: "t"})
		sprint := f.add(t, alice, trash.NewEntry{TargetType: trash.TargetSprint, TargetID: 20, TargetName: "s"})
		if err := f.trash.Restore(ctx, alice, task.ID); err != nil {
			t.Fatal(err)
		}
		if err := f.trash.Restore(ctx, alice, task.ID); err == nil {
			t.Fatal("restored twice")
		}
		if err := f.trash.Clear(ctx, bob, sprint.ID); err == nil {
			t.Fatal("bob cleared alice's sprint")
		}
		if _, err := f.trash.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask, ProjectID: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.trash.Count(ctx, alice, 0); err == nil {
			t.Fatal("counted project 0")
		}
		if _, err := f.trash.ClearAll(ctx, admin, 1); err != nil {
			t.Fatal(err)
		}

		want := map[string]int64{
			"deskkit.kind=task,deskkit.operation=add,deskkit.result=ok":                   1,
			"deskkit.kind=sprint,deskkit.operation=add,deskkit.result=ok":                 1,
			"deskkit.kind=task,deskkit.operation=restore,deskkit.result=ok":               1,
			"deskkit.kind=,deskkit.operation=restore,deskkit.result=resource_not_found":   1,
			"deskkit.kind=sprint,deskkit.operation=clear,deskkit.result=forbidden":        1,
			"deskkit.kind=task,deskkit.operation=search,deskkit.result=ok":                1,
			"deskkit.kind=,deskkit.operation=count,deskkit.result=param_validation_error": 1,
			"deskkit.kind=,deskkit.operation=clear_project,deskkit.result=ok":             1,
		}
		if diff := cmp.Diff(want, counts(t, reader, "deskkit.trash.operations")); diff != "" {
			t.Errorf("deskkit.trash.operations (-want +got):\n%s", diff)
		}

		type span struct {
			Name, Result string
			Status       codes.Code
		}
		var got []span
		for _, s := range spans.Ended() {
			sp := span{Name: s.Name(), Status: s.Status().Code}
			for _, kv := range s.Attributes() {
				if kv.Key == "deskkit.result" {
					sp.Result = kv.Value.AsString()
				}
			}
			if s.InstrumentationScope().Name != "github.com/deskkit/deskkit/trash" {
				t.Errorf("span %s in scope %q", s.Name(), s.InstrumentationScope().Name)
			}
			got = append(got, sp)
		}
		wantSpans := []span{
			{"trash.Add", "ok", codes.Unset},
			{"trash.Add", "ok", codes.Unset},
			{"trash.Restore", "ok", codes.Unset},
			{"trash.Restore", "resource_not_found", codes.Error},
			{"trash.Clear", "forbidden", codes.Error},
			{"trash.Search", "ok", codes.Unset},
			{"trash.Count", "param_validation_error", codes.Error},
			{"trash.ClearAll", "ok", codes.Unset},
		}
		if diff := cmp.Diff(wantSpans, got); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
	})
}

// The trash's span is the parent of what the host does in its hooks: the
// Restorer gets the span's context.
func TestTelemetrySpanParent(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	f := setup(t, db, &trash.Config{TracerProvider: tp})
	e := f.add(t, alice, trash.NewEntry{TargetType: trash.TargetTask, TargetID: 10, TargetName: "t"})
	var hookParent string
	r := &ctxRestorer{fn: func(ctx context.Context) {
		hookParent = spanID(ctx)
	}}
	tr, err := trash.New(db, r, &trash.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Restore(context.Background(), alice, e.ID); err != nil {
		t.Fatal(err)
	}
	ended := spans.Ended()
	last := ended[len(ended)-1]
	if last.Name() != "trash.Restore" || hookParent != last.SpanContext().SpanID().String() {
		t.Errorf("the Restorer ran under span %s; trash.Restore is %s (%s)", hookParent, last.SpanContext().SpanID(), last.Name())
	}
}

type ctxRestorer struct{ fn func(ctx context.Context) }

func (r *ctxRestorer) Restore(ctx context.Context, _ bun.Tx, _ trash.Entry) error {
	r.fn(ctx)
	return nil
}

func (r *ctxRestorer) Purge(ctx context.Context, _ bun.Tx, _ trash.Entry) error {
	r.fn(ctx)
	return nil
}

var _ trash.Restorer = (*ctxRestorer)(nil)

func spanID(ctx context.Context) string {
	return trace.SpanFromContext(ctx).SpanContext().SpanID().String()
}
