package channel_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestChannelFlow: a channel's rate limit is set by Add and Replace and
// shown by List and Get, with its in-flight limit (a new channel's is the
// floor) and the pause a Retry-After asked for; a rate out of range is an
// input error naming rateLimit, and nothing is written.
func TestChannelFlow(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{MaxInFlightPerChannel: 3})
		ctx := context.Background()
		busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		t.Cleanup(busy.Close)

		added, err := f.r.Add(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "busy", Address: busy.URL + "/hook", RateLimit: 2.5})
		if err != nil {
			t.Fatal(err)
		}
		if added.RateLimit != 2.5 || added.InFlightLimit != 3 || added.PausedUntil != nil {
			t.Errorf("added: rate %v, in flight %d, paused %v; want 2.5, 3 (the floor), nil", added.RateLimit, added.InFlightLimit, added.PausedUntil)
		}
		got, err := f.r.Get(ctx, f.ann, added.ID)
		if err != nil || got.RateLimit != 2.5 || got.InFlightLimit != 3 {
			t.Errorf("get: %+v, %v; want rate 2.5, in flight 3", got, err)
		}

		for _, bad := range []float64{-1, channel.MaxRateLimit + 1, math.NaN(), math.Inf(1)} {
			_, err := f.r.Replace(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "busy", Address: busy.URL + "/hook", RateLimit: bad})
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != "rateLimit" || !strings.Contains(ie.ClientMessage(), "between 0") {
				t.Errorf("replace with rate %v: %v, want an input error naming rateLimit", bad, err)
			}
		}
		if got, _ := f.r.Get(ctx, f.ann, added.ID); got.RateLimit != 2.5 {
			t.Errorf("a refused replace changed the rate to %v", got.RateLimit)
		}

		// A 429 with Retry-After: 120 pauses the channel for 2 minutes.
		f.publish(t, 10, newEvent("task.trashed"))
		if n := f.run(t); n != 1 {
			t.Fatalf("ran %d, want 1", n)
		}
		got, err = f.r.Get(ctx, f.ann, added.ID)
		want := f.clock.Now().Add(2 * time.Minute).UTC()
		if err != nil || got.PausedUntil == nil || !got.PausedUntil.Equal(want) {
			t.Errorf("after a 429: paused until %v (%v), want %v", got.PausedUntil, err, want)
		}
		if got.InFlightLimit != 3 {
			t.Errorf("after a 429 at the floor: in flight %d, want 3", got.InFlightLimit)
		}

		// Replace without a rate: none.
		replaced, err := f.r.Replace(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "busy", Address: busy.URL + "/hook"})
		if err != nil || replaced.RateLimit != 0 || replaced.PausedUntil == nil {
			t.Errorf("replaced without a rate: %+v, %v; want rate 0, still paused", replaced, err)
		}
		list, err := f.r.List(ctx, f.ann, "WEBHOOK")
		if err != nil || len(list) != 1 || list[0].RateLimit != 0 || list[0].PausedUntil == nil {
			t.Errorf("list: %+v, %v", list, err)
		}
		// Once the pause is over, it is not shown.
		f.clock.Advance(2*time.Minute + time.Second)
		if got, _ := f.r.Get(ctx, f.ann, added.ID); got.PausedUntil != nil {
			t.Errorf("paused until %v after the pause", got.PausedUntil)
		}

		// Deleting the channel forgets its flow.
		if err := f.r.Delete(ctx, f.ann, added.ID); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.NewSelect().Table("deskkit_outbox_targets").ColumnExpr("count(*)").Where("target_id = ?", added.ID).Scan(ctx, &n); err != nil || n != 0 {
			t.Errorf("flow rows left after the delete: %d (%v)", n, err)
		}
	})
}
