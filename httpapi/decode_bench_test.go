package httpapi

import (
	"net/http"

	"github.com/deskkit/deskkit"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkDecodeJSON is the cost of reading a verification send's body,
// the key check included.
func BenchmarkDecodeJSON(b *testing.B) {
	const body = `{"bizKey": "SIGNIN", "toAddress": [["alice@example.com", "ann@example.org"], ["bob@example.com"]]}`
	type send struct {
		BizKey    string     `json:"bizKey"`
		ToAddress [][]string `json:"toAddress"`
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		var s send
		if err := DecodeJSON(r, &s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouting is the cost of finding an operation: a path with a
// wildcard beside static siblings, answered by an endpoint that does
// nothing.
func BenchmarkRouting(b *testing.B) {
	srv, err := New(&Config{Authenticator: users})
	if err != nil {
		b.Fatal(err)
	}
	srv.Handle("PATCH", "/bench/{id}/back", noop)
	srv.Handle("PATCH", "/bench/back", noop)
	srv.Handle("GET", "/bench/search", noop)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("PATCH", "/api/v1/bench/12/back", nil)
		r.Header.Set("Authorization", "Bearer alice")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

func noop(*http.Request, deskkit.Principal) (any, error) { return nil, nil }
