package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/trash"
)

// hook is one request a receiver got.
type hook struct {
	Header http.Header
	Body   []byte
}

// id is the request's webhook-id.
func (h hook) id() string { return h.Header.Get("webhook-id") }

// event is a Standard Webhooks body.
type event struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// waitFor bounds every wait of these tests for something that happens in
// the background: a request reaching a receiver, serve returning.
const waitFor = 10 * time.Second

// receiver is a webhook receiver on loopback. It keeps what it gets, hands
// each request to arrived as it comes, and answers status(n), n counting
// the requests with that webhook-id so far (1 for the first attempt), once
// gate is open (nil: at once).
type receiver struct {
	*httptest.Server
	arrived chan hook

	gate      chan struct{}
	closeGate sync.Once

	mu       sync.Mutex
	got      []hook
	attempts map[string]int
}

func startReceiver(t *testing.T, status func(attempt int) int, gated bool) *receiver {
	t.Helper()
	rc := &receiver{arrived: make(chan hook, 64), attempts: map[string]int{}}
	if gated {
		rc.gate = make(chan struct{})
	}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("receiver: %v", err)
		}
		h := hook{Header: r.Header.Clone(), Body: body}
		rc.mu.Lock()
		rc.got = append(rc.got, h)
		rc.attempts[h.id()]++
		n := rc.attempts[h.id()]
		rc.mu.Unlock()
		rc.arrived <- h
		if rc.gate != nil {
			<-rc.gate
		}
		w.WriteHeader(status(n))
	}))
	t.Cleanup(func() {
		rc.open() // a test that failed early leaves no request hanging
		rc.Close()
	})
	return rc
}

// always answers status to every attempt.
func always(status int) func(int) int { return func(int) int { return status } }

// open lets the requests held at the gate, and those to come, through.
func (rc *receiver) open() {
	if rc.gate != nil {
		rc.closeGate.Do(func() { close(rc.gate) })
	}
}

// hooks returns what the receiver got so far.
func (rc *receiver) hooks() []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// next waits, at most waitFor, for the next request to arrive.
func (rc *receiver) next(t *testing.T) hook {
	t.Helper()
	select {
	case h := <-rc.arrived:
		return h
	case <-time.After(waitFor):
		t.Fatalf("no request reached the receiver within %s", waitFor)
		return hook{}
	}
}

// channelHost is the host with channels allowed on loopback, and a second
// tenant's key ("key-alan", Globex), run over loopback.
type channelHost struct {
	*verifyHost
	app *host
}

