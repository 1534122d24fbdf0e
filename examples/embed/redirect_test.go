package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// TestNoRedirects: paths under /api/v1 that are not clean answered a 307
// from the host's http.ServeMux, and the one for
// "DELETE /api/v1/task/trash/{id}/..?projectId=1" pointed at clear-all of
// project 1. They answer deskkit's 404 envelope now, with no Location, and
// the trash keeps its entry.
func TestNoRedirects(t *testing.T) {
	srv, _ := startHost(t)

	// send writes target into the request line byte for byte: a client
	// would clean it first.
	send := func(method, target string) (*http.Response, string) {
		t.Helper()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: embed\r\nAuthorization: Bearer key-ada\r\nConnection: close\r\n\r\n", method, target)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}

	if res, body := send(http.MethodDelete, "/tasks/1"); res.StatusCode != http.StatusOK {
		t.Fatalf("delete task 1: %d %s", res.StatusCode, body)
	}
	count := func() string {
		t.Helper()
		res, body := send(http.MethodGet, "/api/v1/task/trash/count?projectId=1")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("count: %d %s", res.StatusCode, body)
		}
		var env struct{ Data json.RawMessage }
		if err := json.Unmarshal([]byte(body), &env); err != nil {
			t.Fatal(err)
		}
		return string(env.Data)
	}
	if got := count(); got != "1" {
		t.Fatalf("count = %s, want 1", got)
	}

	for _, c := range []struct{ method, target string }{
		{http.MethodGet, "/api/v1//task/trash/search?targetType=TASK"},
		{http.MethodGet, "/api/v1/./task/trash/search?targetType=TASK"},
		{http.MethodDelete, "/api/v1/task/trash/1/..?projectId=1"},
		{http.MethodDelete, "/api/v1/task/trash/1/%2e%2e?projectId=1"},
		{http.MethodDelete, "//api/v1/task/trash?projectId=1"},
		{http.MethodDelete, "/tasks/../api/v1/task/trash?projectId=1"},
		{http.MethodPatch, "/api/v1/task/trash/1/back/..?projectId=1"},
		{http.MethodDelete, "/api%2Fv1%2Ftask%2Ftrash?projectId=1"},
		{http.MethodDelete, "/api/v1/task%2Ftrash%2F1"},
	} {
		res, body := send(c.method, c.target)
		var env struct {
			Code string `json:"code"`
			Msg  string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(body), &env); err != nil {
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
	if got := count(); got != "1" {
		t.Errorf("count = %s after the unclean paths, want the entry still there", got)
	}
}
