package channel_test

// The events conformance suite: publishing, subscriptions, the worker's
// attempts and retries, disabling, the delivery log and its admin
// methods, on SQLite and PostgreSQL, with real receivers on loopback, the
// in-test SMTP server, and an injected clock (the worker runs one batch
// at a time: nothing sleeps).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/mailer"
)

// hostTypes are the event types the tests' host registers.
var hostTypes = []deskkit.EventType{
	{Name: "task.trashed", Description: "A task was moved to the trash.", Example: map[string]any{"trashId": 1}},
	{Name: "task.restored", Description: "A task came back from the trash.", Example: map[string]any{"trashId": 1}},
	{Name: "sprint.trashed", Description: "A sprint was moved to the trash.", Example: map[string]any{"trashId": 2}},
	{Name: "tasks.archived", Description: "Not a task.* event.", Example: map[string]any{}},
}

// shortSchedule is the tests' retry schedule: three attempts.
var shortSchedule = []time.Duration{0, time.Minute, time.Hour}

type evFixture struct {
	*sendFixture
	db   *bun.DB
	mail *failingMailer
}

// failingMailer is the SMTP mailer, but fails for the addresses in fail.
type failingMailer struct {
	next deskkit.Mailer
	mu   sync.Mutex
	fail []string
}

func (m *failingMailer) SendMail(ctx context.Context, msg deskkit.Mail) error {
	m.mu.Lock()
	fail := slices.Contains(m.fail, msg.To)
	m.mu.Unlock()
	if fail {
		return errors.New("mailbox on fire")
	}
	return m.next.SendMail(ctx, msg)
}

// failTo makes mail to addresses fail from now on, and to no other.
func (f *evFixture) failTo(addresses ...string) {
	f.mail.mu.Lock()
	defer f.mail.mu.Unlock()
	f.mail.fail = addresses
}

func newEvFixture(t *testing.T, db *bun.DB, cfg channel.Config) *evFixture {
	t.Helper()
	if cfg.RetrySchedule == nil {
		cfg.RetrySchedule = shortSchedule
	}
	f := &evFixture{sendFixture: newSendFixture(t, db, cfg), db: db}
	// The same registry, but with a mailer that fails when told to.
	m, err := mailer.New(mailer.Config{Addr: f.sendFixture.mail.Addr, From: "deskkit <noreply@example.com>", TLS: mailer.TLSNone})
	if err != nil {
		t.Fatal(err)
	}
	f.mail = &failingMailer{next: smtpMailer{m}}
	cfg.AllowPrivateNetworks = true
	cfg.Now = f.clock.Now
	cfg.Logger = slog.New(slog.DiscardHandler)
	if f.r, err = channel.New(db, sendSecret, f.mail, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := f.r.RegisterEventTypes(hostTypes...); err != nil {
		t.Fatal(err)
	}
	return f
}

func newEvent(typ string) deskkit.Event {
	return deskkit.Event{ID: deskkit.NewEventID(), Type: typ, Title: "Task 7 was trashed", Text: "by Ann",
		Data: map[string]any{"projectId": 3, "targetName": "Fix the login"}}
}

// publish publishes ev in tenant in a transaction that commits.
func (f *evFixture) publish(t *testing.T, tenant int64, ev deskkit.Event) {
	t.Helper()
	err := f.db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		return f.r.Publish(ctx, tx, tenant, ev)
	})
	if err != nil {
		t.Fatalf("publish %s: %v", ev.Type, err)
	}
}

// run makes the due attempts, one batch, and returns how many.
func (f *evFixture) run(t *testing.T) int {
	t.Helper()
	n, err := channel.RunOnce(context.Background(), f.r)
	if err != nil {
		t.Fatalf("run once: %v", err)
	}
	return n
}

func (f *evFixture) deliveries(t *testing.T, channelID int64) []channel.Delivery {
	t.Helper()
	page, err := f.r.Deliveries(context.Background(), f.ann, channelID, channel.DeliveryFilter{}, 1, 100)
	if err != nil {
		t.Fatalf("deliveries of %d: %v", channelID, err)
	}
	if int(page.Total) != len(page.List) {
		t.Fatalf("deliveries of %d: total %d, listed %d", channelID, page.Total, len(page.List))
	}
	return page.List
}

// only returns the one delivery of a channel.
func (f *evFixture) only(t *testing.T, channelID int64) channel.Delivery {
	t.Helper()
	l := f.deliveries(t, channelID)
	if len(l) != 1 {
		t.Fatalf("channel %d has %d deliveries, want 1: %+v", channelID, len(l), l)
	}
	return l[0]
}

func (f *evFixture) attempts(t *testing.T, deliveryID int64) []channel.Attempt {
	t.Helper()
	l, err := f.r.Attempts(context.Background(), f.ann, deliveryID)
	if err != nil {
		t.Fatalf("attempts of %d: %v", deliveryID, err)
	}
	return l
}

