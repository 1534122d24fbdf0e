package channel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// DeliveryTotalsAll counts every channel of the tenant at once, the same
// window and numbers as DeliveryCounts summed per channel, another
// tenant's left out, and is refused as DeliveryCounts is.
func TestDeliveryTotalsAll(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := newEvFixture(t, db, channel.Config{RetrySchedule: []time.Duration{0}})
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		second := f.add(t, f.ann, "WEBHOOK", "second", f.recv.URL+"/second", nil)
		quiet, err := f.r.Add(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "quiet", Address: f.recv.URL + "/quiet", Events: []string{"sprint.trashed"}})
		if err != nil {
			t.Fatal(err)
		}
		eves := f.add(t, f.eve, "WEBHOOK", "eve's", f.recv.URL+"/eve", nil)

		// 09:10: the tenant's two channels get two events each, Eve's one.
		f.clock.Advance(10 * time.Minute)
		f.publish(t, 10, newEvent("task.trashed"))
		f.publish(t, 10, newEvent("task.trashed"))
		f.publish(t, 20, newEvent("task.trashed"))
		f.run(t)
		// 11:30: one fails on each, one stays pending on each.
		f.clock.Advance(2*time.Hour + 20*time.Minute)
		f.recv.answer(500, "down")
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		f.publish(t, 10, newEvent("task.trashed"))

		for _, hours := range []int{1, 3, 24} {
			got, err := f.r.DeliveryTotalsAll(ctx, f.ann, hours)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]channel.DeliveryTotals{}
			for _, id := range []int64{hook.ID, second.ID, quiet.ID} {
				hs, err := f.r.DeliveryCounts(ctx, f.ann, id, hours)
				if err != nil {
					t.Fatal(err)
				}
				var sum channel.DeliveryTotals
				for _, h := range hs {
					sum.Succeeded += h.Succeeded
					sum.Failed += h.Failed
					sum.Pending += h.Pending
				}
				if sum != (channel.DeliveryTotals{}) {
					want[id] = sum
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%d hours (-DeliveryCounts summed +DeliveryTotalsAll):\n%s", hours, d)
			}
		}
		day, _ := f.r.DeliveryTotalsAll(ctx, f.ann, 24)
		if day[hook.ID] != (channel.DeliveryTotals{Succeeded: 2, Failed: 1, Pending: 1}) {
			t.Errorf("hook's day: %+v", day[hook.ID])
		}
		if _, ok := day[eves.ID]; ok {
			t.Error("another tenant's channel is counted")
		}
		evesDay, err := f.r.DeliveryTotalsAll(ctx, f.eve, 24)
		if err != nil || len(evesDay) != 1 || evesDay[eves.ID].Succeeded != 1 {
			t.Errorf("eve's totals: %v %+v", err, evesDay)
		}

		bob := deskkit.Principal{UserID: 3, TenantID: 10}
		for _, c := range []struct {
			name  string
			p     deskkit.Principal
			hours int
			is    error
		}{
			{"not an admin", bob, 24, channel.ErrForbidden},
			{"zero hours", f.ann, 0, deskkit.ErrInvalid},
			{"too many hours", f.ann, channel.MaxStatsHours + 1, deskkit.ErrInvalid},
			{"no principal", deskkit.Principal{}, 24, deskkit.ErrUnauthenticated},
		} {
			if _, err := f.r.DeliveryTotalsAll(ctx, c.p, c.hours); !errors.Is(err, c.is) {
				t.Errorf("%s: %v, want %v", c.name, err, c.is)
			}
		}
	})
}
