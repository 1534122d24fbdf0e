package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"golang.org/x/crypto/bcrypt"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
)

// hook is one request a receiver got.
type hook struct {
	Header http.Header
	Body   []byte
}

// event is a Standard Webhooks body.
type event struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// receiver is a webhook receiver on loopback: it keeps what it gets, tells
// arrived of each request, and answers status, each request once it has
// taken a token from release (nil: at once).
type receiver struct {
	*httptest.Server
	status  int
	release chan struct{}
	arrived chan struct{}

	mu  sync.Mutex
	got []hook
}

func startReceiver(t *testing.T, status int, release chan struct{}) *receiver {
	t.Helper()
	rc := &receiver{status: status, release: release, arrived: make(chan struct{}, 16)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("receiver: %v", err)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, hook{Header: r.Header.Clone(), Body: body})
		rc.mu.Unlock()
		rc.arrived <- struct{}{}
		if rc.release != nil {
			<-rc.release
		}
		w.WriteHeader(rc.status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// hooks returns what the receiver got so far.
func (rc *receiver) hooks() []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook(nil), rc.got...)
}

// await waits, at most 10 s, for the next request to arrive.
func (rc *receiver) await(t *testing.T) {
	t.Helper()
	select {
	case <-rc.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the receiver within 10s")
	}
}

// channelHost is the host with channels allowed on loopback, and a second
// tenant's key ("key-alan", Globex), run over loopback. Its cleanup waits
// for the deliveries in flight before the database closes.
type channelHost struct {
	*verifyHost
	app *host
}