func (f *evFixture) channel(t *testing.T, id int64) channel.Channel {
	t.Helper()
	l, err := f.r.ListAll(context.Background(), f.ann)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range l {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("channel %d is not listed", id)
	return channel.Channel{}
}

func isInputError(err error, field string) bool {
	var ie *deskkit.InputError
	return errors.As(err, &ie) && ie.Field == field
}

// A publish rolled back sends nothing; committed, it is delivered once,
// signed, with the event's id as webhook-id and the tenant in the data;
// publishing the id again adds nothing.
func TestPublishDeliver(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)

		ev := newEvent("task.trashed")
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.r.Publish(ctx, tx, 10, ev); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := f.run(t); n != 0 || f.recv.count() != 0 {
			t.Fatalf("after a rollback: %d claimed, %d sent", n, f.recv.count())
		}
		if l := f.deliveries(t, hook.ID); len(l) != 0 {
			t.Fatalf("after a rollback the log has %+v", l)
		}

		f.publish(t, 10, ev)
		if n := f.run(t); n != 1 {
			t.Fatalf("claimed %d, want 1", n)
		}
		h, body := verifyWebhook(t, f.recv, hook.Secret)
		if h.Get("webhook-id") != ev.ID {
			t.Errorf("webhook-id %q, want %q", h.Get("webhook-id"), ev.ID)
		}
		data, _ := body["data"].(map[string]any)
		if body["type"] != "task.trashed" || data["tenantId"] != float64(10) || data["projectId"] != float64(3) {
			t.Errorf("body %v", body)
		}

		f.publish(t, 10, ev) // the same id
		if n := f.run(t); n != 0 || f.recv.count() != 1 {
			t.Fatalf("a second publish of one id: %d claimed, %d sent", n, f.recv.count())
		}
		d := f.only(t, hook.ID)
		now := f.clock.Now()
		want := channel.Delivery{ID: d.ID, ChannelID: hook.ID, EventID: ev.ID, EventType: "task.trashed",
			Status: channel.DeliverySucceeded, Attempts: 1, LastStatusCode: 200, CreatedDate: now, FinishedDate: &now}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("delivery (-want +got):\n%s", diff)
		}
		want2 := []channel.Attempt{{AttemptNo: 1, StartedDate: now, StatusCode: 200, Response: `{"errcode":0,"errmsg":"ok"}`}}
		if diff := cmp.Diff(want2, f.attempts(t, d.ID)); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}

		// Publishing outside a transaction works as well.
		if err := f.r.Publish(ctx, db, 10, newEvent("task.restored")); err != nil {
			t.Fatal(err)
		}
		if n := f.run(t); n != 1 || f.recv.count() != 2 {
			t.Errorf("publish on the database: %d claimed, %d sent", n, f.recv.count())
		}
	})
}

// Malformed events and unknown types are refused, naming the field, and
// write nothing.
func TestPublishRefused(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		for _, c := range []struct {
			tenant int64
			ev     deskkit.Event
			field  string
		}{
			{10, deskkit.Event{Type: "nobody.registered", Title: "x"}, "type"},
			{10, deskkit.Event{Type: "Task.Trashed", Title: "x"}, "type"},
			{10, deskkit.Event{Type: "task.trashed"}, "title"},
			{10, deskkit.Event{Type: "task.trashed", Title: "x", Data: []int{1}}, "data"},
			{10, deskkit.Event{ID: "no-prefix", Type: "task.trashed", Title: "x"}, "id"},
			{10, deskkit.Event{Type: "task.trashed", Title: "x", Text: strings.Repeat("y", channel.MaxTextRunes+1)}, "text"},
			{0, deskkit.Event{Type: "task.trashed", Title: "x"}, "tenantID"},
		} {
			if err := f.r.Publish(ctx, db, c.tenant, c.ev); !isInputError(err, c.field) {
				t.Errorf("publish %+v: %v; want an input error for %s", c.ev, err, c.field)
			}
		}
		if n := f.run(t); n != 0 || len(f.deliveries(t, hook.ID)) != 0 {
			t.Errorf("refused publishes left %d deliveries", n)
		}
		var events int
		if err := db.NewRaw("SELECT count(*) FROM deskkit_outbox_events").Scan(ctx, &events); err != nil || events != 0 {
			t.Errorf("refused publishes left %d events (%v)", events, err)
		}
	})
}

// The catalogue: registered, sorted, copied; names checked, duplicates
// refused whole.
func TestEventTypes(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		var names []string
		for _, e := range f.r.EventTypes() {
			names = append(names, e.Name)
		}
		if want := []string{"channel.disabled", "channel.failing", "channel.secret.revealed", "channel.secret.rotated", "sprint.trashed", "task.restored", "task.trashed", "tasks.archived"}; !slices.Equal(names, want) {
			t.Errorf("catalogue %v, want %v", names, want)
		}
		f.r.EventTypes()[0].Name = "changed"
		if f.r.EventTypes()[0].Name != "channel.disabled" {
			t.Error("changing the returned catalogue changed the registry's")
		}
		for _, bad := range [][]deskkit.EventType{
			{{Name: "task.trashed"}},
			{{Name: "a.b"}, {Name: "a.b"}},
			{{Name: "Bad Name"}},
			{{Name: ""}},
			{{Name: "ok.one"}, {Name: "channel.disabled"}},
		} {
			if err := f.r.RegisterEventTypes(bad...); !isInputError(err, "type") {
				t.Errorf("register %v: %v", bad, err)
			}
		}
		for field, bad := range map[string]deskkit.EventType{
			"service": {Name: "ok.two", Service: "Billing"},
			"example": {Name: "ok.three", Example: []int{1}},
			"schema":  {Name: "ok.four", Schema: json.RawMessage(`[1]`)},
		} {
			if err := f.r.RegisterEventTypes(bad); !isInputError(err, field) {
				t.Errorf("register %+v: %v, want an input error naming %s", bad, err, field)
			}
		}
		if got := len(f.r.EventTypes()); got != 8 {
			t.Errorf("refused registrations registered something: %d types", got)
		}
		if len(channel.EventTypes()) != 4 || slices.ContainsFunc(channel.EventTypes(), func(t deskkit.EventType) bool { return t.Example == nil }) {
			t.Errorf("channel.EventTypes() = %+v", channel.EventTypes())
		}
	})
}

