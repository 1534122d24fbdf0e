package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// rawRequest sends target as the request line's target, byte for byte, over
// a connection of its own: http.NewRequest and http.Client would clean or
// re-encode it, and the point is what the server does with a path that is
// not clean.
func rawRequest(t *testing.T, srv *httptest.Server, method, target, token string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, srv.Listener.Addr())
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// TestNoRedirects is fault 7: paths under /api/v1 that are not clean
// answered an HTML 307 from http.ServeMux, and the one for
// "DELETE /api/v1/task/trash/7/..?projectId=P" pointed at clear-all of P.
// Now they answer a 404 envelope, never a redirect, and nothing is cleared.
func TestNoRedirects(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		const project = 8
		task := f.createTask(project, nil, "keep me")
		entry := f.delete("task", task)
		srv := httptest.NewServer(f.app.handler)
		defer srv.Close()

		for _, c := range []struct{ method, target string }{
			{http.MethodGet, "/api/v1//task/trash/search?targetType=TASK"},
			{http.MethodGet, "/api/v1/task//trash/search?targetType=TASK"},
			{http.MethodGet, "/api/v1/./task/trash/search?targetType=TASK"},
			{http.MethodDelete, fmt.Sprintf("/api/v1/task/trash/%d/..?projectId=%d", entry.TrashID, project)},
			{http.MethodDelete, fmt.Sprintf("/api/v1/task/trash/%d/%%2e%%2e?projectId=%d", entry.TrashID, project)},
			{http.MethodDelete, fmt.Sprintf("/api/v1/x/../task/trash?projectId=%d", project)},
			{http.MethodDelete, fmt.Sprintf("//api/v1/task/trash?projectId=%d", project)},
			{http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back/..?projectId=%d", entry.TrashID, project)},
			{http.MethodGet, "/healthz/"},
			{http.MethodGet, "//readyz"},
		} {
			res, body := rawRequest(t, srv, c.method, c.target, f.admin)
			var env struct {
				Code string `json:"code"`
				Msg  string `json:"msg"`
			}
			if err := json.Unmarshal(body, &env); err != nil {
				t.Errorf("%s %s: %d, not an envelope: %v\n%s", c.method, c.target, res.StatusCode, err, body)
				continue
			}
			if res.StatusCode != http.StatusNotFound || env.Code == "S" || env.Msg == "" {
				t.Errorf("%s %s: %d %+v, want a 404 envelope", c.method, c.target, res.StatusCode, env)
			}
			if loc := res.Header.Get("Location"); loc != "" {
				t.Errorf("%s %s: Location %q, want none", c.method, c.target, loc)
			}
		}

		// The entry is still there, and the clean paths still work.
		var n int64
		f.ok(f.admin, http.MethodGet, fmt.Sprintf("/api/v1/task/trash/count?projectId=%d", project), nil, &n)
		if n != 1 {
			t.Errorf("project %d has %d entries, want the 1 it had", project, n)
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if res, body := rawRequest(t, srv, http.MethodGet, path, ""); res.StatusCode != http.StatusOK {
				t.Errorf("%s: %d %s", path, res.StatusCode, body)
			}
		}
		if res, _ := rawRequest(t, srv, http.MethodPost, "/healthz", ""); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST /healthz: %d Allow %q, want 405 Allow GET, HEAD", res.StatusCode, res.Header.Get("Allow"))
		}
	})
}
