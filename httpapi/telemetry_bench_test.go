package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/trash"
)

// BenchmarkMetricsCost measures what recording metrics costs a request:
// the same request to a server whose MeterProvider is a no-op and to one
// whose is the SDK's (with a ManualReader, collected now and then as a
// scrape would), the trash under each counting its operations into the
// same provider, interleaved so that both see the same machine. It
// reports each one's mean time per request and sdk/noop, the median
// ratio of blocks of 50 requests each (the goal is at most 1.05). Tracing
// is off in both (the global no-op provider).
//
//	go test ./httpapi -run '^$' -bench MetricsCost -benchtime 20000x
//
// Two requests: a trash search of a 200-entry SQLite trash (what the API
// does), and a host route that does nothing (the worst case: all that is
// left is the server's own work).
func BenchmarkMetricsCost(b *testing.B) {
	db, err := openSQLite(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	if err := trash.Migrate(ctx, db); err != nil {
		b.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	b.Cleanup(func() { _ = sdk.Shutdown(ctx) })
	noop := metricnoop.NewMeterProvider()
	// The same trash, counting its operations into mp.
	newTrash := func(mp metric.MeterProvider) *trash.Trash {
		tr, err := trash.New(db, noHost{}, &trash.Config{MeterProvider: mp})
		if err != nil {
			b.Fatal(err)
		}
		return tr
	}
	tr := newTrash(noop)
	p := deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}
	for i := range 200 {
		_, err := tr.Add(ctx, db, p, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: int64(i + 1), TargetName: "Task design", CreatedBy: 1})
		if err != nil {
			b.Fatal(err)
		}
	}
	server := func(mp metric.MeterProvider) *httpapi.Server {
		api, err := httpapi.New(&httpapi.Config{Authenticator: bearer{"t": p}, Trash: newTrash(mp), MeterProvider: mp})
		if err != nil {
			b.Fatal(err)
		}
		api.Handle(http.MethodGet, "/demo/task/{id}", func(*http.Request, deskkit.Principal) (any, error) { return nil, nil })
		return api
	}
	noopAPI, sdkAPI := server(noop), server(sdk)
	for _, bc := range []struct{ name, target string }{
		{"trashSearch", "/api/v1/task/trash/search?projectId=1&targetType=TASK&pageNo=1&pageSize=10"},
		{"hostRoute", "/api/v1/demo/task/7"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			do := func(api *httpapi.Server) time.Duration {
				req := httptest.NewRequest(http.MethodGet, bc.target, nil)
				req.Header.Set("Authorization", "Bearer t")
				rec := httptest.NewRecorder()
				start := time.Now()
				api.ServeHTTP(rec, req)
				took := time.Since(start)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				return took
			}
			// Blocks of 50 requests to each, alternating which goes first;
			// the median of the blocks' ratios shrugs off the moments the
			// machine was busy elsewhere.
			const block = 50
			var noopTime, sdkTime, noopBlock, sdkBlock time.Duration
			var ratios []float64
			var rm metricdata.ResourceMetrics
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					noopBlock += do(noopAPI)
					sdkBlock += do(sdkAPI)
				} else {
					sdkBlock += do(sdkAPI)
					noopBlock += do(noopAPI)
				}
				if i++; i%block == 0 {
					ratios = append(ratios, float64(sdkBlock)/float64(noopBlock))
					noopTime, sdkTime, noopBlock, sdkBlock = noopTime+noopBlock, sdkTime+sdkBlock, 0, 0
				}
				if i%1000 == 0 {
					_ = reader.Collect(ctx, &rm) // a scrape
				}
			}
			noopTime, sdkTime = noopTime+noopBlock, sdkTime+sdkBlock
			n := float64(i)
			b.ReportMetric(float64(noopTime.Nanoseconds())/n, "noop-ns/req")
			b.ReportMetric(float64(sdkTime.Nanoseconds())/n, "sdk-ns/req")
			if len(ratios) > 0 {
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "sdk/noop")
			}
		})
	}
}