// Subscriptions choose the channels a publish reaches; invalid ones are
// refused naming "events"; lists show them.
func TestSubscriptions(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		add := func(name string, events []string) channel.Added {
			a, err := f.r.Add(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: name, Address: f.recv.URL + "/" + name, Events: events})
			if err != nil {
				t.Fatalf("add %s: %v", name, err)
			}
			return a
		}
		tasks := add("tasks", []string{"task.*", "task.*"})
		sprints := add("sprints", []string{"sprint.trashed"})
		all := add("all", nil)
		if !slices.Equal(tasks.Events, []string{"task.*"}) || all.Events == nil || len(all.Events) != 0 {
			t.Errorf("added subscriptions %v and %v", tasks.Events, all.Events)
		}
		f.publish(t, 10, newEvent("task.trashed"))
		f.publish(t, 10, newEvent("sprint.trashed"))
		f.publish(t, 10, newEvent("task.restored"))
		f.publish(t, 10, newEvent("tasks.archived"))
		for _, c := range []struct {
			id   int64
			want []string
		}{
			{tasks.ID, []string{"task.restored", "task.trashed"}},
			{sprints.ID, []string{"sprint.trashed"}},
			{all.ID, []string{"tasks.archived", "task.restored", "sprint.trashed", "task.trashed"}},
		} {
			var got []string
			for _, d := range f.deliveries(t, c.id) {
				got = append(got, d.EventType)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("channel %d got %v, want %v", c.id, got, c.want)
			}
		}
		if got := f.channel(t, sprints.ID).Events; !slices.Equal(got, []string{"sprint.trashed"}) {
			t.Errorf("listed subscription %v", got)
		}

		// Replace replaces the subscription; none means every event.
		r, err := f.r.Replace(ctx, f.ann, channel.Input{ID: sprints.ID, Type: "WEBHOOK", Name: "sprints", Address: f.recv.URL + "/sprints"})
		if err != nil || len(r.Events) != 0 || len(f.channel(t, sprints.ID).Events) != 0 {
			t.Errorf("replace without events: %+v, %v", r, err)
		}

		many := make([]string, channel.MaxSubscriptions+1)
		for i := range many {
			many[i] = fmt.Sprintf("task.x%d", i)
		}
		for _, bad := range [][]string{{"nope.never"}, {"*"}, {"zzz.*"}, {"task."}, {"task.trashed", "Task.*"}, many} {
			_, err := f.r.Add(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "bad", Address: f.recv.URL + "/bad", Events: bad})
			if !isInputError(err, "events") {
				t.Errorf("add with events %.40v: %v", bad, err)
			}
			_, err = f.r.Replace(ctx, f.ann, channel.Input{ID: tasks.ID, Type: "WEBHOOK", Name: "tasks", Address: f.recv.URL + "/tasks", Events: bad})
			if !isInputError(err, "events") {
				t.Errorf("replace with events %.40v: %v", bad, err)
			}
		}
		if got := f.channel(t, tasks.ID).Events; !slices.Equal(got, []string{"task.*"}) {
			t.Errorf("refused replaces changed the subscription to %v", got)
		}
	})
}

// 500, 500, 200: three attempts on the schedule, logged, one webhook-id,
// SUCCEEDED; the failure clock counts and then resets.
func TestRetries(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		ev := newEvent("task.trashed")
		f.recv.answer(500, "oops")
		f.publish(t, 10, ev)
		start := f.clock.Now()
		if n := f.run(t); n != 1 {
			t.Fatalf("first attempt: claimed %d", n)
		}
		d := f.only(t, hook.ID)
		if d.Status != channel.DeliveryPending || d.Attempts != 1 || d.LastStatusCode != 500 ||
			d.LastError != "the webhook answered 500 Internal Server Error" || d.NextAttemptDate == nil ||
			d.NextAttemptDate.Before(start.Add(54*time.Second)) || d.NextAttemptDate.After(start.Add(66*time.Second)) {
			t.Fatalf("after one failure: %+v (next %v)", d, d.NextAttemptDate)
		}
		f.clock.Advance(50 * time.Second)
		if n := f.run(t); n != 0 {
			t.Fatalf("claimed %d before the next attempt was due", n)
		}
		f.clock.Advance(20 * time.Second)
		if n := f.run(t); n != 1 {
			t.Fatalf("second attempt: claimed %d", n)
		}
		f.clock.Advance(67 * time.Minute)
		f.recv.answer(200, "thanks")
		if n := f.run(t); n != 1 {
			t.Fatalf("third attempt: claimed %d", n)
		}
		d = f.only(t, hook.ID)
		if d.Status != channel.DeliverySucceeded || d.Attempts != 3 || d.LastStatusCode != 200 || d.LastError != "" || d.NextAttemptDate != nil {
			t.Errorf("after success: %+v", d)
		}
		var codes []int
		for _, a := range f.attempts(t, d.ID) {
			codes = append(codes, a.StatusCode)
		}
		if !slices.Equal(codes, []int{500, 500, 200}) {
			t.Errorf("attempt statuses %v", codes)
		}
		f.recv.mu.Lock()
		ids := map[string]bool{}
		for _, r := range f.recv.reqs {
			ids[r.Header.Get("webhook-id")] = true
		}
		f.recv.mu.Unlock()
		if len(ids) != 1 || !ids[ev.ID] || f.recv.count() != 3 {
			t.Errorf("%d requests with webhook-ids %v", f.recv.count(), ids)
		}
		verifyWebhook(t, f.recv, hook.Secret)
		if c := f.channel(t, hook.ID); !c.Enabled {
			t.Errorf("channel %+v", c)
		}
	})
}

// The schedule's last failure ends the delivery FAILED; a redirect is a
// failure.
func TestScheduleEnds(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{RetrySchedule: []time.Duration{0, time.Minute}})
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		f.recv.answer(302, "")
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		f.clock.Advance(2 * time.Minute)
		f.run(t)
		d := f.only(t, hook.ID)
		if d.Status != channel.DeliveryFailed || d.Attempts != 2 || d.LastStatusCode != 302 || d.FinishedDate == nil ||
			!strings.Contains(d.LastError, "redirect") {
			t.Errorf("delivery %+v", d)
		}
		f.clock.Advance(time.Hour)
		if n := f.run(t); n != 0 {
			t.Errorf("a failed delivery was claimed again")
		}
	})
}

