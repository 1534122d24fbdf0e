package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/envelope"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// Fault 5: a typo in a destructive call is 400 and changes nothing.
// DELETE /task/trash/{id}?projectId=999&dryRun=true once answered 200 and
// the entry was gone.
func TestUnknownQueryParametersRejected(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		e := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "keep me"})
		tests := []struct{ method, target, msg string }{
			{"DELETE", fmt.Sprintf("/api/v1/task/trash/%d?projectId=999&dryRun=true", e.ID), "dryRun is not a parameter of this operation"},
			{"DELETE", fmt.Sprintf("/api/v1/task/trash/%d?projectId=1", e.ID), "projectId is not a parameter of this operation"},
			{"PATCH", fmt.Sprintf("/api/v1/task/trash/%d/back?x=1", e.ID), "x is not a parameter of this operation"},
			{"PATCH", "/api/v1/task/trash/back?projectId=1&dryRun=true", "dryRun is not a parameter of this operation"},
			{"DELETE", "/api/v1/task/trash?projectId=1&confirm=no", "confirm is not a parameter of this operation"},
			{"DELETE", "/api/v1/task/trash?projectId=1&projectId=1", "projectId must be given once"},
			{"DELETE", fmt.Sprintf("/api/v1/task/trash/%d?=1", e.ID), "query string must not hold a parameter without a name"},
			{"GET", "/api/v1/openapi.json?x=1", "x is not a parameter of this operation"},
			// filters[00].key once silently overrode filters[0].key.
			{"GET", "/api/v1/task/trash/search?targetType=TASK&filters[0].key=id&filters[0].op=EQUAL&filters[0].value=1&filters[00].key=targetName",
				"filters[00].key has index 00; write filter indexes without leading zeros: 0, 1 or 2"},
			{"GET", "/api/v1/task/trash/search?targetType=TASK&filters[01].key=id", "filters[01].key has index 01; write filter indexes without leading zeros: 0, 1 or 2"},
			{"GET", "/api/v1/task/trash/search?targetType=TASK&filters.key=id", "filters.key is not a parameter of this operation"},
		}
		for _, tc := range tests {
			r := f.do(t, tc.method, tc.target, "alice", nil)
			r.expect(t, 400, "E0", KeyValidation)
			if r.env.Msg != tc.msg {
				t.Errorf("%s %s: msg %q, want %q", tc.method, tc.target, r.env.Msg, tc.msg)
			}
		}
		if _, err := f.trash.Get(context.Background(), users["alice"], e.ID); err != nil {
			t.Fatalf("the entry is gone after rejected calls: %v", err)
		}
		if len(f.restorer.calls) != 0 {
			t.Errorf("the restorer was called: %v", f.restorer.calls)
		}
	})
}

// rawRequest sends target exactly as written, over a real connection, so
// that nothing between the test and the server cleans it.
func rawRequest(t *testing.T, url, method, target string) (int, http.Header, envelope.Envelope) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: deskkit.test\r\nAuthorization: Bearer alice\r\nConnection: close\r\n\r\n", method, target)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env envelope.Envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("%s %s: %d, body not an envelope: %v", method, target, resp.StatusCode, err)
	}
	return resp.StatusCode, resp.Header, env
}

