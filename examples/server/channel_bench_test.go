package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// benchChannelTest measures POST /api/v1/event/channel/test to a webhook
// on loopback through the reference server's handler on PostgreSQL, by
// clients concurrent clients: each test reads the stored channel and its
// secret, takes the throttle's row, signs and posts the event, and waits
// for the receiver's 204.
func benchChannelTest(b *testing.B, clients int) {
	db := dbtest.OpenPostgres(b)
	ctx := context.Background()
	if err := migrateAll(ctx, db); err != nil {
		b.Fatal(err)
	}
	var received atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the count is what matters
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	// The throttle out of reach, but still taken on every test.
	a, err := newApp(db, appConfig{
		Logger:  slog.New(slog.DiscardHandler),
		Channel: channelConfig{allowPrivate: true, testsPerMinute: 1 << 30},
	})
	if err != nil {
		b.Fatal(err)
	}
	tn, err := a.dir.EnsureTenant(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	u, err := a.dir.EnsureUser(ctx, tn.ID, "ann", true) // channels are managed by admins
	if err != nil {
		b.Fatal(err)
	}
	token, err := a.dir.IssueToken(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	body := fmt.Sprintf(`{"channelType":"WEBHOOK","name":"bench","address":%q}`, recv.URL+"/hook")
	if err := benchCall(a, 0, token, http.MethodPost, "/api/v1/event/channel", body); err != nil {
		b.Fatal(err)
	}

	done, elapsed := runConcurrently(b, clients, func(int) error {
		return benchCall(a, 0, token, http.MethodPost, "/api/v1/event/channel/test", body)
	})
	if got := received.Load(); got != int64(done) {
		b.Fatalf("the receiver got %d messages, want %d", got, done)
	}
	b.ReportMetric(float64(done)/elapsed.Seconds(), "tests/s")
}

// BenchmarkChannelTest is one client's test sends, one after the other.
func BenchmarkChannelTest(b *testing.B) { benchChannelTest(b, 1) }

// BenchmarkChannelTest8Clients is 8 clients at once.
func BenchmarkChannelTest8Clients(b *testing.B) { benchChannelTest(b, 8) }