// A Retry-After on 429 pushes the next attempt out beyond the schedule.
func TestRetryAfter(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		var mu sync.Mutex
		hits := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits++
			mu.Unlock()
			w.Header().Set("Retry-After", "7200")
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		t.Cleanup(srv.Close)
		hook := f.add(t, f.ann, "WEBHOOK", "hook", srv.URL+"/hook", nil)
		f.publish(t, 10, newEvent("task.trashed"))
		start := f.clock.Now()
		f.run(t)
		d := f.only(t, hook.ID)
		if d.LastStatusCode != 429 || d.NextAttemptDate == nil || d.NextAttemptDate.Before(start.Add(2*time.Hour)) {
			t.Fatalf("after 429 with Retry-After 7200: %+v, next %v", d, d.NextAttemptDate)
		}
		f.clock.Advance(time.Hour)
		if n := f.run(t); n != 0 {
			t.Fatal("attempted before the Retry-After")
		}
		f.clock.Advance(time.Hour + time.Second)
		if n := f.run(t); n != 1 {
			t.Fatal("not attempted after the Retry-After")
		}
		mu.Lock()
		defer mu.Unlock()
		if hits != 2 {
			t.Errorf("%d requests, want 2", hits)
		}
	})
}

// A webhook answering 410 is disabled at once, its delivery FAILED, and
// channel.disabled reaches the tenant's other channels (not another
// tenant's), with a null actor.
func TestGoneDisables(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		gone := startReceiver(t)
		gone.answer(http.StatusGone, "")
		other := f.add(t, f.ann, "WEBHOOK", "other", f.recv.URL+"/other", nil)
		dead := f.add(t, f.ann, "WEBHOOK", "dead", gone.URL+"/dead", nil)
		evesRecv := startReceiver(t)
		f.add(t, f.eve, "WEBHOOK", "eve's", evesRecv.URL+"/eve", nil)

		f.publish(t, 10, newEvent("task.trashed"))
		if n := f.run(t); n != 2 {
			t.Fatalf("claimed %d, want 2", n)
		}
		c := f.channel(t, dead.ID)
		if c.Enabled || !strings.Contains(c.DisabledReason, "410") || c.DisabledDate == nil || !c.DisabledDate.Equal(f.clock.Now()) {
			t.Fatalf("after 410: %+v", c)
		}
		d := f.only(t, dead.ID)
		if d.Status != channel.DeliveryFailed || d.Attempts != 1 || d.LastStatusCode != 410 {
			t.Errorf("the 410 delivery %+v", d)
		}
		if n := f.run(t); n != 1 {
			t.Fatalf("claimed %d, want the channel.disabled delivery", n)
		}
		_, body := verifyWebhook(t, f.recv, other.Secret)
		data, _ := body["data"].(map[string]any)
		if body["type"] != channel.EventChannelDisabled || data["channelId"] != float64(dead.ID) ||
			data["name"] != "dead" || data["actor"] != nil || data["tenantId"] != float64(10) ||
			!strings.Contains(data["reason"].(string), "410") || data["cause"] != "gone" {
			t.Errorf("channel.disabled body %v", body)
		}
		if gone.count() != 1 || evesRecv.count() != 0 {
			t.Errorf("the gone receiver got %d, eve's %d", gone.count(), evesRecv.count())
		}

		// Disabled, it gets nothing new.
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		if l := f.deliveries(t, dead.ID); len(l) != 1 || gone.count() != 1 {
			t.Errorf("a disabled channel got a delivery: %+v", l)
		}
		if l := f.deliveries(t, other.ID); len(l) != 3 {
			t.Errorf("the other channel has %d deliveries, want 3", len(l))
		}

		// Enabled again, its clock is clear and it gets new events.
		gone.answer(204, "")
		c, err := f.r.Enable(context.Background(), f.ann, dead.ID)
		if err != nil || !c.Enabled || c.DisabledReason != "" || c.DisabledDate != nil {
			t.Fatalf("enable: %+v, %v", c, err)
		}
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		if gone.count() != 2 {
			t.Errorf("the enabled channel got %d requests, want 2", gone.count())
		}
	})
}