// Fault 7: nothing under /api/v1 redirects; a path a cleaning mux would
// rewrite (DELETE .../7/.. would become clear-all) answers a 404 envelope.
func TestNoRedirects(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	e := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "keep me"})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	for _, tc := range []struct{ method, target string }{
		{"GET", "/api/v1//task/trash/search?targetType=TASK"},
		{"GET", "//api/v1/task/trash/search?targetType=TASK"},
		{"GET", "/api/v1/task/trash/search/?targetType=TASK"},
		{"GET", "/api/v1/task/trash/./search?targetType=TASK"},
		{"GET", "/api/v1/task/trash/count/?projectId=1"},
		{"DELETE", fmt.Sprintf("/api/v1/task/trash/%d/..?projectId=1", e.ID)},
		{"DELETE", fmt.Sprintf("/api/v1/task/trash/%d/%%2e%%2e?projectId=1", e.ID)},
		{"DELETE", "/api/v1/task/trash/?projectId=1"},
		{"DELETE", "/api/v1/task/trash/..?projectId=1"},
		{"DELETE", fmt.Sprintf("/api/v1/task/trash/%d/", e.ID)},
		{"PATCH", fmt.Sprintf("/api/v1/task/trash/%d/back/", e.ID)},
		{"PATCH", fmt.Sprintf("/api/v1/task/trash//%d/back", e.ID)},
		{"GET", "/api/v1/openapi.json/"},
		{"GET", "/api/v1/"},
		{"GET", "/api/v1"},
		{"GET", "/API/V1/task/trash/count?projectId=1"},
	} {
		status, header, env := rawRequest(t, ts.URL, tc.method, tc.target)
		if status != 404 || header.Get("Location") != "" || env.Ext[envelope.KeyExt] != KeyRouteNotFound {
			t.Errorf("%s %s: %d Location %q %v, want a 404 route_not_found envelope", tc.method, tc.target, status, header.Get("Location"), env.Ext)
		}
	}
	if _, err := f.trash.Get(context.Background(), users["alice"], e.ID); err != nil {
		t.Fatalf("the entry is gone: %v", err)
	}
}

// Host routes get the same unknown-parameter check; the typed helper
// decodes path, query and body.
func TestHostRoutes(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	type note struct {
		Text string `json:"text"`
	}
	type req struct {
		ID     int64  `path:"id"`
		Draft  bool   `query:"draft"`
		Author string `query:"author" required:"true"`
		Body   note   `body:"json"`
	}
	f.srv.mount(op("addNote", http.MethodPost, "/demo/task/{id}/note", nil, func(_ context.Context, p deskkit.Principal, r req) (any, error) {
		return fmt.Sprintf("%d %v %s %s by %d", r.ID, r.Draft, r.Author, r.Body.Text, p.UserID), nil
	}))
	f.srv.Handle(http.MethodGet, "/demo/task/{id}", func(r *http.Request, _ deskkit.Principal) (any, error) {
		return r.PathValue("id") + " " + r.URL.Query().Get("fields"), nil
	}, "fields")

	r := f.do(t, "POST", "/api/v1/demo/task/7/note?author=ann&draft=true", "alice", strings.NewReader(`{"text":"hi"}`))
	r.expect(t, 200, "S", "")
	if r.env.Data != "7 true ann hi by 1" {
		t.Errorf("typed endpoint data %v", r.env.Data)
	}
	for _, tc := range []struct{ target, body, msg string }{
		{"/api/v1/demo/task/7/note?author=ann&x=1", `{}`, "x is not a parameter of this operation"},
		{"/api/v1/demo/task/7/note", `{}`, "author is required"},
		{"/api/v1/demo/task/0/note?author=ann", `{}`, "id must be a positive integer"},
		{"/api/v1/demo/task/7/note?author=ann&draft=yes", `{}`, "draft must be true or false"},
		{"/api/v1/demo/task/7/note?author=ann", `{"text":1}`, "text must be a string"},
	} {
		r := f.do(t, "POST", tc.target, "alice", strings.NewReader(tc.body))
		r.expect(t, 400, "E0", KeyValidation)
		if r.env.Msg != tc.msg {
			t.Errorf("POST %s: msg %q, want %q", tc.target, r.env.Msg, tc.msg)
		}
	}
	if r := f.do(t, "GET", "/api/v1/demo/task/9?fields=name", "alice", nil); r.env.Data != "9 name" {
		t.Errorf("Handle with a declared parameter: %v", r.env.Data)
	}
	f.do(t, "GET", "/api/v1/demo/task/9?field=name", "alice", nil).expect(t, 400, "E0", KeyValidation)
	// Host routes are not deskkit's: Routes leaves them out, and
	// HostRoutes lists them alone.
	for _, rt := range f.srv.Routes() {
		if strings.HasPrefix(rt.Path, "/api/v1/demo") {
			t.Errorf("Routes lists host route %v", rt)
		}
	}
	want := []Route{{"POST", "/api/v1/demo/task/{id}/note"}, {"GET", "/api/v1/demo/task/{id}"}}
	if diff := cmp.Diff(want, f.srv.HostRoutes()); diff != "" {
		t.Errorf("HostRoutes (-want +got):\n%s", diff)
	}
}

