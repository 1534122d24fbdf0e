package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// countingTrash is a host's wrapper of the trash: it counts the counts
// and passes everything on.
type countingTrash struct {
	httpapi.TrashService
	counts atomic.Int64
}

func (c *countingTrash) Count(ctx context.Context, p deskkit.Principal, projectID int64) (int64, error) {
	c.counts.Add(1)
	return c.TrashService.Count(ctx, p, projectID)
}

// fakeChannels is a channel store of the host's own, serving some of the
// routes: the methods it does not define are the embedded nil interface's.
type fakeChannels struct {
	httpapi.ChannelService
	ListFn func(ctx context.Context, p deskkit.Principal, channelType string) ([]channel.Channel, error)
}

func (f *fakeChannels) Add(context.Context, deskkit.Principal, channel.Input) (channel.Added, error) {
	return channel.Added{}, deskkit.ErrForbidden
}

func (f *fakeChannels) Replace(context.Context, deskkit.Principal, channel.Input) (channel.Channel, error) {
	return channel.Channel{}, deskkit.ErrForbidden
}

func (f *fakeChannels) List(ctx context.Context, p deskkit.Principal, channelType string) ([]channel.Channel, error) {
	return f.ListFn(ctx, p, channelType)
}

func (f *fakeChannels) Delete(context.Context, deskkit.Principal, int64) error {
	return deskkit.ErrNotFound
}

var (
	_ httpapi.TrashService   = (*countingTrash)(nil)
	_ httpapi.ChannelService = (*fakeChannels)(nil)
)

// A host mounts a wrapper of a real service and a fake of its own, which
// serves the routes whose methods it defines; a nil pointer in a service
// field mounts nothing.
func TestServicesWrappedAndFaked(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := trash.Migrate(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	none := func(context.Context, bun.Tx, trash.Entry) error { return nil }
	tr, err := trash.New(db, &fakeRestorer{RestoreFn: none, PurgeFn: none}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Add(t.Context(), db, alice, trash.NewEntry{ProjectID: 10, TargetType: trash.TargetTask, TargetID: 1, TargetName: "a", CreatedBy: alice.UserID}); err != nil {
		t.Fatal(err)
	}
	wrapped := &countingTrash{TrashService: tr}
	var listed []string
	chans := &fakeChannels{ListFn: func(_ context.Context, p deskkit.Principal, typ string) ([]channel.Channel, error) {
		listed = append(listed, typ)
		return []channel.Channel{{ID: 7, Type: channel.Type(typ), Name: "ops", Address: "https://hooks.example.com/x", Enabled: true, Events: []string{}}}, nil
	}}
	srv, err := httpapi.New(&httpapi.Config{
		Authenticator: &fakeAuthenticator{AuthenticateFn: func(context.Context, string) (deskkit.Principal, error) { return alice, nil }},
		Trash:         wrapped,
		Verifier:      (*verify.Verifier)(nil),
		Channels:      chans,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, target string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, target, nil)
		req.Header.Set("Authorization", "Bearer alice")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		var env map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatalf("%s %s: %v: %s", method, target, err, rec.Body)
		}
		return rec.Code, env
	}

	if code, env := get("GET", "/api/v1/task/trash/count?projectId=10"); code != 200 || env["data"] != 1.0 {
		t.Errorf("count through the wrapper: %d %v", code, env)
	}
	if n := wrapped.counts.Load(); n != 1 {
		t.Errorf("the wrapper saw %d counts, want 1", n)
	}
	code, env := get("GET", "/api/v1/event/channel/type/WEBHOOK")
	want := []any{map[string]any{"id": 7.0, "channelType": "WEBHOOK", "name": "ops", "address": "https://hooks.example.com/x", "enabled": true, "events": []any{}, "disabledReason": "", "disabledDate": nil, "rateLimit": 0.0, "inFlightLimit": 0.0, "pausedUntil": nil, "previousSecretUntil": nil,
		"health": "", "failingSince": nil, "failedAttempts": 0.0, "lastStatusCode": 0.0, "lastError": "", "attempts24h": 0.0,
		"attemptsSucceeded24h": 0.0, "successShare24h": nil, "disabledBy": nil, "disabledByName": "", "headers": nil}}
	if code != 200 || !cmp.Equal(env["data"], any(want)) || !cmp.Equal(listed, []string{"WEBHOOK"}) {
		t.Errorf("list from the fake: %d %v, listed %v", code, env, listed)
	}
	if code, env := get("DELETE", "/api/v1/event/channel/7"); code != 404 || env["ext"].(map[string]any)["eKey"] != httpapi.KeyNotFound {
		t.Errorf("delete through the fake: %d %v", code, env)
	}
	// A route whose method the fake left to the embedded nil interface
	// answers 500, the panic recovered.
	if code, env := get("GET", "/api/v1/event/types"); code != 500 || env["ext"].(map[string]any)["eKey"] != httpapi.KeyInternal {
		t.Errorf("a route the fake does not serve: %d %v", code, env)
	}
	// A nil *verify.Verifier mounts nothing.
	if code, env := get("GET", "/api/v1/user/current"); code != 404 || env["ext"].(map[string]any)["eKey"] != httpapi.KeyRouteNotFound {
		t.Errorf("GET /user/current with a nil Verifier: %d %v", code, env)
	}
	// The served document has the operations of what is mounted.
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	var doc struct {
		Paths map[string]map[string]struct {
			ID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, item := range doc.Paths {
		for _, op := range item {
			ops = append(ops, op.ID)
		}
	}
	slices.Sort(ops)
	if diff := cmp.Diff(httpapi.OperationIDs("trash", "channel"), ops); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
}
