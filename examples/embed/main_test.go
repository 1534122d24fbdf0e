package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/trash"
)

// TestEmbed runs the host: its own route and deskkit's answer side by side,
// and deleting a task puts it in deskkit's trash.
func TestEmbed(t *testing.T) {
	srv, db := startHost(t)

	call := func(method, path, key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	titles := func() string {
		t.Helper()
		_, body := call(http.MethodGet, "/tasks", "key-ada")
		var ts []task
		if err := json.Unmarshal([]byte(body), &ts); err != nil {
			t.Fatalf("GET /tasks: %v: %s", err, body)
		}
		var out []string
		for _, x := range ts {
			out = append(out, x.Title)
		}
		return strings.Join(out, "; ")
	}

	// The host's route and deskkit's, with the host's keys.
	if got := titles(); got != "Draft the launch plan; Book the venue" {
		t.Errorf("tasks = %q", got)
	}
	if status, body := call(http.MethodGet, "/api/v1/task/trash/count?projectId=1", "key-ada"); status != http.StatusOK || !strings.Contains(body, `"data":0`) {
		t.Errorf("trash count: %d %s", status, body)
	}
	for _, path := range []string{"/tasks", "/api/v1/task/trash/count?projectId=1"} {
		if status, _ := call(http.MethodGet, path, "key-eve"); status != http.StatusUnauthorized {
			t.Errorf("%s with an unknown key: %d, want 401", path, status)
		}
	}

	// Deleting a task moves it to deskkit's trash.
	if status, body := call(http.MethodDelete, "/tasks/2", "key-ada"); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, body)
	}
	if got := titles(); got != "Draft the launch plan" {
		t.Errorf("tasks after delete = %q", got)
	}
	_, body := call(http.MethodGet, "/api/v1/task/trash/search?targetType=TASK&targetName=venue", "key-ada")
	var env struct{ Data trash.Page }
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Data.Total != 1 {
		t.Fatalf("search: %v %s", err, body)
	}

	// deskkit restores it through the host's Restore hook.
	if status, body := call(http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", env.Data.List[0].ID), "key-ada"); status != http.StatusOK {
		t.Fatalf("restore: %d %s", status, body)
	}
	if got := titles(); got != "Draft the launch plan; Book the venue" {
		t.Errorf("tasks after restore = %q", got)
	}

	// One transaction: when deskkit refuses the entry (a title longer than
	// a trash name may be), the task is not deleted either.
	long := task{TenantID: 1, ProjectID: 1, Title: strings.Repeat("x", trash.MaxNameLength+1), CreatedBy: 1}
	if _, err := db.NewInsert().Model(&long).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, body := call(http.MethodDelete, fmt.Sprintf("/tasks/%d", long.ID), "key-ada"); status != http.StatusBadRequest {
		t.Errorf("delete of a long title: %d %s, want 400", status, body)
	}
	if n := strings.Count(titles(), ";"); n != 2 {
		t.Errorf("the long task was deleted although its trash entry was refused")
	}
}

// startHost runs the host application over a fresh SQLite file, on a
// loopback test server closed when t ends.
func startHost(t *testing.T) (*httptest.Server, *bun.DB) {
	t.Helper()
	return startHostWith(t, nil)
}

// startHostWith is startHost with newApp's options.
func startHostWith(t *testing.T, opts *appOptions) (*httptest.Server, *bun.DB) {
	t.Helper()
	db, err := openDB(filepath.Join(t.TempDir(), "embed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	handler, err := newApp(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv, db
}

// TestServeShutdown runs serve as main does and stops it while the event
// worker has attempts in flight: serve stops the server, then the worker,
// and returns only once those attempts have ended and been recorded.
func TestServeShutdown(t *testing.T) {
	h := startChannelHost(t, nil)
	rc := startReceiver(t, always(http.StatusNoContent), true)
	added := h.addWebhook("Ops", rc, nil)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, &http.Server{Handler: h.app}, ln, h.app) }()

	// A delete through serve's server; the receiver holds both events.
	h.base = "http://" + ln.Addr().String()
	h.deleteTask(2)
	rc.next(t)
	rc.next(t)

	cancel()
	select {
	case err := <-served:
		t.Fatalf("serve returned (%v) while the worker had attempts in flight", err)
	default:
	}
	rc.open()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatalf("serve did not return within %s of the receiver answering", waitFor)
	}

	// The server is closed, the worker stopped, and both attempts are
	// recorded as the successes they were, not left to a lease.
	if _, err := http.Get(h.base + "/tasks"); err == nil {
		t.Error("serve's server still answers after serve returned")
	}
	page, err := h.app.channels.Deliveries(context.Background(), deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}, added.ID, channel.DeliveryFilter{}, 1, 10)
	if err != nil || page.Total != 2 {
		t.Fatalf("deliveries: %+v %v, want 2", page, err)
	}
	for _, d := range page.List {
		if d.Status != channel.DeliverySucceeded || d.Attempts != 1 {
			t.Errorf("delivery %+v: want SUCCEEDED at its one attempt", d)
		}
	}
	// Run has returned: it can run again on the registry.
	stop := startRun(t, h.app.channels)
	stop()
}
