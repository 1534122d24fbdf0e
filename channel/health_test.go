package channel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// fakeUsers names users for Config.Users.
type fakeUsers map[int64]string

var _ channel.UserResolver = fakeUsers{}

func (u fakeUsers) ResolveUsers(_ context.Context, _ bun.IDB, _ int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	out := map[int64]deskkit.UserInfo{}
	for _, id := range ids {
		if n, ok := u[id]; ok {
			out[id] = deskkit.UserInfo{Name: n}
		}
	}
	return out, nil
}

// healthSchedule: five attempts, 10 and then 30 minutes apart (+-10 %).
var healthSchedule = []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 30 * time.Minute, 30 * time.Minute}

// disabledEvents returns the data of the channel.disabled events rc got.
func disabledEvents(t *testing.T, rc *receiver) []channel.ChannelDisabledData {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []channel.ChannelDisabledData
	for _, b := range rc.bodies {
		var body struct {
			Type string
			Data channel.ChannelDisabledData
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		if body.Type == channel.EventChannelDisabled {
			out = append(out, body.Data)
		}
	}
	return out
}

// failingEvents returns the data of the channel.failing events rc got.
func failingEvents(t *testing.T, rc *receiver) []channel.ChannelFailingData {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []channel.ChannelFailingData
	for _, b := range rc.bodies {
		var body struct {
			Type string
			Data channel.ChannelFailingData
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		if body.Type == channel.EventChannelFailing {
			out = append(out, body.Data)
		}
	}
	return out
}

// A webhook answering 500 shows failing, with since, attempts, the last
// status and error and the share of the last 24 hours; after an hour of it
// channel.failing reaches the tenant's other channels once; a success
// brings it back to healthy and ends the episode, so that the next one
// raises the event again; disabled by hand, it shows when, why and by
// whom.
func TestChannelHealth(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{RetrySchedule: healthSchedule, Users: fakeUsers{1: "Ann Lee"}})
		ctx := context.Background()
		start := f.clock.Now()
		// advance moves past a retry due d after the last attempt: the
		// outbox spreads each delay by +-10 %.
		advance := func(d time.Duration) { f.clock.Advance(d + d/9) }
		bad := startReceiver(t)
		bad.answer(500, "boom")
		hook := f.add(t, f.ann, "WEBHOOK", "hook", bad.URL+"/h", nil)
		watcher := f.add(t, f.ann, "WEBHOOK", "watcher", f.recv.URL+"/w", nil)

		if c := f.channel(t, hook.ID); c.Health != channel.HealthHealthy || c.FailingSince != nil || c.SuccessShare24h != nil {
			t.Fatalf("a new channel: %+v", c)
		}
		f.publish(t, 10, newEvent("task.trashed")) // D1
		f.run(t)
		c := f.channel(t, hook.ID)
		if c.Health != channel.HealthFailing || c.FailingSince == nil || !c.FailingSince.Equal(start) || c.FailedAttempts != 1 ||
			c.LastStatusCode != 500 || !strings.Contains(c.LastError, "500") ||
			c.Attempts24h != 1 || c.AttemptsSucceeded24h != 0 || c.SuccessShare24h == nil || *c.SuccessShare24h != 0 {
			t.Fatalf("after a 500: %+v", c)
		}
		if w := f.channel(t, watcher.ID); w.Health != channel.HealthHealthy || w.SuccessShare24h == nil || *w.SuccessShare24h != 1 {
			t.Errorf("the watcher: %+v", w)
		}
		// The delivery totals keep their meaning: one pending delivery.
		if tot, err := f.r.DeliveryTotalsAll(ctx, f.ann, 24); err != nil || tot[hook.ID] != (channel.DeliveryTotals{Pending: 1}) {
			t.Errorf("totals %+v, %v", tot, err)
		}

		// 10 and 40 minutes: failing, not yet for an hour.
		for _, d := range []time.Duration{10 * time.Minute, 30 * time.Minute} {
			advance(d)
			f.run(t)
		}
		f.run(t)
		if c := f.channel(t, hook.ID); c.FailedAttempts != 3 || !c.FailingSince.Equal(start) || len(failingEvents(t, f.recv)) != 0 {
			t.Fatalf("after 40 minutes: %+v, %d channel.failing", c, len(failingEvents(t, f.recv)))
		}
		// 70 minutes: channel.failing, to the watcher alone.
		advance(30 * time.Minute)
		f.run(t)
		f.run(t)
		ev := failingEvents(t, f.recv)
		if len(ev) != 1 || ev[0].ChannelID != hook.ID || ev[0].Name != "hook" || ev[0].Attempts != 4 ||
			ev[0].FailingSeconds != int64(f.clock.Now().Sub(start)/time.Second) || !ev[0].FailingSince.Equal(start) || ev[0].LastStatusCode != 500 ||
			!strings.Contains(ev[0].LastError, "500") || ev[0].TenantID != 10 {
			t.Fatalf("channel.failing events %+v", ev)
		}
		if n := len(failingEvents(t, bad)); n != 0 {
			t.Errorf("the failing channel got %d channel.failing events", n)
		}
		// More failures in the episode raise nothing more.
		f.publish(t, 10, newEvent("task.trashed")) // D2
		f.run(t)
		f.run(t)
		if c := f.channel(t, hook.ID); c.FailedAttempts != 5 || len(failingEvents(t, f.recv)) != 1 {
			t.Fatalf("after five failures: %+v, %d channel.failing", c, len(failingEvents(t, f.recv)))
		}

		// A success at 80 minutes (D2's retry): healthy, the share counts
		// attempts, 1 of 6.
		bad.answer(204, "")
		advance(10 * time.Minute)
		f.run(t)
		c = f.channel(t, hook.ID)
		if c.Health != channel.HealthHealthy || c.FailingSince != nil || c.FailedAttempts != 0 || c.LastStatusCode != 0 || c.LastError != "" ||
			c.Attempts24h != 6 || c.AttemptsSucceeded24h != 1 || c.SuccessShare24h == nil || *c.SuccessShare24h != 1.0/6 {
			t.Fatalf("after a success: %+v", c)
		}

		// A new episode at 100 minutes (D1's last attempt), and an hour of
		// it raises channel.failing again.
		bad.answer(503, "")
		advance(20 * time.Minute)
		f.publish(t, 10, newEvent("task.trashed")) // D3
		f.run(t)
		if c := f.channel(t, hook.ID); c.Health != channel.HealthFailing || !c.FailingSince.Equal(f.clock.Now().Truncate(time.Millisecond)) ||
			c.FailedAttempts != 2 || c.LastStatusCode != 503 {
			t.Fatalf("a new episode: %+v", c)
		}
		advance(70 * time.Minute) // D3's retry
		f.run(t)
		f.run(t)
		if ev := failingEvents(t, f.recv); len(ev) != 2 || ev[1].Attempts != 3 || ev[1].LastStatusCode != 503 {
			t.Fatalf("the second episode's channel.failing %+v", ev)
		}

		// Disabled by hand: when, why, by whom, by name.
		c, err := f.r.Disable(ctx, f.ann, hook.ID)
		if err != nil || c.Health != channel.HealthDisabled || c.DisabledBy == nil || *c.DisabledBy != 1 || c.DisabledByName != "Ann Lee" ||
			c.DisabledDate == nil || !c.DisabledDate.Equal(f.clock.Now().Truncate(time.Millisecond)) || c.DisabledReason == "" {
			t.Fatalf("disabled: %+v, %v", c, err)
		}
		if g := f.channel(t, hook.ID); g.Health != channel.HealthDisabled || g.DisabledByName != "Ann Lee" {
			t.Errorf("listed disabled: %+v", g)
		}
		// channel.disabled names her, once.
		f.run(t)
		if ev := disabledEvents(t, f.recv); len(ev) != 1 || ev[0].Actor == nil || ev[0].Actor.ID != 1 || ev[0].Actor.Name != "Ann Lee" {
			t.Errorf("channel.disabled %+v, want one, by Ann Lee", ev)
		}
		// Enabled again: healthy, nobody's.
		if c, err := f.r.Enable(ctx, f.ann, hook.ID); err != nil || c.Health != channel.HealthHealthy || c.DisabledBy != nil || c.DisabledByName != "" || c.FailingSince != nil {
			t.Fatalf("enabled: %+v, %v", c, err)
		}
	})
}