// A channel whose attempts all failed for DisableAfter, with at least
// DisableMinFailures of them, is disabled; its pending deliveries end
// FAILED with "channel disabled".
func TestDeadChannelDisabled(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{
			RetrySchedule: []time.Duration{0, time.Hour, time.Hour, time.Hour, time.Hour},
			DisableAfter:  2 * time.Hour, DisableMinFailures: 4,
		})
		f.recv.answer(503, "down")
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		watcher := startReceiver(t)
		f.add(t, f.ann, "WEBHOOK", "watcher", watcher.URL+"/w", nil)

		// Failures 1 and 2 at 0; 3 and 4 at 70 min: four failures, but
		// not for two hours yet.
		f.publish(t, 10, newEvent("task.trashed"))
		f.publish(t, 10, newEvent("task.restored"))
		f.run(t)
		f.clock.Advance(70 * time.Minute)
		f.run(t)
		if c := f.channel(t, hook.ID); !c.Enabled {
			t.Fatalf("disabled after 70 minutes: %+v", c)
		}
		// Failure 5 at 140 min, with two hours of failures: disabled.
		f.clock.Advance(70 * time.Minute)
		f.publish(t, 10, newEvent("sprint.trashed"))
		f.run(t)
		c := f.channel(t, hook.ID)
		if c.Enabled || !strings.Contains(c.DisabledReason, "failed for") || !strings.Contains(c.DisabledReason, "503") {
			t.Fatalf("after two hours of failures: %+v", c)
		}
		sent := f.recv.count()
		f.clock.Advance(3 * time.Hour)
		for f.run(t) > 0 {
		}
		for _, d := range f.deliveries(t, hook.ID) {
			if d.Status != channel.DeliveryFailed || d.LastError != "channel disabled" {
				t.Errorf("delivery after the disabling: %+v", d)
			}
		}
		if f.recv.count() != sent {
			t.Errorf("the disabled channel got %d more requests", f.recv.count()-sent)
		}
		var disabled int
		var data json.RawMessage
		watcher.mu.Lock()
		for _, b := range watcher.bodies {
			if strings.Contains(string(b), `"channel.disabled"`) {
				disabled++
				var body struct{ Data json.RawMessage }
				if err := json.Unmarshal(b, &body); err != nil {
					t.Fatal(err)
				}
				data = body.Data
			}
		}
		watcher.mu.Unlock()
		// The data say the cause, so that a delivery in Chinese states it
		// in Chinese, the receiver's error as recorded.
		var d channel.ChannelDisabledData
		if err := json.Unmarshal(data, &d); err != nil || d.Cause != "failures" || d.FailingSeconds != 140*60 || d.Attempts != 5 ||
			d.Reason != "deliveries failed for 2 hours 20 minutes (5 attempts); the last: "+d.LastError || !strings.Contains(d.LastError, "503") {
			t.Errorf("channel.disabled data %s (%v)", data, err)
		}
		// Its messages, as stored, are written in Chinese at delivery.
		msgs, err := deskkit.NewMessages()
		if err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := db.NewSelect().Table("deskkit_outbox_events").Column("messages").
			Where("event_type = ?", channel.EventChannelDisabled).Scan(context.Background(), &stored); err != nil {
			t.Fatal(err)
		}
		var em struct{ Title, Text deskkit.Text }
		if err := json.Unmarshal([]byte(stored), &em); err != nil {
			t.Fatalf("stored messages %s: %v", stored, err)
		}
		text := em.Text.LocalizedMessage(msgs, language.SimplifiedChinese)
		// The last error is written in Chinese too, the far end's words
		// (the status's name) kept.
		if want := "已被 deskkit 自动禁用：推送已连续失败 2 小时 20 分钟（尝试 5 次）；最后一次：Webhook 返回 503 Service Unavailable。管理员重新启用前，该通道不会再收到事件。"; text != want {
			t.Errorf("written in Chinese %q, want %q", text, want)
		}
		if disabled != 1 {
			t.Errorf("the watcher got %d channel.disabled events, want 1", disabled)
		}
	})
}

// Disabling by hand ends pending deliveries, announces the disabling with
// the admin as actor, and is idempotent.
func TestDisableByHand(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		watcher := f.add(t, f.ann, "WEBHOOK", "watcher", f.recv.URL+"/w", nil)
		off := startReceiver(t)
		hook := f.add(t, f.ann, "WEBHOOK", "hook", off.URL+"/h", nil)
		f.publish(t, 10, newEvent("task.trashed"))
		c, err := f.r.Disable(ctx, f.ann, hook.ID)
		if err != nil || c.Enabled || c.DisabledReason != "disabled by user 1" || c.DisabledDate == nil {
			t.Fatalf("disable: %+v, %v", c, err)
		}
		if d := f.only(t, hook.ID); d.Status != channel.DeliveryFailed || d.LastError != "channel disabled" || d.Attempts != 0 {
			t.Errorf("pending delivery after disable: %+v", d)
		}
		if _, err := f.r.Disable(ctx, f.ann, hook.ID); err != nil {
			t.Fatal(err)
		}
		for f.run(t) > 0 {
		}
		if off.count() != 0 {
			t.Errorf("the disabled channel got %d requests", off.count())
		}
		var types []string
		for _, d := range f.deliveries(t, watcher.ID) {
			types = append(types, d.EventType)
		}
		if !slices.Equal(types, []string{"channel.disabled", "task.trashed"}) {
			t.Errorf("the watcher's deliveries %v", types)
		}
		f.recv.mu.Lock()
		var found bool
		for _, b := range f.recv.bodies {
			found = found || strings.Contains(string(b), `"actor":{"id":1,"name":""}`)
		}
		f.recv.mu.Unlock()
		if !found {
			t.Error("no channel.disabled with the admin as actor")
		}
	})
}

// Resend makes one more attempt of a finished delivery; Recover queues a
// channel's failed deliveries since a time with the whole schedule.
func TestResendRecover(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{RetrySchedule: []time.Duration{0}})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		f.recv.answer(500, "")
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		d := f.only(t, hook.ID)
		if d.Status != channel.DeliveryFailed {
			t.Fatalf("after the only attempt: %+v", d)
		}
		f.clock.Advance(time.Minute)
		f.recv.answer(200, "")
		r, err := f.r.Resend(ctx, f.ann, d.ID)
		if now := f.clock.Now(); err != nil || r.Status != channel.DeliveryPending || r.NextAttemptDate == nil || !r.NextAttemptDate.Equal(now) {
			t.Fatalf("resend: %+v, %v", r, err)
		}
		if n := f.run(t); n != 1 {
			t.Fatalf("claimed %d after resend", n)
		}
		if d := f.only(t, hook.ID); d.Status != channel.DeliverySucceeded || d.Attempts != 2 {
			t.Errorf("after resend: %+v", d)
		}

		// Two failures, one before since and one after.
		f.recv.answer(500, "")
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		f.clock.Advance(time.Minute)
		since := f.clock.Now()
		f.publish(t, 10, newEvent("task.restored"))
		f.run(t)
		if _, err := f.r.Recover(ctx, f.ann, hook.ID, time.Time{}); !isInputError(err, "since") {
			t.Errorf("recover without since: %v", err)
		}
		f.recv.answer(200, "")
		n, err := f.r.Recover(ctx, f.ann, hook.ID, since)
		if err != nil || n != 1 {
			t.Fatalf("recover = %d, %v; want 1", n, err)
		}
		if n := f.run(t); n != 1 {
			t.Fatalf("claimed %d after recover", n)
		}
		page, err := f.r.Deliveries(ctx, f.ann, hook.ID, channel.DeliveryFilter{Status: channel.DeliveryFailed}, 0, 0)
		if err != nil || page.Total != 1 || page.List[0].EventType != "task.trashed" {
			t.Errorf("failed deliveries after recover: %+v, %v", page, err)
		}

		// A disabled channel is neither resent nor recovered.
		if _, err := f.r.Disable(ctx, f.ann, hook.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.r.Resend(ctx, f.ann, d.ID); !errors.Is(err, channel.ErrChannelDisabled) || !errors.Is(err, deskkit.ErrConflict) {
			t.Errorf("resend on a disabled channel: %v", err)
		}
		if _, err := f.r.Recover(ctx, f.ann, hook.ID, since); !errors.Is(err, channel.ErrChannelDisabled) {
			t.Errorf("recover on a disabled channel: %v", err)
		}
	})
}