func startChannelHost(t *testing.T) *channelHost {
	t.Helper()
	log := &logBook{}
	db, err := openDB(filepath.Join(t.TempDir(), "embed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	app, err := newApp(context.Background(), db, &appOptions{
		Logger:               slog.New(slog.NewJSONHandler(log, nil)),
		PasswordCost:         bcrypt.MinCost,
		AllowPrivateNetworks: true,
		Keys: apiKeys{
			"key-ada":  {UserID: 1, TenantID: 1, Admin: true},
			"key-alan": {UserID: 3, TenantID: 2, Admin: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.Close()
		app.drain()
	})
	addColleagues(t, db)
	return &channelHost{verifyHost: &verifyHost{t: t, base: srv.URL, db: db, log: log}, app: app}
}

// addWebhook adds a webhook channel to rc as Ada and returns it, secret
// included.
func (h *channelHost) addWebhook(name string, rc *receiver) channel.Added {
	h.t.Helper()
	var added channel.Added
	h.ok(http.MethodPost, "/api/v1/event/channel",
		map[string]any{"channelType": "WEBHOOK", "name": name, "address": rc.URL + "/hook"}, &added)
	if added.ID == 0 || !strings.HasPrefix(added.Secret, "whsec_") {
		h.t.Fatalf("add: %+v, want an id and a whsec_ secret", added)
	}
	return added
}

// records are the app's log lines, every field.
func (l *logBook) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for s := range strings.Lines(l.buf.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(s), &rec); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		out = append(out, rec)
	}
	return out
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

// TestChannelEvents: a webhook channel added through the API gets a signed
// test message, and deleting a task sends it one signed task.trashed event
// after the delete has answered; another tenant does not see the channel.
func TestChannelEvents(t *testing.T) {
	h := startChannelHost(t)
	release := make(chan struct{}, 1)
	rc := startReceiver(t, http.StatusNoContent, release)
	added := h.addWebhook("Ops", rc)
	release <- struct{}{} // the test message is answered at once

	// The test message reaches the receiver, signed with the secret the
	// add answered.
	var res channel.TestResult
	h.ok(http.MethodPost, "/api/v1/event/channel/test", map[string]any{
		"id": added.ID, "channelType": "WEBHOOK", "name": "Ops", "address": rc.URL + "/hook",
	}, &res)
	got := rc.hooks()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d requests for the test, want 1", len(got))
	}
	<-rc.arrived
	if ev := signed(t, added.Secret, got[0]); ev.Type != channel.TestEventType {
		t.Errorf("test message type %q, want %q", ev.Type, channel.TestEventType)
	}
	if id := got[0].Header.Get("webhook-id"); id != res.MessageID {
		t.Errorf("webhook-id %q, the test answered messageId %q", id, res.MessageID)
	}
	// The verifier does check: another secret fails.
	other, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 43) + "=")
	if err := other.Verify(got[0].Body, got[0].Header); err == nil {
		t.Error("the signature verified under another secret")
	}

	// A delete that fails announces nothing.
	if status, body := h.do("key-ada", http.MethodDelete, "/tasks/99", nil); status != http.StatusNotFound {
		t.Fatalf("delete of an unknown task: %d %s", status, body)
	}
	h.app.drain()
	if n := len(rc.hooks()); n != 1 {
		t.Errorf("the receiver got %d requests after a failed delete, want still 1", n)
	}

	// The delete answers while the receiver still holds the event: the
	// host does not wait for its channels.
	req, _ := http.NewRequest(http.MethodDelete, h.base+"/tasks/2", nil)
	req.Header.Set("Authorization", "Bearer key-ada")
	quick := &http.Client{Timeout: 5 * time.Second}
	resp, err := quick.Do(req)
	if err != nil {
		t.Fatalf("delete while the receiver holds the event: %v (did the host wait for it?)", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "moved to the trash\n" {
		t.Fatalf("delete: %d %q", resp.StatusCode, body)
	}
	rc.await(t)
	release <- struct{}{}
	h.app.drain()
	for _, rec := range h.log.records(t) {
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "embed: event not delivered") {
			t.Errorf("the event was taken, yet the host logged %v", rec)
		}
	}
	got = rc.hooks()
	if len(got) != 2 {
		t.Fatalf("the receiver got %d requests, want the test and one event", len(got))
	}
	ev := signed(t, added.Secret, got[1])
	if ev.Type != "task.trashed" {
		t.Errorf("event type %q, want task.trashed", ev.Type)
	}
	if diff := cmp.Diff(map[string]any{"taskId": 2.0, "projectId": 1.0, "deletedBy": 1.0}, ev.Data); diff != "" {
		t.Errorf("event data (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(got[1].Header.Get("webhook-id"), "msg_") || got[1].Header.Get("webhook-id") == res.MessageID {
		t.Errorf("event webhook-id %q: want a msg_ id of its own", got[1].Header.Get("webhook-id"))
	}

	// Channels are the tenant's: Globex's key lists none and cannot delete
	// Acme's; Ada still has hers.
	path := "/api/v1/event/channel/type/WEBHOOK"
	for _, c := range []struct {
		key  string
		want []channel.Channel
	}{
		{"key-alan", []channel.Channel{}},
		{"key-ada", []channel.Channel{{ID: added.ID, Type: channel.Webhook, Name: "Ops", Address: rc.URL + "/hook"}}},
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

// TestChannelEventFailure: a receiver answering 500 changes nothing in
// the delete's answer, and the host logs the failure as retryable without
// the channel's address.
func TestChannelEventFailure(t *testing.T) {
	h := startChannelHost(t)
	rc := startReceiver(t, http.StatusInternalServerError, nil)
	added := h.addWebhook("Broken", rc)

	if status, body := h.do("key-ada", http.MethodDelete, "/tasks/1", nil); status != http.StatusOK || body != "moved to the trash\n" {
		t.Fatalf("delete: %d %q", status, body)
	}
	h.app.drain()
	if n := len(rc.hooks()); n != 1 {
		t.Fatalf("the receiver got %d requests, want 1 (no retry)", n)
	}
	if status, body := h.do("key-ada", http.MethodGet, "/tasks", nil); status != http.StatusOK || strings.Contains(body, `"id":1,`) {
		t.Errorf("tasks after the delete: %d %s: task 1 should be gone, whatever the receiver said", status, body)
	}

	var found map[string]any
	for _, rec := range h.log.records(t) {
		if rec["msg"] == "embed: event not delivered to a channel" {
			found = rec
		}
	}
	if found == nil {
		t.Fatal("the host logged no failed delivery")
	}
	want := map[string]any{
		"type": "task.trashed", "tenant": 1.0, "channel": float64(added.ID), "channelType": "WEBHOOK",
		"retryable": true, "reason": "the webhook answered 500 Internal Server Error",
	}
	for k, v := range want {
		if found[k] != v {
			t.Errorf("log field %s = %v, want %v (line %v)", k, found[k], v, found)
		}
	}
	h.log.mu.Lock()
	all := h.log.buf.String()
	h.log.mu.Unlock()
	if host := strings.TrimPrefix(rc.URL, "http://"); strings.Contains(all, host) {
		t.Errorf("the log names the channel's address %s:\n%s", host, all)
	}
}

// TestTrashedEvent: the event's title quotes the task, cut to fit an
// event's title, and its data names task, project and user.
func TestTrashedEvent(t *testing.T) {
	p := deskkit.Principal{UserID: 7, TenantID: 1}
	for _, c := range []struct {
		title, want string
	}{
		{"Book the venue", `Task "Book the venue" moved to the trash`},
		{strings.Repeat("é", 512), `Task "` + strings.Repeat("é", maxEventTaskTitle-1) + `…" moved to the trash`},
	} {
		ev := trashedEvent(task{ID: 2, ProjectID: 5, Title: c.title}, p, time.Unix(0, 0))
		if ev.Title != c.want {
			t.Errorf("title of %.20q… = %q, want %q", c.title, ev.Title, c.want)
		}
		if n := len([]rune(ev.Title)); n > channel.MaxTitleRunes {
			t.Errorf("title is %d characters, more than an event takes (%d)", n, channel.MaxTitleRunes)
		}
		if diff := cmp.Diff(taskTrashed{TaskID: 2, ProjectID: 5, DeletedBy: 7}, ev.Data); diff != "" {
			t.Errorf("data (-want +got):\n%s", diff)
		}
		if ev.Type != "task.trashed" || !strings.HasPrefix(ev.ID, "msg_") {
			t.Errorf("type %q id %q", ev.Type, ev.ID)
		}
	}
}

// TestChannelEventsAfterClose: once close has begun, a delete that still
// runs starts no delivery (it would race close's wait); it says so in the
// log, and the delete itself still answers.
func TestChannelEventsAfterClose(t *testing.T) {
	h := startChannelHost(t)
	rc := startReceiver(t, http.StatusNoContent, nil)
	h.addWebhook("Ops", rc)
	h.app.close()
	if status, body := h.do("key-ada", http.MethodDelete, "/tasks/1", nil); status != http.StatusOK || body != "moved to the trash\n" {
		t.Fatalf("delete: %d %q", status, body)
	}
	h.app.drain()
	if n := len(rc.hooks()); n != 0 {
		t.Errorf("the receiver got %d requests after close", n)
	}
	logged := false
	for _, rec := range h.log.records(t) {
		logged = logged || rec["msg"] == "embed: shutting down, event not delivered"
	}
	if !logged {
		t.Error("the dropped event was not logged")
	}
}
