package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deskkit/deskkit/httpapi"
)

// TestSpanClientAddress: a request's span records its client's address,
// the connection's, or behind Config.TrustedProxies the one they name;
// the same Server.Client answers.
func TestSpanClientAddress(t *testing.T) {
	for _, tc := range []struct {
		trusted []string
		want    string
	}{{nil, "10.0.0.5"}, {[]string{"10.0.0.0/8"}, "198.51.100.1"}} {
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		api, err := httpapi.New(&httpapi.Config{Authenticator: bearer{}, TracerProvider: tp, TrustedProxies: tc.trusted})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil)
		req.RemoteAddr = "10.0.0.5:4711"
		req.Header.Set("X-Forwarded-For", "198.51.100.1")
		api.ServeHTTP(httptest.NewRecorder(), req)
		ended := spans.Ended()
		if len(ended) != 1 {
			t.Fatalf("%d spans", len(ended))
		}
		got := ""
		for _, kv := range ended[0].Attributes() {
			if kv.Key == "client.address" {
				got = kv.Value.AsString()
			}
		}
		if got != tc.want || api.Client(req).Addr.String() != tc.want {
			t.Errorf("TrustedProxies %q: client.address %q, Server.Client %s; want %s", tc.trusted, got, api.Client(req).Addr, tc.want)
		}
		_ = tp.Shutdown(t.Context())
	}
}
