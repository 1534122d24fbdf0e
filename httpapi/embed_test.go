package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// Issue 12, 3.1: the README's embedding line, mux.Handle("/api/v1/", api)
// on an http.ServeMux, answered DELETE /api/v1/task/trash/3/..?projectId=1
// with a 307 to /api/v1/task/trash?projectId=1, and a client that followed
// it cleared the project. This drives the README's snippet, api.Wrap(mux),
// with that request and its cousins: no redirect, and nothing cleared.
func TestWrapKeepsTheMuxFromCleaning(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		e := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "keep me"})
		listTasks := func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "the host's tasks") }

		// The README's snippet.
		mux := http.NewServeMux()
		mux.HandleFunc("GET /tasks", listTasks) // the host's own routes
		srv := &http.Server{Handler: f.srv.Wrap(mux)}

		ts := httptest.NewUnstartedServer(srv.Handler)
		ts.Start()
		defer ts.Close()
		targets := []string{
			fmt.Sprintf("/api/v1/task/trash/%d/..?projectId=1", e.ID),
			fmt.Sprintf("/api/v1/task/trash/%d/%%2e%%2e?projectId=1", e.ID),
			"//api/v1/task/trash?projectId=1",
			"/api/v1//task/trash?projectId=1",
			"/tasks/../api/v1/task/trash?projectId=1",
			"/api%2Fv1/task/trash?projectId=1",
			"/api/v1/../api/v1/task/trash?projectId=1",
			"/api/v1/./task/trash?projectId=1",
		}
		for _, target := range targets {
			status, header, env := rawRequest(t, ts.URL, "DELETE", target)
			if status != 404 || header.Get("Location") != "" || env.Ext["eKey"] != KeyRouteNotFound {
				t.Errorf("DELETE %s: %d Location %q %v, want a 404 route_not_found envelope", target, status, header.Get("Location"), env.Ext)
			}
		}
		if _, err := f.trash.Get(context.Background(), users["alice"], e.ID); err != nil {
			t.Fatalf("the entry is gone: %v", err)
		}

		// The host's routes are the mux's.
		res, err := http.Get(ts.URL + "/tasks")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(body) != "the host's tasks" {
			t.Errorf("GET /tasks: %d %q", res.StatusCode, body)
		}
		// And the API's: a canonical path reaches the trash.
		status, _, env := rawRequest(t, ts.URL, "GET", "/api/v1/task/trash/count?projectId=1")
		if status != 200 || env.Data != float64(1) {
			t.Errorf("count through Wrap: %d %v", status, env.Data)
		}

		// What Wrap prevents: the line the README used to show redirects.
		bare := http.NewServeMux()
		bare.Handle("/api/v1/", f.srv)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("DELETE", targets[0], nil)
		bare.ServeHTTP(rec, req)
		if rec.Code != http.StatusTemporaryRedirect || !strings.HasPrefix(rec.Header().Get("Location"), "/api/v1/task/trash?") {
			t.Errorf("a bare ServeMux: %d Location %q; the danger Wrap guards against is gone?", rec.Code, rec.Header().Get("Location"))
		}
	})
}