// Deliveries pages newest first and checks its parameters.
func TestDeliveriesPaging(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		var ids []string
		for range 5 {
			ev := newEvent("task.trashed")
			ids = append(ids, ev.ID)
			f.publish(t, 10, ev)
		}
		page, err := f.r.Deliveries(ctx, f.ann, hook.ID, channel.DeliveryFilter{}, 2, 2)
		if err != nil || page.Total != 5 || len(page.List) != 2 || page.List[0].EventID != ids[2] || page.List[1].EventID != ids[1] {
			t.Errorf("page 2 of 2: %+v, %v", page, err)
		}
		page, err = f.r.Deliveries(ctx, f.ann, hook.ID, channel.DeliveryFilter{Status: channel.DeliverySucceeded}, 1, 10)
		if err != nil || page.Total != 0 || page.List == nil {
			t.Errorf("succeeded: %+v, %v", page, err)
		}
		for _, c := range []struct {
			status       string
			pageNo, size int
			field        string
		}{
			{"DONE", 1, 10, "status"},
			{"pending", 1, 10, "status"},
			{"", -1, 10, "pageNo"},
			{"", channel.MaxPageNo + 1, 10, "pageNo"},
			{"", 1, -1, "pageSize"},
			{"", 1, channel.MaxPageSize + 1, "pageSize"},
		} {
			if _, err := f.r.Deliveries(ctx, f.ann, hook.ID, channel.DeliveryFilter{Status: c.status}, c.pageNo, c.size); !isInputError(err, c.field) {
				t.Errorf("deliveries %q %d %d: %v; want an input error for %s", c.status, c.pageNo, c.size, err, c.field)
			}
		}
		if _, err := f.r.Deliveries(ctx, f.ann, 0, channel.DeliveryFilter{}, 1, 10); !isInputError(err, "channelId") {
			t.Errorf("deliveries of channel 0: %v", err)
		}
	})
}

// Deliveries filters by status, event types and a creation range (from
// inclusive, to exclusive), each alone and together, and refuses a bad
// filter naming its field, before it reads anything.
func TestDeliveriesFilter(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		start := f.clock.Now()
		var ids []string
		for i := range 4 {
			ev := newEvent([]string{"task.trashed", "task.restored"}[i%2])
			ids = append(ids, ev.ID)
			f.publish(t, 10, ev)
			f.clock.Advance(time.Hour)
		}
		at := func(h int) time.Time { return start.Add(time.Duration(h) * time.Hour) }
		for _, c := range []struct {
			name string
			f    channel.DeliveryFilter
			want []string
		}{
			{"every", channel.DeliveryFilter{}, []string{ids[3], ids[2], ids[1], ids[0]}},
			{"type", channel.DeliveryFilter{Types: []string{"task.restored"}}, []string{ids[3], ids[1]}},
			{"type given twice", channel.DeliveryFilter{Types: []string{"task.restored", "task.restored"}}, []string{ids[3], ids[1]}},
			{"from", channel.DeliveryFilter{From: at(2)}, []string{ids[3], ids[2]}},
			{"to", channel.DeliveryFilter{To: at(1)}, []string{ids[0]}},
			{"range and type", channel.DeliveryFilter{From: at(1), To: at(3), Types: []string{"task.trashed"}}, []string{ids[2]}},
			{"range and status", channel.DeliveryFilter{From: at(1), Status: channel.DeliverySucceeded}, nil},
			{"range and pending", channel.DeliveryFilter{From: at(3), Status: channel.DeliveryPending}, []string{ids[3]}},
		} {
			page, err := f.r.Deliveries(ctx, f.ann, hook.ID, c.f, 1, 10)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var got []string
			for _, d := range page.List {
				got = append(got, d.EventID)
			}
			if !slices.Equal(got, c.want) || page.Total != int64(len(c.want)) {
				t.Errorf("%s: %d %v, want %v", c.name, page.Total, got, c.want)
			}
		}
		many := make([]string, channel.MaxFilterTypes+1)
		for i := range many {
			many[i] = fmt.Sprintf("t.%d", i)
		}
		for _, c := range []struct {
			name  string
			f     channel.DeliveryFilter
			field string
		}{
			{"bad type", channel.DeliveryFilter{Types: []string{"Task.Trashed"}}, "eventType"},
			{"empty type", channel.DeliveryFilter{Types: []string{""}}, "eventType"},
			{"too many types", channel.DeliveryFilter{Types: many}, "eventType"},
			{"from after to", channel.DeliveryFilter{From: at(2), To: at(1)}, "from"},
			{"from equal to", channel.DeliveryFilter{From: at(2), To: at(2)}, "from"},
			{"year 10000", channel.DeliveryFilter{To: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "to"},
		} {
			if _, err := f.r.Deliveries(ctx, f.ann, hook.ID, c.f, 1, 10); !isInputError(err, c.field) {
				t.Errorf("%s: %v; want an input error for %s", c.name, err, c.field)
			}
		}
	})
}

