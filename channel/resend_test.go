package channel_test

// The resend throttle and the bound of a delivery's attempt log, on
// SQLite and PostgreSQL.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// failedDelivery stores p's webhook to the fixture's receiver, answering
// 500, publishes one event to it, makes its only attempt, and returns the
// FAILED delivery.
func failedDelivery(t *testing.T, f *evFixture, p deskkit.Principal, name string) channel.Delivery {
	t.Helper()
	hook := f.add(t, p, "WEBHOOK", name, f.recv.URL+"/"+name, nil)
	f.recv.answer(http.StatusInternalServerError, "")
	f.publish(t, p.TenantID, newEvent("task.trashed"))
	f.run(t)
	page, err := f.r.Deliveries(context.Background(), p, hook.ID, channel.DeliveryFilter{}, 1, 10)
	if err != nil || len(page.List) != 1 || page.List[0].Status != channel.DeliveryFailed {
		t.Fatalf("after the only attempt: %+v, %v", page, err)
	}
	return page.List[0]
}

// Resends and recovers are throttled per tenant, together, in the
// database: a burst past the limit is refused with the wait until the
// window ends, on this registry and on another over the same database.
func TestResendThrottle(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		const limit = 3
		f := newEvFixture(t, db, channel.Config{ResendsPerMinute: limit, RetrySchedule: []time.Duration{0}})
		ctx := context.Background()
		d := failedDelivery(t, f, f.ann, "hook")

		// A burst of 10 at once: 3 pass, 7 are refused with a minute to
		// wait.
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ok       int
			refusals []*deskkit.RateLimitError
		)
		for range 10 {
			wg.Go(func() {
				_, err := f.r.Resend(ctx, f.ann, d.ID)
				mu.Lock()
				defer mu.Unlock()
				var rl *deskkit.RateLimitError
				switch {
				case err == nil:
					ok++
				case errors.As(err, &rl) && errors.Is(err, channel.ErrRateLimited):
					refusals = append(refusals, rl)
				default:
					t.Errorf("resend: %v", err)
				}
			})
		}
		wg.Wait()
		if ok != limit || len(refusals) != 10-limit {
			t.Fatalf("a burst of 10 resends: %d passed, %d refused; want %d passed", ok, len(refusals), limit)
		}
		for _, rl := range refusals {
			if rl.RetryAfter != time.Minute {
				t.Errorf("refused with Retry-After %v, want 1m", rl.RetryAfter)
			}
		}
		if n := f.run(t); n != 1 || f.recv.count() != 2 {
			t.Errorf("after the burst: %d claimed, the receiver got %d requests; want 1 and 2", n, f.recv.count())
		}

		// Recover shares the limit; the wait is what is left of the
		// window.
		f.clock.Advance(20 * time.Second)
		_, err := f.r.Recover(ctx, f.ann, d.ChannelID, f.clock.Now().Add(-time.Hour))
		var rl *deskkit.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != 40*time.Second {
			t.Fatalf("recover past the limit: %v", err)
		}

		// Another replica over the same database sees the same count.
		other, err := channel.New(db, sendSecret, nil, &channel.Config{AllowPrivateNetworks: true, Now: f.clock.Now, ResendsPerMinute: limit})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Resend(ctx, f.ann, d.ID); !errors.As(err, &rl) {
			t.Fatalf("resend on another replica: %v", err)
		}

		// Another tenant has its own allowance.
		de := failedDelivery(t, f, f.eve, "eves")
		for range limit {
			if _, err := other.Resend(ctx, f.eve, de.ID); err != nil {
				t.Fatalf("eve's resend: %v", err)
			}
		}

		// A refusal for another reason counts nothing: a resend on a
		// disabled channel is ErrChannelDisabled, not a unit of the
		// window.
		f.clock.Advance(40 * time.Second)
		if _, err := f.r.Disable(ctx, f.ann, d.ChannelID); err != nil {
			t.Fatal(err)
		}
		for range limit + 1 {
			if _, err := f.r.Resend(ctx, f.ann, d.ID); !errors.Is(err, channel.ErrChannelDisabled) {
				t.Fatalf("resend on a disabled channel: %v", err)
			}
		}
		if _, err := f.r.Enable(ctx, f.ann, d.ChannelID); err != nil {
			t.Fatal(err)
		}
		for i := range limit {
			if _, err := other.Resend(ctx, f.ann, d.ID); err != nil {
				t.Fatalf("resend %d of the new window: %v", i+1, err)
			}
		}
		if _, err := f.r.Resend(ctx, f.ann, d.ID); !errors.As(err, &rl) {
			t.Fatalf("resend past the new window's limit: %v", err)
		}
	})
}

// ResendsPerMinute below 0 turns the throttle off.
func TestResendUnthrottled(t *testing.T) {
	f := newEvFixture(t, dbtest.OpenSQLite(t), channel.Config{ResendsPerMinute: -1, RetrySchedule: []time.Duration{0}})
	d := failedDelivery(t, f, f.ann, "hook")
	for i := range 3 * channel.DefaultResendLimit {
		if _, err := f.r.Resend(context.Background(), f.ann, d.ID); err != nil {
			t.Fatalf("resend %d: %v", i+1, err)
		}
	}
}

// A delivery's log keeps its newest MaxAttemptsKept attempts: every
// resend beyond them drops the oldest.
func TestAttemptLogBounded(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{ResendsPerMinute: -1, RetrySchedule: []time.Duration{0}})
		ctx := context.Background()
		d := failedDelivery(t, f, f.ann, "hook")
		const more = 5
		for i := range channel.MaxAttemptsKept - 1 + more {
			if _, err := f.r.Resend(ctx, f.ann, d.ID); err != nil {
				t.Fatalf("resend %d: %v", i+1, err)
			}
			if n := f.run(t); n != 1 {
				t.Fatalf("resend %d: claimed %d", i+1, n)
			}
		}
		total := channel.MaxAttemptsKept + more
		if got := f.only(t, d.ChannelID); got.Attempts != total || f.recv.count() != total {
			t.Errorf("delivery %+v after %d attempts; the receiver got %d", got, total, f.recv.count())
		}
		a := f.attempts(t, d.ID)
		if len(a) != channel.MaxAttemptsKept || a[0].AttemptNo != more+1 || a[len(a)-1].AttemptNo != total {
			t.Fatalf("the log keeps %d attempts, %d to %d; want the newest %d, %d to %d",
				len(a), a[0].AttemptNo, a[len(a)-1].AttemptNo, channel.MaxAttemptsKept, more+1, total)
		}
		var rows int
		if err := db.NewRaw("SELECT COUNT(*) FROM deskkit_outbox_attempts WHERE delivery_id = ?", d.ID).Scan(ctx, &rows); err != nil {
			t.Fatal(err)
		}
		if rows != channel.MaxAttemptsKept {
			t.Errorf("%d attempt rows stored, want %d", rows, channel.MaxAttemptsKept)
		}
	})
}