// The declared operations are what the server serves, with the static and
// wildcard templates httprouter cannot hold side by side.
func TestRoutesDeclared(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	want := []Route{
		{"GET", "/api/v1/openapi.json"},
		{"GET", "/api/v1/task/trash/search"},
		{"GET", "/api/v1/task/trash/count"},
		{"GET", "/api/v1/task/trash/{id}"},
		{"PATCH", "/api/v1/task/trash/{id}/back"},
		{"PATCH", "/api/v1/task/trash/back"},
		{"DELETE", "/api/v1/task/trash/{id}"},
		{"DELETE", "/api/v1/task/trash"},
	}
	if diff := cmp.Diff(want, f.srv.Routes()); diff != "" {
		t.Errorf("Routes (-want +got):\n%s", diff)
	}
	got := collapse([][]string{{"task", "trash", "back"}, {"task", "trash", "{id}", "back"}, {"task", "trash"}})
	if diff := cmp.Diff([][]string{{"task", "trash", "{id}"}, {"task", "trash", "{id}", "back"}, {"task", "trash"}}, got); diff != "" {
		t.Errorf("collapse (-want +got):\n%s", diff)
	}
	for _, bad := range []operation{
		{method: "GET", path: "/x/{id}", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
		{method: "GET", path: "x", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
		{method: "HEAD", path: "/x", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
		{method: "GET", path: "/task/trash/search", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
		// httprouter would read these as wildcards; the escaped path
		// would never hold the last.
		{method: "GET", path: "/things:batch", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
		{method: "GET", path: "/files/*rest", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
		{method: "GET", path: "/a b", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Mount(%s %s) did not panic", bad.method, bad.path)
				}
			}()
			f.srv.mount(bad)
		}()
	}
}

// Fault 1.3 of issue 12: routing on the decoded path let an encoded slash
// reach destructive routes. DELETE /api/v1/task%2Ftrash%2F10 cleared entry
// 10, PATCH .../trash/9%2Fback restored 9, and DELETE
// /api%2Fv1%2Ftask%2Ftrash?projectId=999 cleared a project, past any proxy
// rule written for the real paths. And +5, 05, %35 and " 5" were all id 5.
func TestEncodedPathsReachNothing(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		cleared := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "clear me?"})
		restored := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 2, TargetName: "restore me?"})
		other := f.add(t, "alice", trash.NewEntry{ProjectID: 999, TargetType: trash.TargetTask, TargetID: 3, TargetName: "project 999"})
		id := func(e trash.Entry) string { return fmt.Sprint(e.ID) }

		for _, tc := range []struct{ method, target string }{
			{"DELETE", "/api/v1/task%2Ftrash%2F" + id(cleared)},
			{"DELETE", "/api/v1/task%2ftrash%2f" + id(cleared)},
			{"DELETE", "/api/v1/task/trash%2F" + id(cleared)},
			{"PATCH", "/api/v1/task/trash/" + id(restored) + "%2Fback"},
			{"PATCH", "/api/v1/task/trash/" + id(restored) + "%2fback"},
			{"DELETE", "/api%2Fv1%2Ftask%2Ftrash?projectId=999"},
			{"DELETE", "/api/v1%2Ftask/trash?projectId=999"},
			{"PATCH", "/api/v1/task/trash%2Fback?projectId=999"},
			{"DELETE", "/api/v1/task/trash/%2E%2E?projectId=999"},
		} {
			r := f.do(t, tc.method, tc.target, "alice", nil)
			r.expect(t, 404, "E0", KeyRouteNotFound)
		}

		// One spelling of an id, in the path and in the query.
		first := func(e trash.Entry) string { return fmt.Sprintf("%%%X%s", id(e)[0], id(e)[1:]) }
		for _, tc := range []struct{ method, target string }{
			{"DELETE", "/api/v1/task/trash/+" + id(cleared)},
			{"DELETE", "/api/v1/task/trash/0" + id(cleared)},
			{"DELETE", "/api/v1/task/trash/" + first(cleared)},
			{"DELETE", "/api/v1/task/trash/%20" + id(cleared)},
			{"DELETE", "/api/v1/task/trash/%2B" + id(cleared)},
			{"PATCH", "/api/v1/task/trash/0" + id(restored) + "/back"},
			{"PATCH", "/api/v1/task/trash/" + first(restored) + "/back"},
			{"PATCH", "/api/v1/task/trash/+" + id(restored) + "/back"},
			{"DELETE", "/api/v1/task/trash?projectId=0999"},
			{"DELETE", "/api/v1/task/trash?projectId=%2B999"},
			{"DELETE", "/api/v1/task/trash?projectId=+999"},
			{"PATCH", "/api/v1/task/trash/back?projectId=0999"},
			{"GET", "/api/v1/task/trash/count?projectId=00999"},
		} {
			r := f.do(t, tc.method, tc.target, "alice", nil)
			if r.status != 400 && r.status != 404 {
				t.Errorf("%s %s: %d %s, want 400 or 404", tc.method, tc.target, r.status, r.raw)
			}
		}
		r := f.do(t, "DELETE", "/api/v1/task/trash/0"+id(cleared), "alice", nil)
		if r.env.Msg != "id must be written as plain decimal digits, without a sign, leading zeros or escapes" {
			t.Errorf("msg %q", r.env.Msg)
		}

		for _, e := range []trash.Entry{cleared, restored, other} {
			if _, err := f.trash.Get(context.Background(), users["alice"], e.ID); err != nil {
				t.Errorf("entry %d (%s) left the trash: %v", e.ID, e.TargetName, err)
			}
		}
		if len(f.restorer.calls) != 0 {
			t.Errorf("the restorer was called: %v", f.restorer.calls)
		}
		// The canonical spellings still work.
		f.do(t, "DELETE", "/api/v1/task/trash/"+id(cleared), "alice", nil).expect(t, 200, "S", "")
		f.do(t, "GET", "/api/v1/task/trash/count?projectId=999", "alice", nil).expect(t, 200, "S", "")
	})
}