// Housekeeping purges attempts and finished deliveries older than the
// retention, and keeps the rest.
func TestHousekeeping(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{LogRetention: 24 * time.Hour})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		f.clock.Advance(23 * time.Hour)
		f.recv.answer(500, "")
		f.publish(t, 10, newEvent("task.restored")) // pending: kept whatever its age
		f.run(t)
		if err := channel.Housekeep(ctx, f.r); err != nil {
			t.Fatal(err)
		}
		if l := f.deliveries(t, hook.ID); len(l) != 2 {
			t.Fatalf("housekeeping before the retention left %d deliveries", len(l))
		}
		f.clock.Advance(2 * time.Hour)
		if err := channel.Housekeep(ctx, f.r); err != nil {
			t.Fatal(err)
		}
		l := f.deliveries(t, hook.ID)
		if len(l) != 1 || l[0].EventType != "task.restored" || l[0].Status != channel.DeliveryPending {
			t.Fatalf("after the retention: %+v", l)
		}
		var attempts, events int
		if err := db.NewRaw("SELECT count(*) FROM deskkit_outbox_attempts").Scan(ctx, &attempts); err != nil {
			t.Fatal(err)
		}
		if err := db.NewRaw("SELECT count(*) FROM deskkit_outbox_events").Scan(ctx, &events); err != nil {
			t.Fatal(err)
		}
		if attempts != 1 || events != 1 {
			t.Errorf("after the retention: %d attempts and %d events, want 1 and 1", attempts, events)
		}
	})
}

// Non-admins may use no admin method, and change nothing trying; another
// tenant's channels and deliveries do not exist for a principal.
func TestEventsAuthorization(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{RetrySchedule: []time.Duration{0}})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		f.recv.answer(500, "")
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		d := f.only(t, hook.ID)
		before := f.channel(t, hook.ID)

		since := f.clock.Now().Add(-time.Hour)
		calls := func(p deskkit.Principal) map[string]error {
			out := map[string]error{}
			_, out["enable"] = f.r.Enable(ctx, p, hook.ID)
			_, out["disable"] = f.r.Disable(ctx, p, hook.ID)
			_, out["deliveries"] = f.r.Deliveries(ctx, p, hook.ID, channel.DeliveryFilter{}, 1, 10)
			_, out["attempts"] = f.r.Attempts(ctx, p, d.ID)
			_, out["resend"] = f.r.Resend(ctx, p, d.ID)
			_, out["recover"] = f.r.Recover(ctx, p, hook.ID, since)
			return out
		}
		carl := deskkit.Principal{UserID: 5, TenantID: 10}
		for op, err := range calls(carl) {
			if !errors.Is(err, channel.ErrForbidden) {
				t.Errorf("%s by a non-admin: %v; want ErrForbidden", op, err)
			}
		}
		for op, err := range calls(f.eve) {
			if !errors.Is(err, channel.ErrNotFound) {
				t.Errorf("%s by another tenant's admin: %v; want ErrNotFound", op, err)
			}
		}
		for op, err := range calls(deskkit.Principal{TenantID: 10}) {
			if !errors.Is(err, channel.ErrUnauthenticated) {
				t.Errorf("%s without a user: %v", op, err)
			}
		}
		if diff := cmp.Diff(before, f.channel(t, hook.ID)); diff != "" {
			t.Errorf("refused calls changed the channel (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(d, f.only(t, hook.ID)); diff != "" {
			t.Errorf("refused calls changed the delivery (-before +after):\n%s", diff)
		}
		if n := f.run(t); n != 0 {
			t.Errorf("refused calls queued %d attempts", n)
		}
		// Every user may list, masked.
		l, err := f.r.ListAll(ctx, carl)
		if err != nil || len(l) != 1 || l[0].Address != f.recv.URL+"/***" {
			t.Errorf("a non-admin's list: %+v, %v", l, err)
		}
	})
}

// An e-mail channel's delivery succeeds when the mail server took the
// message for every address; a retry goes only to the addresses that
// failed.
func TestEmailDelivery(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		mail := f.add(t, f.ann, "EMAIL", "ops", "ann@example.com,bob@example.com", nil)
		f.failTo("bob@example.com")
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		d := f.only(t, mail.ID)
		if d.Status != channel.DeliveryPending || !strings.Contains(d.LastError, "bob@example.com") {
			t.Fatalf("after bob's failure: %+v", d)
		}
		a := f.attempts(t, d.ID)
		if len(a) != 1 || !strings.Contains(a[0].Response, "took the message for ann@example.com") || !strings.Contains(a[0].Response, "not taken: bob@example.com") {
			t.Errorf("attempt %+v", a)
		}
		f.failTo()
		f.clock.Advance(2 * time.Minute)
		f.run(t)
		if d := f.only(t, mail.ID); d.Status != channel.DeliverySucceeded {
			t.Errorf("after the retry: %+v", d)
		}
		if ann, bob := len(f.sendFixture.mail.To("ann@example.com")), len(f.sendFixture.mail.To("bob@example.com")); ann != 1 || bob != 1 {
			t.Errorf("ann got %d mails and bob %d, want 1 each", ann, bob)
		}
		// A resend of the delivered event goes to every address.
		if _, err := f.r.Resend(context.Background(), f.ann, d.ID); err != nil {
			t.Fatal(err)
		}
		f.run(t)
		if ann, bob := len(f.sendFixture.mail.To("ann@example.com")), len(f.sendFixture.mail.To("bob@example.com")); ann != 2 || bob != 2 {
			t.Errorf("after a resend ann got %d mails and bob %d, want 2 each", ann, bob)
		}
	})
}

