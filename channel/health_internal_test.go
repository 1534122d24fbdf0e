package channel

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/outbox"
)

// Two replicas flushing a failure of one channel past
// Config.FailingAfter at the same time, on PostgreSQL, raise
// channel.failing once: the first flush's transaction holds the channel's
// row, the second waits for it (the test waits until PostgreSQL says it
// waits on a lock), and once the first commits the second finds the mark
// set and raises nothing.
func TestChannelFailingConcurrentFlushes(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		if db.Dialect().Name() != dialect.PG {
			t.Skip("SQLite has one writer: two flushes cannot overlap")
		}
		ctx := context.Background()
		if err := Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		clock := clocktest.New(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
		newRegistry := func() *ChannelRegistry {
			r, err := New(db, storeSecret, nil, &Config{Now: clock.Now, AllowPrivateNetworks: true, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		one, two := newRegistry(), newRegistry()
		ann := deskkit.Principal{UserID: 1, TenantID: 10, Admin: true}
		hook, err := one.Add(ctx, ann, Input{Type: "WEBHOOK", Name: "hook", Address: "https://hooks.example.com/h"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := one.Add(ctx, ann, Input{Type: "WEBHOOK", Name: "watcher", Address: "https://hooks.example.com/w"}); err != nil {
			t.Fatal(err)
		}
		// The clock started an hour and a minute ago.
		if _, err := db.NewUpdate().Table("deskkit_channels").Set("failing_since_ms = ?, failed_attempts = 3", clock.Now().Add(-61*time.Minute).UnixMilli()).
			Where("id = ?", hook.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		failed := func(id int64) []outbox.Result {
			return []outbox.Result{{
				Delivery: outbox.Delivery{ID: id, TenantID: 10, Kind: outboxKind, TargetID: hook.ID, Attempt: 4},
				Outcome:  outbox.Outcome{StatusCode: 500, Error: deskkit.Textf("the webhook answered 500")},
			}}
		}

		tx1, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx1.Rollback() //nolint:errcheck // committed below
		if err := (*handler)(one).Recorded(ctx, tx1, failed(101)); err != nil {
			t.Fatal(err)
		}
		tx2, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx2.Rollback() //nolint:errcheck // committed below
		var pid int
		if err := tx2.NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pid); err != nil {
			t.Fatal(err)
		}
		second := make(chan error, 1)
		go func() { second <- (*handler)(two).Recorded(ctx, tx2, failed(102)) }()
		for waiting := false; !waiting; {
			var wait *string
			if err := db.NewRaw("SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", pid).Scan(ctx, &wait); err != nil {
				t.Fatal(err)
			}
			waiting = wait != nil && *wait == "Lock"
			select {
			case err := <-second:
				t.Fatalf("the second flush did not wait for the first: %v", err)
			default:
			}
		}
		if err := tx1.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		if err := tx2.Commit(); err != nil {
			t.Fatal(err)
		}
		n, err := db.NewSelect().Table("deskkit_outbox_events").Where("tenant_id = 10 AND event_type = ?", EventChannelFailing).Count(ctx)
		if err != nil || n != 1 {
			t.Errorf("%d channel.failing events, want 1 (%v)", n, err)
		}
		c, err := one.Get(ctx, ann, hook.ID)
		if err != nil || c.Health != HealthFailing || c.FailedAttempts != 5 || c.LastStatusCode != 500 {
			t.Errorf("after both flushes: %+v, %v", c, err)
		}
	})
}