// Error lines name the path as the client wrote it, escapes and all.
func TestErrorLogsRawPath(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	f.srv.Handle("GET", "/test/{name}", func(*http.Request, deskkit.Principal) (any, error) {
		return nil, fmt.Errorf("boom")
	})
	f.do(t, "GET", "/api/v1/test/a%2Eb%41", "alice", nil).expect(t, 500, "E2", KeyInternal)
	if !strings.Contains(f.logs.String(), `"path":"/api/v1/test/a%2Eb%41"`) {
		t.Errorf("the log does not name the raw path: %s", f.logs)
	}
}

// Issue 12, 2.7: Mount is safe while the server serves. Requests in flight
// keep answering on the routes they found; each route mounted answers as
// soon as Mount returns. Under -race the old Mount (which rebuilt the
// router in place) is a data race with ServeHTTP.
func TestMountWhileServing(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req := httptest.NewRequest("GET", "/api/v1/openapi.json", nil)
				rec := httptest.NewRecorder()
				f.srv.ServeHTTP(rec, req)
				if rec.Code != 200 {
					errs <- fmt.Sprintf("GET /api/v1/openapi.json during Mount: %d", rec.Code)
					return
				}
			}
		})
	}
	for i := range 20 {
		path := fmt.Sprintf("/live/%d", i)
		f.srv.Handle("GET", path, func(*http.Request, deskkit.Principal) (any, error) { return i, nil })
		if r := f.do(t, "GET", "/api/v1"+path, "alice", nil); r.status != 200 || r.env.Data != float64(i) {
			t.Errorf("GET %s right after Mount: %d %v", path, r.status, r.env.Data)
		}
		_ = f.srv.Routes()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// A Mount that panics adds nothing: the good operation before the bad
	// one is not mounted either.
	func() {
		defer func() { _ = recover() }()
		f.srv.mount(
			operation{method: "GET", path: "/half", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
			operation{method: "GET", path: "/live/0", fn: func(*http.Request, deskkit.Principal) (any, error) { return nil, nil }},
		)
		t.Error("mounting /live/0 twice did not panic")
	}()
	f.do(t, "GET", "/api/v1/half", "alice", nil).expect(t, 404, "E0", KeyRouteNotFound)
	f.srv.Handle("GET", "/half", func(*http.Request, deskkit.Principal) (any, error) { return "whole", nil })
	f.do(t, "GET", "/api/v1/half", "alice", nil).expect(t, 200, "S", "")
}