func startChannelHost(t *testing.T, opts *appOptions) *channelHost {
	t.Helper()
	log := &logBook{}
	db, err := openDB(filepath.Join(t.TempDir(), "embed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	o := appOptions{}
	if opts != nil {
		o = *opts
	}
	o.Logger = slog.New(slog.NewJSONHandler(log, nil))
	o.PasswordCost = bcrypt.MinCost
	o.AllowPrivateNetworks = true
	o.Keys = apiKeys{
		"key-ada":  {UserID: 1, TenantID: 1, Admin: true},
		"key-alan": {UserID: 3, TenantID: 2, Admin: true},
	}
	app, err := newApp(context.Background(), db, &o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	addColleagues(t, db)
	return &channelHost{verifyHost: &verifyHost{t: t, base: srv.URL, db: db, log: log}, app: app}
}

// startRun runs reg's event worker, as main does, until the returned stop
// is called or the test ends. stop cancels Run and waits for it to return:
// the attempts it had in flight are recorded by then.
func startRun(t *testing.T, reg *channel.ChannelRegistry) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// addWebhook adds a webhook channel to rc as Ada, subscribed to events
// (nil: every event), and returns it, secret included.
func (h *channelHost) addWebhook(name string, rc *receiver, events []string) channel.Added {
	h.t.Helper()
	var added channel.Added
	h.ok(http.MethodPost, "/api/v1/event/channel",
		map[string]any{"channelType": "WEBHOOK", "name": name, "address": rc.URL + "/hook", "events": events}, &added)
	if added.ID == 0 || !strings.HasPrefix(added.Secret, "whsec_") {
		h.t.Fatalf("add: %+v, want an id and a whsec_ secret", added)
	}
	return added
}

// deliveries is the channel's deliveries as Ada reads them, newest first.
func (h *channelHost) deliveries(channelID int64) channel.DeliveryPage {
	h.t.Helper()
	var page channel.DeliveryPage
	h.ok(http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries?pageSize=100", channelID), nil, &page)
	return page
}

// deleteTask deletes task id as Ada through the host's own route.
func (h *channelHost) deleteTask(id int64) {
	h.t.Helper()
	if status, body := h.do("key-ada", http.MethodDelete, fmt.Sprintf("/tasks/%d", id), nil); status != http.StatusOK || body != "moved to the trash\n" {
		h.t.Fatalf("delete task %d: %d %q", id, status, body)
	}
}

// signed checks h's signature with the official Standard Webhooks library
// and returns its body.
func signed(t *testing.T, secret string, h hook) event {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(h.Body, h.Header); err != nil {
		t.Fatalf("signature: %v\nheaders %v\nbody %s", err, h.Header, h.Body)
	}
	var ev event
	if err := json.Unmarshal(h.Body, &ev); err != nil {
		t.Fatalf("body %s: %v", h.Body, err)
	}
	return ev
}

// byType returns the events of hooks signed with secret, by type; two
// events of one type fail the test.
func byType(t *testing.T, secret string, hooks []hook) map[string]event {
	t.Helper()
	out := map[string]event{}
	for _, h := range hooks {
		ev := signed(t, secret, h)
		if _, dup := out[ev.Type]; dup {
			t.Fatalf("two %s events: %s", ev.Type, h.Body)
		}
		out[ev.Type] = ev
	}
	return out
}

// deleteEvents is the data of the two events of Ada deleting task 2, "Book
// the venue", of project 1, which went into the trash as entry trashID.
func deleteEvents(trashID float64) map[string]map[string]any {
	ada := map[string]any{"id": 1.0, "name": "Ada Lovelace"}
	return map[string]map[string]any{
		"task.trashed": {
			"tenantId": 1.0, "actor": ada, "projectId": 1.0, "trashId": trashID,
			"targetType": "TASK", "targetId": 2.0, "targetName": "Book the venue",
		},
		eventTaskDeleted: {
			"tenantId": 1.0, "actor": ada, "taskId": 2.0, "projectId": 1.0,
			"title": "Book the venue", "createdBy": 1.0,
		},
	}
}

// dataOf returns the data of each event, by type.
func dataOf(events map[string]event) map[string]map[string]any {
	out := map[string]map[string]any{}
	for typ, ev := range events {
		out[typ] = ev.Data
	}
	return out
}

// trashID is the id of the trash's entry for the task, as the
// task.trashed event names it.
func trashID(events map[string]event) float64 {
	id, _ := events["task.trashed"].Data["trashId"].(float64)
	return id
}

// TestChannelEvents: the catalogue lists the trash's event types and the
// host's; a webhook channel added through the API gets a signed test
// message; deleting a task publishes the trash's task.trashed and the
// host's task.deleted, which the event worker delivers, signed, each
// under a webhook-id of its own, to every channel subscribed to it; a
// failed delete publishes nothing; another tenant does not see the
// channels.
func TestChannelEvents(t *testing.T) {
	h := startChannelHost(t, nil)

	var types []deskkit.EventType
	h.ok(http.MethodGet, "/api/v1/event/types", nil, &types)
	var names []string
	for _, et := range types {
		names = append(names, et.Name)
	}
	for _, want := range []string{"task.trashed", "task.restored", "trash.purged", eventTaskDeleted, channel.EventChannelDisabled} {
		if !slices.Contains(names, want) {
			t.Errorf("the catalogue lacks %s: %v", want, names)
		}
	}

	rc := startReceiver(t, always(http.StatusNoContent), false)
	added := h.addWebhook("Ops", rc, nil)
	onlyHost := startReceiver(t, always(http.StatusNoContent), false)
	deletions := h.addWebhook("Deletions", onlyHost, []string{eventTaskDeleted})

	// The test message reaches the receiver at once, without the worker,
	// signed with the secret the add answered.
	var res channel.TestResult
	h.ok(http.MethodPost, "/api/v1/event/channel/test", map[string]any{
		"id": added.ID, "channelType": "WEBHOOK", "name": "Ops", "address": rc.URL + "/hook",
	}, &res)
	test := rc.next(t)
	if ev := signed(t, added.Secret, test); ev.Type != channel.TestEventType {
		t.Errorf("test message type %q, want %q", ev.Type, channel.TestEventType)
	}
	if test.id() != res.MessageID {
		t.Errorf("webhook-id %q, the test answered messageId %q", test.id(), res.MessageID)
	}
	// The verifier does check: another secret fails.
	other, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 43) + "=")
	if err := other.Verify(test.Body, test.Header); err == nil {
		t.Error("the signature verified under another secret")
	}

	// A delete that fails publishes nothing: no delivery is queued.
	if status, body := h.do("key-ada", http.MethodDelete, "/tasks/99", nil); status != http.StatusNotFound {
		t.Fatalf("delete of an unknown task: %d %s", status, body)
	}
	if page := h.deliveries(added.ID); page.Total != 0 {
		t.Errorf("deliveries after a failed delete: %+v, want none", page)
	}

	stop := startRun(t, h.app.channels)
	h.deleteTask(2)
	events := byType(t, added.Secret, []hook{rc.next(t), rc.next(t)})
	if diff := cmp.Diff(deleteEvents(trashID(events)), dataOf(events)); diff != "" {
		t.Errorf("events to Ops (-want +got):\n%s", diff)
	}
	if trashID(events) < 1 {
		t.Errorf("task.trashed names no trash entry: %v", events["task.trashed"].Data)
	}
	seen := map[string]bool{res.MessageID: true}
	for _, hk := range rc.hooks()[1:] {
		if !strings.HasPrefix(hk.id(), "msg_") || seen[hk.id()] {
			t.Errorf("event webhook-id %q: want a msg_ id of its own", hk.id())
		}
		seen[hk.id()] = true
	}
	// The channel subscribed to task.deleted gets that alone.
	if ev := signed(t, deletions.Secret, onlyHost.next(t)); ev.Type != eventTaskDeleted {
		t.Errorf("Deletions got %s, want %s only", ev.Type, eventTaskDeleted)
	}

	// Once the worker has stopped, every delivery is recorded: each
	// succeeded at its first attempt, and nothing else was sent.
	stop()
	for _, c := range []struct {
		id   int64
		rc   *receiver
		want []string // event types, newest first
	}{
		{added.ID, rc, []string{eventTaskDeleted, "task.trashed"}},
		{deletions.ID, onlyHost, []string{eventTaskDeleted}},
	} {
		page := h.deliveries(c.id)
		var got []string
		for _, d := range page.List {
			got = append(got, d.EventType)
			if d.Status != channel.DeliverySucceeded || d.Attempts != 1 || d.LastStatusCode != http.StatusNoContent {
				t.Errorf("channel %d: delivery %+v, want SUCCEEDED at the first attempt", c.id, d)
			}
		}
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) || page.Total != int64(len(c.want)) {
			t.Errorf("channel %d: deliveries of %v (total %d), want %v", c.id, got, page.Total, c.want)
		}
	}
	if n := len(rc.hooks()); n != 3 {
		t.Errorf("Ops got %d requests, want the test and two events", n)
	}
	if n := len(onlyHost.hooks()); n != 1 {
		t.Errorf("Deletions got %d requests, want one event", n)
	}

	// Channels are the tenant's: Globex's key lists none and cannot delete
	// Acme's; Ada still has hers.
	path := "/api/v1/event/channel/type/WEBHOOK"
	all := 1.0
	for _, c := range []struct {
		key  string
		want []channel.Channel
	}{
		{"key-alan", []channel.Channel{}},
		{"key-ada", []channel.Channel{
			// Healthy, every attempt of the day a success.
			{ID: added.ID, Type: channel.Webhook, Name: "Ops", Address: rc.URL + "/hook", Enabled: true, Events: []string{}, InFlightLimit: 4, Signing: channel.SigningHMAC,
				Health: channel.HealthHealthy, Attempts24h: 2, AttemptsSucceeded24h: 2, SuccessShare24h: &all, Headers: []channel.Header{}},
			{ID: deletions.ID, Type: channel.Webhook, Name: "Deletions", Address: onlyHost.URL + "/hook", Enabled: true, Events: []string{eventTaskDeleted}, InFlightLimit: 4, Signing: channel.SigningHMAC,
				Health: channel.HealthHealthy, Attempts24h: 1, AttemptsSucceeded24h: 1, SuccessShare24h: &all, Headers: []channel.Header{}},
		}},
	} {
		status, b := h.do(c.key, http.MethodGet, path, nil)
		var env struct{ Data []channel.Channel }
		if err := json.Unmarshal([]byte(b), &env); err != nil || status != http.StatusOK {
			t.Fatalf("list as %s: %d %v %s", c.key, status, err, b)
		}
		if diff := cmp.Diff(c.want, env.Data); diff != "" {
			t.Errorf("list as %s (-want +got):\n%s", c.key, diff)
		}
		if c.key == "key-alan" {
			if status, b := h.do("key-alan", http.MethodDelete, fmt.Sprintf("/api/v1/event/channel/%d", added.ID), nil); status != http.StatusNotFound {
				t.Errorf("delete of Acme's channel as Globex: %d %s, want 404", status, b)
			}
		}
	}
}

// errRollback is what a test's transaction returns to be rolled back.
var errRollback = errors.New("rolled back by the test")

// TestDeleteRolledBack: a delete whose transaction is rolled back sends
// nothing, although it had published both its events in it (the trash's
// and the host's): rolled back by the host after deleteTx, or by the trash
// refusing the entry. The worker, running all along, delivers the events of
// the one delete that commits, and those alone.
func TestDeleteRolledBack(t *testing.T) {
	h := startChannelHost(t, nil)
	rc := startReceiver(t, always(http.StatusNoContent), false)
	added := h.addWebhook("Ops", rc, nil)
	stop := startRun(t, h.app.channels)
	ctx := context.Background()
	ada := deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}

	// deleteTx publishes both events through the transaction: they are
	// there inside it, and gone with its rollback.
	err := h.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := h.app.deleteTx(ctx, tx, ada, 1); err != nil {
			return err
		}
		var types []string
		err := tx.NewSelect().Table("deskkit_outbox_events").Column("event_type").OrderExpr("event_type").Scan(ctx, &types)
		if err != nil {
			return err
		}
		if want := []string{eventTaskDeleted, "task.trashed"}; !slices.Equal(types, want) {
			t.Errorf("events inside the delete's transaction: %v, want %v", types, want)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("the rolled-back delete: %v", err)
	}

	// A title longer than the trash takes: the trash refuses the entry,
	// and the task stays.
	long := task{TenantID: 1, ProjectID: 1, Title: strings.Repeat("x", trash.MaxNameLength+1), CreatedBy: 1}
	if _, err := h.db.NewInsert().Model(&long).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if status, body := h.do("key-ada", http.MethodDelete, fmt.Sprintf("/tasks/%d", long.ID), nil); status != http.StatusBadRequest || !strings.Contains(body, "512") {
		t.Errorf("delete of a long title: %d %q, want 400 saying the limit", status, body)
	}

	if page := h.deliveries(added.ID); page.Total != 0 {
		t.Errorf("deliveries after the rollbacks: %+v, want none", page)
	}
	var events int
	if err := h.db.NewSelect().Table("deskkit_outbox_events").ColumnExpr("count(*)").Scan(ctx, &events); err != nil || events != 0 {
		t.Errorf("events in the outbox after the rollbacks: %d %v, want 0", events, err)
	}
	_, body := h.do("key-ada", http.MethodGet, "/tasks", nil)
	if !strings.Contains(body, `"id":1,`) {
		t.Errorf("task 1 is gone after its delete was rolled back: %s", body)
	}

	// The delete that commits is delivered, and nothing else ever was.
	h.deleteTask(2)
	events2 := byType(t, added.Secret, []hook{rc.next(t), rc.next(t)})
	if diff := cmp.Diff(deleteEvents(trashID(events2)), dataOf(events2)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	stop()
	if n := len(rc.hooks()); n != 2 {
		t.Errorf("the receiver got %d requests, want the 2 events of the delete that committed", n)
	}
	if page := h.deliveries(added.ID); page.Total != 2 {
		t.Errorf("deliveries: %+v, want 2", page)
	}
}

// TestEventsSurviveRestart: events committed while no worker runs are not
// lost when the process stops: a host started later over the same database
// delivers them.
func TestEventsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "embed.db")
	secret := []byte(strings.Repeat("s", 32)) // the same across the restart
	ada := deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}
	start := func() (*host, *bun.DB) {
		t.Helper()
		db, err := openDB(path)
		if err != nil {
			t.Fatal(err)
		}
		app, err := newApp(context.Background(), db, &appOptions{
			Logger: slog.New(slog.DiscardHandler), Secret: secret, AllowPrivateNetworks: true,
		})
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		return app, db
	}
	rc := startReceiver(t, always(http.StatusNoContent), false)

	// The first process adds a channel and deletes a task, and stops
	// without ever running the worker.
	first, db := start()
	added, err := first.channels.Add(context.Background(), ada, channel.Input{Type: "WEBHOOK", Name: "Ops", Address: rc.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodDelete, "/tasks/2", nil)
	req.Header.Set("Authorization", "Bearer key-ada")
	rec := httptest.NewRecorder()
	first.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	page, err := first.channels.Deliveries(context.Background(), ada, added.ID, channel.DeliveryFilter{Status: channel.DeliveryPending}, 1, 10)
	if err != nil || page.Total != 2 {
		t.Fatalf("pending deliveries before the stop: %+v %v, want 2", page, err)
	}
	if n := len(rc.hooks()); n != 0 {
		t.Fatalf("the receiver got %d requests without a worker", n)
	}
	db.Close()

	// The next process delivers them.
	second, db := start()
	t.Cleanup(func() { db.Close() })
	stop := startRun(t, second.channels)
	events := byType(t, added.Secret, []hook{rc.next(t), rc.next(t)})
	if diff := cmp.Diff(deleteEvents(trashID(events)), dataOf(events)); diff != "" {
		t.Errorf("events after the restart (-want +got):\n%s", diff)
	}
	stop()
	page, err = second.channels.Deliveries(context.Background(), ada, added.ID, channel.DeliveryFilter{Status: channel.DeliverySucceeded}, 1, 10)
	if err != nil || page.Total != 2 {
		t.Errorf("succeeded deliveries after the restart: %+v %v, want 2", page, err)
	}
}