// A robot's reply that echoes its key is logged with the key masked.
func TestRobotResponseRedacted(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		const key = "secret-robot-key-4711"
		robot := f.add(t, f.ann, "WECHAT", "robot", f.recv.URL+"/cgi-bin/webhook/send?key="+key, nil)
		f.recv.answer(200, `{"errcode":93000,"errmsg":"invalid webhook url, key=`+key+`"}`)
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		d := f.only(t, robot.ID)
		a := f.attempts(t, d.ID)
		if d.Status != channel.DeliveryPending || len(a) != 1 || strings.Contains(a[0].Response+a[0].Error+d.LastError, key) ||
			!strings.Contains(a[0].Response, "key=***") || !strings.Contains(a[0].Error, "93000") {
			t.Errorf("robot refusal logged as %+v / %+v", d, a)
		}
	})
}

// Run delivers what is published, stops when its context ends, and runs
// once per registry.
func TestRun(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		got := make(chan string, 10)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			got <- r.Header.Get("webhook-id")
			w.WriteHeader(204)
		}))
		t.Cleanup(srv.Close)
		f.add(t, f.ann, "WEBHOOK", "hook", srv.URL+"/hook", nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.r.Run(ctx) }()

		ev := newEvent("task.trashed")
		f.publish(t, 10, ev)
		select {
		case id := <-got:
			if id != ev.ID {
				t.Errorf("webhook-id %q, want %q", id, ev.ID)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not deliver within 30 s")
		}
		if err := f.r.Run(ctx); err == nil {
			t.Error("a second Run on one registry started")
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	})
}

// When Run's context ends it claims nothing new and returns only after
// the attempt in flight was made and recorded.
func TestRunShutdown(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		arrived, release := make(chan struct{}, 10), make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			arrived <- struct{}{}
			<-release
			w.WriteHeader(204)
		}))
		t.Cleanup(srv.Close)
		hook := f.add(t, f.ann, "WEBHOOK", "hook", srv.URL+"/hook", nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.r.Run(ctx) }()
		first := newEvent("task.trashed")
		f.publish(t, 10, first)
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not attempt within 30 s")
		}
		cancel()
		second := newEvent("task.restored")
		f.publish(t, 10, second)
		select {
		case <-done:
			t.Fatal("Run returned with an attempt in flight")
		default:
		}
		close(release)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return")
		}
		status := map[string]string{}
		for _, d := range f.deliveries(t, hook.ID) {
			status[d.EventID] = d.Status + fmt.Sprint(d.Attempts)
		}
		if want := map[string]string{first.ID: "SUCCEEDED1", second.ID: "PENDING0"}; !cmp.Equal(status, want) {
			t.Errorf("after shutdown %v, want %v", status, want)
		}
	})
}

// Two registries on one database (two replicas) share the queue: every
// event reaches the receiver exactly once.
func TestReplicasShareTheQueue(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		var mu sync.Mutex
		seen := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			mu.Lock()
			seen[r.Header.Get("webhook-id")]++
			mu.Unlock()
			w.WriteHeader(204)
		}))
		t.Cleanup(srv.Close)
		f.add(t, f.ann, "WEBHOOK", "hook", srv.URL+"/hook", nil)
		other, err := channel.New(db, sendSecret, nil, &channel.Config{AllowPrivateNetworks: true, Now: f.clock.Now,
			RetrySchedule: shortSchedule})
		if err != nil {
			t.Fatal(err)
		}
		const events = 120
		for i := range events {
			ev := newEvent("task.trashed")
			ev.ID = fmt.Sprintf("msg_replica_%03d", i)
			f.publish(t, 10, ev)
		}
		ctx := context.Background()
		for rounds := 0; ; rounds++ {
			var wg sync.WaitGroup
			var n1, n2 int
			var err1, err2 error
			wg.Go(func() { n1, err1 = channel.RunOnce(ctx, f.r) })
			wg.Go(func() { n2, err2 = channel.RunOnce(ctx, other) })
			wg.Wait()
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if n1+n2 == 0 {
				break
			}
			if rounds > events {
				t.Fatal("the queue does not drain")
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != events {
			t.Errorf("%d distinct events arrived, want %d", len(seen), events)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s arrived %d times", id, n)
			}
		}
	})
}

// A success resets a failure clock that another replica started: the
// registry skips the reset for channels whose clock did not run when
// their batch was read, and this one's did.
func TestSuccessResetsAnotherReplicasClock(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := newEvFixture(t, db, channel.Config{})
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		clock := func() (n int, since *int64) {
			t.Helper()
			if err := db.NewRaw("SELECT failed_attempts, failing_since_ms FROM deskkit_channels WHERE tenant_id = 10 AND id = ?", hook.ID).
				Scan(ctx, &n, &since); err != nil {
				t.Fatal(err)
			}
			return n, since
		}
		// A healthy channel's success leaves the clock as it was.
		f.publish(t, 10, newEvent("task.trashed"))
		f.run(t)
		if n, since := clock(); n != 0 || since != nil {
			t.Fatalf("after a success: %d failed attempts since %v", n, since)
		}
		// Another replica counted three failures.
		if _, err := db.NewRaw("UPDATE deskkit_channels SET failed_attempts = 3, failing_since_ms = ? WHERE tenant_id = 10 AND id = ?",
			f.clock.Now().UnixMilli(), hook.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		f.publish(t, 10, newEvent("task.restored"))
		f.run(t)
		if n, since := clock(); n != 0 || since != nil {
			t.Errorf("after this replica's success: %d failed attempts since %v, want the clock reset", n, since)
		}
	})
}
