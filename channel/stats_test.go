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

// DeliveryCounts counts a channel's deliveries per hour by status, the
// current hour last, another channel's and another tenant's left out, and
// is refused as Deliveries is.
func TestDeliveryCounts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := newEvFixture(t, db, channel.Config{RetrySchedule: []time.Duration{0}})
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		// Another channel of the tenant, subscribed to other events.
		other, err := f.r.Add(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "other", Address: f.recv.URL + "/other", Events: []string{"sprint.trashed"}})
		if err != nil {
			t.Fatal(err)
		}
		eves := f.add(t, f.eve, "WEBHOOK", "eve's", f.recv.URL+"/eve", nil)

		start := f.clock.Now() // 09:00
		// 09:10: two succeed.
		f.clock.Advance(10 * time.Minute)
		f.publish(t, 10, newEvent("task.trashed"))
		f.publish(t, 10, newEvent("task.trashed"))
		f.publish(t, 20, newEvent("task.trashed"))
		f.run(t)
		// 11:30: one fails (its one attempt), one stays pending.
		f.clock.Advance(2*time.Hour + 20*time.Minute)
		f.recv.answer(500, "down")
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		f.publish(t, 10, newEvent("task.trashed"))

		got, err := f.r.DeliveryCounts(ctx, f.ann, hook.ID, 4)
		if err != nil {
			t.Fatal(err)
		}
		h := func(n int) time.Time { return start.Add(time.Duration(n) * time.Hour).UTC() }
		want := []channel.HourlyDeliveries{
			{Hour: h(-1)},
			{Hour: h(0), Succeeded: 2},
			{Hour: h(1)},
			{Hour: h(2), Failed: 1, Pending: 1},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("counts (-want +got):\n%s", d)
		}
		// The last 24 hours hold all of it; the other channel got none.
		day, err := f.r.DeliveryCounts(ctx, f.ann, hook.ID, 24)
		if err != nil || len(day) != 24 || day[23].Hour != h(2) || day[21].Succeeded != 2 || day[23].Failed != 1 {
			t.Errorf("24 hours: %v %+v", err, day)
		}
		otherDay, err := f.r.DeliveryCounts(ctx, f.ann, other.ID, 24)
		if err != nil || otherDay != nil && otherDay[21] != (channel.HourlyDeliveries{Hour: h(0)}) {
			t.Errorf("the other channel's counts: %v %+v", err, otherDay)
		}
		// Eve's tenant counts its own only.
		evesDay, err := f.r.DeliveryCounts(ctx, f.eve, eves.ID, 24)
		if err != nil || evesDay[21].Succeeded != 1 {
			t.Errorf("eve's counts: %v %+v", err, evesDay)
		}

		bob := deskkit.Principal{UserID: 3, TenantID: 10}
		for _, c := range []struct {
			name  string
			p     deskkit.Principal
			id    int64
			hours int
			is    error
		}{
			{"not an admin", bob, hook.ID, 24, channel.ErrForbidden},
			{"another tenant's channel", f.eve, hook.ID, 24, channel.ErrNotFound},
			{"no such channel", f.ann, 999999, 24, channel.ErrNotFound},
			{"zero hours", f.ann, hook.ID, 0, deskkit.ErrInvalid},
			{"too many hours", f.ann, hook.ID, channel.MaxStatsHours + 1, deskkit.ErrInvalid},
			{"bad id", f.ann, 0, 24, deskkit.ErrInvalid},
			{"no principal", deskkit.Principal{}, hook.ID, 24, deskkit.ErrUnauthenticated},
		} {
			if _, err := f.r.DeliveryCounts(ctx, c.p, c.id, c.hours); !errors.Is(err, c.is) {
				t.Errorf("%s: %v, want %v", c.name, err, c.is)
			}
		}
	})
}