// Two replicas counting the failures of one channel past the threshold
// raise channel.failing once between them: the mark is in the database,
// not in either process.
func TestChannelFailingOnceAcrossReplicas(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		cfg := channel.Config{RetrySchedule: []time.Duration{0, 2 * time.Hour}}
		f := newEvFixture(t, db, cfg)
		cfg.AllowPrivateNetworks, cfg.Now, cfg.Logger = true, f.clock.Now, slog.New(slog.DiscardHandler)
		other, err := channel.New(db, sendSecret, f.mail, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.RegisterEventTypes(hostTypes...); err != nil {
			t.Fatal(err)
		}
		bad := startReceiver(t)
		bad.answer(500, "")
		hook := f.add(t, f.ann, "WEBHOOK", "hook", bad.URL+"/h", nil)
		f.add(t, f.ann, "WEBHOOK", "watcher", f.recv.URL+"/w", nil)

		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)                          // the clock starts
		f.clock.Advance(61 * time.Minute) // before the retry, due in 2 hours
		// Each replica claims and fails one delivery, past the hour.
		f.publish(t, 10, newEvent("task.trashed"))
		if n, err := channel.RunOnce(context.Background(), f.r); err != nil || n != 2 {
			t.Fatalf("the first replica claimed %d, %v", n, err)
		}
		f.publish(t, 10, newEvent("task.trashed"))
		if n, err := channel.RunOnce(context.Background(), other); err != nil || n < 2 {
			t.Fatalf("the second replica claimed %d, %v", n, err)
		}
		for f.run(t) > 0 {
		}
		if c := f.channel(t, hook.ID); c.FailedAttempts != 3 {
			t.Errorf("failed attempts %d, want 3", c.FailedAttempts)
		}
		if ev := failingEvents(t, f.recv); len(ev) != 1 || ev[0].Attempts != 2 {
			t.Errorf("channel.failing events %+v, want one", ev)
		}
	})
}