// TestChannelEventRetry: a receiver that answers 500 changes nothing in
// the delete's answer; the worker tries again, with the same webhook-id,
// and the delivery succeeds at its second attempt, both attempts logged.
// The host's log does not name the channel's address.
func TestChannelEventRetry(t *testing.T) {
	// Two attempts, the second at once after the first fails, so that
	// the test waits for no clock (the default schedule waits 5 s).
	h := startChannelHost(t, &appOptions{RetrySchedule: []time.Duration{0, 0}})
	rc := startReceiver(t, func(attempt int) int {
		if attempt == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}, false)
	added := h.addWebhook("Flaky", rc, []string{eventTaskDeleted})
	stop := startRun(t, h.app.channels)

	h.deleteTask(1)
	first, second := rc.next(t), rc.next(t)
	if first.id() != second.id() || !strings.HasPrefix(first.id(), "msg_") {
		t.Errorf("webhook-ids %q and %q: want one msg_ id on both attempts", first.id(), second.id())
	}
	if ev := signed(t, added.Secret, second); ev.Type != eventTaskDeleted || ev.Data["taskId"] != 1.0 {
		t.Errorf("retried event %s %v", ev.Type, ev.Data)
	}
	stop()

	page := h.deliveries(added.ID)
	if page.Total != 1 {
		t.Fatalf("deliveries: %+v, want 1", page)
	}
	d := page.List[0]
	if d.Status != channel.DeliverySucceeded || d.Attempts != 2 || d.EventID != first.id() {
		t.Errorf("delivery %+v: want SUCCEEDED after 2 attempts, event %s", d, first.id())
	}
	var attempts []channel.Attempt
	h.ok(http.MethodGet, fmt.Sprintf("/api/v1/event/delivery/%d/attempts", d.ID), nil, &attempts)
	var got []int
	for _, a := range attempts {
		got = append(got, a.StatusCode)
	}
	if !slices.Equal(got, []int{500, 204}) || attempts[0].Error == "" || attempts[1].Error != "" {
		t.Errorf("attempts %+v: want a failed 500, then a 204", attempts)
	}

	h.log.mu.Lock()
	all := h.log.buf.String()
	h.log.mu.Unlock()
	if host := strings.TrimPrefix(rc.URL, "http://"); strings.Contains(all, host) {
		t.Errorf("the log names the channel's address %s:\n%s", host, all)
	}
}

// TestDeletedEvent: the host's task.deleted names task and user by id in
// its title and text, which robots render as markdown, and carries the
// title, whatever it holds, in its data.
func TestDeletedEvent(t *testing.T) {
	title := "[click](https://evil.example) *now* " + strings.Repeat("é", 500)
	ev := deletedEvent(task{ID: 2, ProjectID: 5, Title: title, CreatedBy: 3}, deskkit.Actor{ID: 7, Name: "Ada"})
	if ev.Type != eventTaskDeleted || !strings.HasPrefix(ev.ID, "msg_") {
		t.Errorf("type %q id %q", ev.Type, ev.ID)
	}
	if ev.Title != "Task 2 of project 5 deleted" || strings.Contains(ev.Text, "evil") || !strings.Contains(ev.Text, "User 7 deleted task 2 of project 5.") {
		t.Errorf("title %q text %q", ev.Title, ev.Text)
	}
	want := taskDeleted{Actor: &deskkit.Actor{ID: 7, Name: "Ada"}, TaskID: 2, ProjectID: 5, Title: title, CreatedBy: 3}
	if diff := cmp.Diff(want, ev.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if other := deletedEvent(task{ID: 2}, deskkit.Actor{}); other.ID == ev.ID {
		t.Errorf("two events with the id %s", ev.ID)
	}
}
