package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/envelope"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// tokens is a fixed token table.
type tokens map[string]deskkit.Principal

var _ Authenticator = tokens(nil)

func (m tokens) Authenticate(_ context.Context, token string) (deskkit.Principal, error) {
	p, ok := m[token]
	if !ok {
		return deskkit.Principal{}, fmt.Errorf("token: %w", deskkit.ErrUnauthenticated)
	}
	return p, nil
}

type recordingRestorer struct {
	mu    sync.Mutex
	calls []string
}

func (r *recordingRestorer) Restore(_ context.Context, _ bun.Tx, e trash.Entry) error {
	return r.record("restore", e)
}

func (r *recordingRestorer) Purge(_ context.Context, _ bun.Tx, e trash.Entry) error {
	return r.record("purge", e)
}

func (r *recordingRestorer) record(verb string, e trash.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("%s %s %d", verb, e.TargetType, e.TargetID))
	return nil
}

var (
	fixedNow = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	users    = tokens{
		"alice": {UserID: 1, TenantID: 1},
		"bob":   {UserID: 2, TenantID: 1},
		"admin": {UserID: 3, TenantID: 1, Admin: true},
		"eve":   {UserID: 4, TenantID: 2, Admin: true},
	}
)

type apiFixture struct {
	srv      *Server
	trash    *trash.Trash
	db       *bun.DB
	restorer *recordingRestorer
	logs     *bytes.Buffer
}

func newAPI(t *testing.T, db *bun.DB) *apiFixture {
	t.Helper()
	if err := trash.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	f := &apiFixture{db: db, restorer: &recordingRestorer{}, logs: &bytes.Buffer{}}
	tr, err := trash.New(db, f.restorer, &trash.Config{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	f.trash = tr
	f.srv, err = New(&Config{
		Authenticator: users,
		Trash:         tr,
		Now:           func() time.Time { return fixedNow },
		Logger:        slog.New(slog.NewJSONHandler(f.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *apiFixture) add(t *testing.T, token string, e trash.NewEntry) trash.Entry {
	t.Helper()
	if e.ProjectID == 0 {
		e.ProjectID = 1
	}
	if e.CreatedBy == 0 {
		e.CreatedBy = users[token].UserID
	}
	got, err := f.trash.Add(context.Background(), f.db, users[token], e)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

type response struct {
	status int
	header http.Header
	env    envelope.Envelope
	raw    string
}

func (f *apiFixture) do(t *testing.T, method, target, token string, body io.Reader) response {
	t.Helper()
	req := httptest.NewRequest(method, target, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	r := response{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &r.env); err != nil {
		t.Fatalf("%s %s: body is not an envelope: %v\n%s", method, target, err, r.raw)
	}
	if r.env.Datetime != "2026-11-22T08:00:00Z" || r.env.Ext == nil {
		t.Fatalf("%s %s: envelope datetime %q ext %v", method, target, r.env.Datetime, r.env.Ext)
	}
	return r
}

// expect checks status, code and error key ("" for success).
func (r response) expect(t *testing.T, status int, code, key string) {
	t.Helper()
	gotKey, _ := r.env.Ext[envelope.KeyExt].(string)
	if r.status != status || r.env.Code != code || gotKey != key {
		t.Fatalf("got %d %s %q (%s), want %d %s %q", r.status, r.env.Code, gotKey, r.env.Msg, status, code, key)
	}
}

func TestTrashRoutes(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		sp := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetSprint, TargetID: 10, TargetName: "Sprint 10"})
		tk := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "Login page", SprintID: &sp.TargetID})
		f.add(t, "bob", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 2, TargetName: "Bob's task"})
		f.add(t, "alice", trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 3, TargetName: "elsewhere"})

		r := f.do(t, "GET", "/api/v1/task/trash/search?targetType=TASK&targetName=LOGIN", "alice", nil)
		r.expect(t, 200, "S", "")
		if r.env.Msg != "Success" {
			t.Errorf("msg = %q", r.env.Msg)
		}
		var page struct {
			Total int64         `json:"total"`
			List  []trash.Entry `json:"list"`
		}
		remarshal(t, r.env.Data, &page)
		if page.Total != 1 || page.List[0].ID != tk.ID || page.List[0].DeletedDate != fixedNow {
			t.Fatalf("search data = %+v", page)
		}

		r = f.do(t, "GET", "/api/v1/task/trash/count?projectId=1", "alice", nil)
		r.expect(t, 200, "S", "")
		if r.env.Data != float64(3) {
			t.Fatalf("count data = %v, want 3", r.env.Data)
		}

		// Both PATCH routes answer, though httprouter cannot register both literally.
		r = f.do(t, "PATCH", fmt.Sprintf("/api/v1/task/trash/%d/back", tk.ID), "alice", nil)
		r.expect(t, 200, "S", "")
		if r.env.Data != nil {
			t.Errorf("restore one data = %v, want null", r.env.Data)
		}
		r = f.do(t, "PATCH", "/api/v1/task/trash/back?projectId=2", "alice", nil)
		r.expect(t, 200, "S", "")
		if r.env.Data != float64(1) {
			t.Errorf("restore all data = %v, want 1", r.env.Data)
		}
		if diff := cmp.Diff([]string{"restore TASK_SPRINT 10", "restore TASK 1", "restore TASK 3"}, f.restorer.calls); diff != "" {
			t.Errorf("hook calls (-want +got):\n%s", diff)
		}

		r = f.do(t, "DELETE", "/api/v1/task/trash?projectId=1", "alice", nil) // alice's own: none left but bob's
		r.expect(t, 200, "S", "")
		if r.env.Data != float64(0) {
			t.Errorf("alice's clear all = %v, want 0", r.env.Data)
		}
		bobs := f.add(t, "bob", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 4, TargetName: "another of bob's"})
		f.do(t, "DELETE", fmt.Sprintf("/api/v1/task/trash/%d", bobs.ID), "alice", nil).expect(t, 403, "E1", KeyForbidden)
		f.do(t, "DELETE", fmt.Sprintf("/api/v1/task/trash/%d", bobs.ID), "bob", nil).expect(t, 200, "S", "")
		f.do(t, "DELETE", fmt.Sprintf("/api/v1/task/trash/%d", bobs.ID), "bob", nil).expect(t, 404, "E1", KeyNotFound)
		r = f.do(t, "DELETE", "/api/v1/task/trash?projectId=1", "admin", nil)
		r.expect(t, 200, "S", "")
		if r.env.Data != float64(1) {
			t.Errorf("admin clear all = %v, want 1", r.env.Data)
		}
		f.do(t, "GET", "/api/v1/task/trash/count?projectId=1", "alice", nil).expect(t, 200, "S", "")
	})
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

func TestTrashTenantIsolationHTTP(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		e := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "secret"})
		// eve is an admin of tenant 2: tenant 1's entry answers 404, never 403.
		f.do(t, "PATCH", fmt.Sprintf("/api/v1/task/trash/%d/back", e.ID), "eve", nil).expect(t, 404, "E1", KeyNotFound)
		f.do(t, "DELETE", fmt.Sprintf("/api/v1/task/trash/%d", e.ID), "eve", nil).expect(t, 404, "E1", KeyNotFound)
		r := f.do(t, "GET", "/api/v1/task/trash/count?projectId=1", "eve", nil)
		if r.env.Data != float64(0) {
			t.Errorf("eve counts %v", r.env.Data)
		}
		r = f.do(t, "GET", "/api/v1/task/trash/search?targetType=TASK&targetName=secret", "eve", nil)
		if !strings.Contains(r.raw, `"total":0`) {
			t.Errorf("eve's search: %s", r.raw)
		}
		f.do(t, "PATCH", "/api/v1/task/trash/back?projectId=1", "eve", nil).expect(t, 200, "S", "")
		f.do(t, "DELETE", "/api/v1/task/trash?projectId=1", "eve", nil).expect(t, 200, "S", "")
		if _, err := f.trash.Get(context.Background(), users["alice"], e.ID); err != nil {
			t.Fatalf("alice's entry after eve's bulk calls: %v", err)
		}
	})
}

func TestBadInputAnswers400(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	tests := []struct {
		method, target, msg string
	}{
		{"GET", "/api/v1/task/trash/search", "targetType is required"},
		{"GET", "/api/v1/task/trash/search?targetType=BUG", "targetType must be TASK or TASK_SPRINT"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&pageSize=0", "pageSize must be an integer between 1 and 2000"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&pageNo=100001", "pageNo must be an integer between 1 and 100000"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&pageNo=1.5", "pageNo must be an integer between 1 and 100000"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&projectId=99999999999999999999", "projectId must be a positive integer"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&orderBy=name", "orderBy must be id, deletedDate or targetName"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&deletedDate=today", "deletedDate must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&filters[3].key=id&filters[3].op=EQUAL&filters[3].value=1", "filters[3].key has index 3; filter indexes are 0, 1 and 2"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&filters[0].key=tenantId&filters[0].op=EQUAL&filters[0].value=1", "filters[0].key must be one of id, projectId, targetId, targetType, targetName, sprintId, createdBy, deletedBy, deletedDate"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&filters[0].key=id&filters[0].op=MATCH&filters[0].value=1", "filters[0].op MATCH applies only to targetName"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&targetType=TASK", "targetType must be given once"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&bogus=1", "bogus is not a parameter of this operation"},
		{"GET", "/api/v1/task/trash/search?targetType=TASK&x=%zz", "query string must be well-formed URL encoding"},
		{"GET", "/api/v1/task/trash/count", "projectId is required"},
		{"GET", "/api/v1/task/trash/count?projectId=-1", "projectId must be a positive integer"},
		{"GET", "/api/v1/task/trash/count?projectId=1&projectId=2", "projectId must be given once"},
		{"GET", "/api/v1/task/trash/count?projectId=1&extra=2", "extra is not a parameter of this operation"},
		{"PATCH", "/api/v1/task/trash/back", "projectId is required"},
		{"PATCH", "/api/v1/task/trash/abc/back", "id must be a positive integer"},
		{"PATCH", "/api/v1/task/trash/0/back", "id must be a positive integer"},
		{"DELETE", "/api/v1/task/trash/9223372036854775808", "id must be a positive integer"},
		{"DELETE", "/api/v1/task/trash?projectId=x", "projectId must be a positive integer"},
	}
	for _, tc := range tests {
		r := f.do(t, tc.method, tc.target, "alice", nil)
		r.expect(t, 400, "E0", KeyValidation)
		if r.env.Msg != tc.msg {
			t.Errorf("%s %s: msg %q, want %q", tc.method, tc.target, r.env.Msg, tc.msg)
		}
	}
	if f.logs.Len() != 0 {
		t.Errorf("input errors were logged as unexpected: %s", f.logs)
	}
}

func TestProtocolErrors(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	for _, h := range []string{"", "Bearer", "Bearer ", "Basic YWxpY2U6eA==", "Bearer nobody"} {
		req := httptest.NewRequest("GET", "/api/v1/task/trash/count?projectId=1", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != 401 || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") || !strings.Contains(rec.Body.String(), `"eKey":"unauthorized"`) {
			t.Errorf("Authorization %q: %d %q %s", h, rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
		}
	}
	f.do(t, "GET", "/api/v1/nothing/here", "alice", nil).expect(t, 404, "E0", KeyRouteNotFound)
	f.do(t, "GET", "/elsewhere", "", nil).expect(t, 404, "E0", KeyRouteNotFound)
	// Allow lists what really serves the path: no OPTIONS, no HEAD, no
	// PATCH where the wildcard PATCH route that stands in for
	// /task/trash/back matches, and no DELETE (clear one) where a static
	// segment shadows its {id} (fault 8: POST /task/trash/search once
	// answered Allow: GET, DELETE).
	for _, tc := range []struct{ method, path, allow string }{
		{"PATCH", "/api/v1/task/trash/12", "GET, DELETE"},
		{"POST", "/api/v1/task/trash/12", "GET, DELETE"},
		{"POST", "/api/v1/task/trash/search", "GET"},
		{"DELETE", "/api/v1/task/trash/search", "GET"},
		{"DELETE", "/api/v1/task/trash/count", "GET"},
		{"PUT", "/api/v1/task/trash", "DELETE"},
		{"GET", "/api/v1/task/trash/back", "PATCH"},
		{"DELETE", "/api/v1/task/trash/back", "PATCH"},
		{"DELETE", "/api/v1/task/trash/12/back", "PATCH"},
		{"POST", "/api/v1/openapi.json", "GET"},
		// HEAD is served nowhere: not worth an authenticated search, and
		// leaving it out keeps Allow true.
		{"HEAD", "/api/v1/task/trash/search", "GET"},
		{"HEAD", "/api/v1/task/trash/count", "GET"},
		{"HEAD", "/api/v1/openapi.json", "GET"},
	} {
		if tc.method == "HEAD" {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			req.Header.Set("Authorization", "Bearer alice")
			rec := httptest.NewRecorder()
			f.srv.ServeHTTP(rec, req)
			if rec.Code != 405 || rec.Header().Get("Allow") != tc.allow {
				t.Errorf("HEAD %s: %d Allow %q, want 405 %q", tc.path, rec.Code, rec.Header().Get("Allow"), tc.allow)
			}
			continue
		}
		r := f.do(t, tc.method, tc.path, "alice", nil)
		r.expect(t, 405, "E0", KeyMethodNotAllowed)
		if got := r.header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestErrorTable(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	secret := errors.New("pq: password authentication failed for user root at 10.0.0.7")
	endpoints := map[string]error{
		"/input":     deskkit.Invalid("name", "must be at most %d characters", 5),
		"/forbidden": fmt.Errorf("wrapped: %w", deskkit.ErrForbidden),
		"/missing":   fmt.Errorf("wrapped: %w", deskkit.ErrNotFound),
		"/conflict":  deskkit.ErrConflict,
		"/limited":   &deskkit.RateLimitError{Message: deskkit.Plain("at most 5 codes an hour"), RetryAfter: 1500 * time.Millisecond},
		"/internal":  secret,
	}
	for path, err := range endpoints {
		f.srv.Handle("GET", "/test"+path, func(*http.Request, deskkit.Principal) (any, error) { return nil, err })
	}
	f.srv.Handle("GET", "/test/panic", func(*http.Request, deskkit.Principal) (any, error) { panic("secret panic text") })

	f.do(t, "GET", "/api/v1/test/input", "alice", nil).expect(t, 400, "E0", KeyValidation)
	f.do(t, "GET", "/api/v1/test/forbidden", "alice", nil).expect(t, 403, "E1", KeyForbidden)
	f.do(t, "GET", "/api/v1/test/missing", "alice", nil).expect(t, 404, "E1", KeyNotFound)
	f.do(t, "GET", "/api/v1/test/conflict", "alice", nil).expect(t, 409, "E1", KeyConflict)
	r := f.do(t, "GET", "/api/v1/test/limited", "alice", nil)
	r.expect(t, 429, "E3", KeyTooManyRequests)
	if r.header.Get("Retry-After") != "2" || r.env.Msg != "at most 5 codes an hour" {
		t.Errorf("429: Retry-After %q msg %q", r.header.Get("Retry-After"), r.env.Msg)
	}
	if f.logs.Len() != 0 {
		t.Errorf("expected errors were logged: %s", f.logs)
	}
	for _, path := range []string{"/api/v1/test/internal", "/api/v1/test/panic"} {
		r := f.do(t, "GET", path, "alice", nil)
		r.expect(t, 500, "E2", KeyInternal)
		if strings.Contains(r.raw, "secret") || strings.Contains(r.raw, "10.0.0.7") {
			t.Errorf("%s leaked internals: %s", path, r.raw)
		}
	}
	if !strings.Contains(f.logs.String(), "10.0.0.7") || !strings.Contains(f.logs.String(), "secret panic text") {
		t.Errorf("unexpected errors not logged: %s", f.logs)
	}
	// The panic's line carries the stack, down to the handler that panicked.
	if !strings.Contains(f.logs.String(), `"stack":"goroutine`) || !strings.Contains(f.logs.String(), "httpapi.TestErrorTable.func") {
		t.Errorf("the panic was logged without its stack: %s", f.logs)
	}
}

// A service's own error answers with its class's row and its own message;
// a row for it above its class's row gives it a key of its own.
func TestErrorTableServiceRows(t *testing.T) {
	errCodeExpired := deskkit.NewError(deskkit.ErrInvalid, "verify: code 123 expired", "the code has expired; ask for a new one")
	errGone := deskkit.NewError(deskkit.ErrNotFound, "channel: gone", "the channel was deleted")
	f := newAPI(t, dbtest.OpenSQLite(t))
	f.srv.Handle("GET", "/test/expired", func(*http.Request, deskkit.Principal) (any, error) {
		return nil, fmt.Errorf("check: %w", errCodeExpired)
	})
	f.srv.Handle("GET", "/test/gone", func(*http.Request, deskkit.Principal) (any, error) { return nil, errGone })

	r := f.do(t, "GET", "/api/v1/test/expired", "alice", nil)
	r.expect(t, 400, "E0", KeyValidation)
	if r.env.Msg != "the code has expired; ask for a new one" {
		t.Errorf("msg %q", r.env.Msg)
	}
	r = f.do(t, "GET", "/api/v1/test/gone", "alice", nil)
	r.expect(t, 404, "E1", KeyNotFound)
	if r.env.Msg != "the channel was deleted" {
		t.Errorf("msg %q", r.env.Msg)
	}

	saved := errorTable
	t.Cleanup(func() { errorTable = saved })
	errorTable = append([]errorRow{{match: is(errCodeExpired), status: http.StatusBadRequest, code: envelope.CodeBusiness, key: "code_expired", msg: "code expired"}}, saved...)
	r = f.do(t, "GET", "/api/v1/test/expired", "alice", nil)
	r.expect(t, 400, "E1", "code_expired")
	if r.env.Msg != "the code has expired; ask for a new one" || strings.Contains(r.raw, "code 123 expired") {
		t.Errorf("msg %q", r.env.Msg)
	}
	if f.logs.Len() != 0 {
		t.Errorf("service errors were logged: %s", f.logs)
	}
}

func TestDecodeJSON(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	type body struct {
		Name  string `json:"name"`
		Count int32  `json:"count"`
		Tags  []string
		To    [][]string `json:"toAddress"`
		IDs   []int64    `json:"ids"`
	}
	f.srv.Handle("POST", "/test/json", func(r *http.Request, _ deskkit.Principal) (any, error) {
		var b body
		if err := DecodeJSON(r, &b); err != nil {
			return nil, err
		}
		return b.Name, nil
	})
	tests := []struct {
		body, ctype, msg string
	}{
		{``, "", "body is required: a JSON object"},
		{`{"name":`, "", "body must be complete JSON; it ends early"},
		{`{"name": x}`, "", "body must be valid JSON; error at byte 10"},
		{`{"name": 5}`, "", "name must be a string"},
		{`{"count": 1e20}`, "", "count must be an integer that fits int32"},
		{`{"count": "1"}`, "", "count must be an integer"},
		{`{"count": 1.5}`, "", "count must be an integer that fits int32"},
		{`{"other": 1}`, "", "other is not a field of this request"},
		{`[1]`, "", "body must be a JSON object"},
		{`{"count": 024}`, "", `count is not valid JSON: a number cannot start with 0 (024, at byte 11); write it as a string: "024"`},
		{`{"count": -00}`, "", `count is not valid JSON: a number cannot start with 0 (-00, at byte 11); write it as a string: "-00"`},
		{`{"ids": [1, 012]}`, "", `body is not valid JSON: a number cannot start with 0 (012, at byte 13); write it as a string: "012"`},
		{`{"count": 10.05x}`, "", "body must be valid JSON; error at byte 16"},
		{`{"toAddress": ["a@x.com"]}`, "", "toAddress must be an array of arrays of addresses"},
		{`{"toAddress": "a@x.com"}`, "", "toAddress must be an array of arrays of addresses"},
		{`{"Tags": "x"}`, "", "Tags must be an array of tags"},
		{`{"ids": [["1"]]}`, "", "ids must be an array of integers"},
		{`{"name":"a"} {"name":"b"}`, "", "body must hold exactly one JSON object"},
		{`{"name":"a"}`, "text/plain", "Content-Type must be application/json"},
	}
	for _, tc := range tests {
		req := httptest.NewRequest("POST", "/api/v1/test/json", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer alice")
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		var env envelope.Envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatal(err)
		}
		if rec.Code != 400 || env.Msg != tc.msg {
			t.Errorf("body %.40q: %d %q, want 400 %q", tc.body, rec.Code, env.Msg, tc.msg)
		}
	}
	r := f.do(t, "POST", "/api/v1/test/json", "alice", strings.NewReader(`{"name":"ok","count":3}`))
	r.expect(t, 200, "S", "")
	if r.env.Data != "ok" {
		t.Errorf("data = %v", r.env.Data)
	}
}

// Fault 1.5 of issue 12: {"mobile":"1","mobile":"2"} was taken, the last
// key winning, and "MOBILE" filled the field mobile. Keys given twice, at
// any depth, are 400 naming the key; keys match exactly.
func TestDecodeJSONKeys(t *testing.T) {
	type item struct {
		K int `json:"k"`
	}
	type inner struct {
		Mobile string `json:"mobile"`
	}
	type Embedded struct {
		Promoted string `json:"promoted"`
	}
	type body struct {
		Embedded
		Mobile string           `json:"mobile"`
		Inner  *inner           `json:"inner"`
		Items  []item           `json:"items"`
		Grid   [][]inner        `json:"grid"`
		Meta   map[string]int   `json:"meta"`
		Any    any              `json:"any"`
		Raw    json.RawMessage  `json:"raw"`
		Tags   []string         // no tag: the key is "Tags"
		Skip   string           `json:"-"`
		Opt    string           `json:"opt,omitempty"`
		More   map[string]inner `json:"more"`
	}
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		f.srv.Handle("POST", "/test/keys", func(r *http.Request, _ deskkit.Principal) (any, error) {
			var b body
			if err := DecodeJSON(r, &b); err != nil {
				return nil, err
			}
			return b.Mobile, nil
		})
		for _, tc := range []struct{ body, msg string }{
			{`{"mobile":"1","mobile":"2"}`, "mobile must be given once"},
			{`{"MOBILE":"1"}`, "MOBILE is not a field of this request"},
			{`{"Mobile":"1"}`, "Mobile is not a field of this request"},
			{`{"inner":{"mobile":"1","mobile":"2"}}`, "inner.mobile must be given once"},
			{`{"inner":{"Mobile":"1"}}`, "inner.Mobile is not a field of this request"},
			{`{"items":[{"k":1},{"k":1,"k":2}]}`, "items.k must be given once"},
			{`{"items":[{"K":1}]}`, "items.K is not a field of this request"},
			{`{"grid":[[{"mobile":"1"},{"mobIle":"1"}]]}`, "grid.mobIle is not a field of this request"},
			{`{"meta":{"a":1,"a":2}}`, "meta.a must be given once"},
			{`{"more":{"x":{"MOBILE":"1"}}}`, "more.x.MOBILE is not a field of this request"},
			{`{"any":{"a":{"b":1,"b":2}}}`, "any.a.b must be given once"},
			{`{"raw":{"a":1,"a":2}}`, "raw.a must be given once"},
			{`{"tags":["a"]}`, "tags is not a field of this request"},
			{`{"Skip":"x"}`, "Skip is not a field of this request"},
			{`{"Promoted":"x"}`, "Promoted is not a field of this request"},
			{`{"promoted":"x","promoted":"y"}`, "promoted must be given once"},
		} {
			r := f.do(t, "POST", "/api/v1/test/keys", "alice", strings.NewReader(tc.body))
			r.expect(t, 400, "E0", KeyValidation)
			if r.env.Msg != tc.msg {
				t.Errorf("%s: msg %q, want %q", tc.body, r.env.Msg, tc.msg)
			}
		}
		ok := `{"mobile":"1","inner":{"mobile":"2"},"items":[{"k":1},{"k":2}],"grid":[[{"mobile":"3"}]],` +
			`"meta":{"a":1,"b":2},"any":{"a":1,"A":2},"raw":[1],"Tags":["x"],"opt":"o","promoted":"p","more":{"x":{"mobile":"4"}}}`
		r := f.do(t, "POST", "/api/v1/test/keys", "alice", strings.NewReader(ok))
		r.expect(t, 200, "S", "")
		if r.env.Data != "1" {
			t.Errorf("data %v", r.env.Data)
		}
	})
}

// Fault 1.6 of issue 12: a body over the limit answered 400; it is 413
// request_too_large, and the message names the limit.
func TestBodyTooLarge(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		f.srv.Handle("POST", "/test/big", func(r *http.Request, _ deskkit.Principal) (any, error) {
			var b struct {
				Name string `json:"name"`
			}
			if err := DecodeJSON(r, &b); err != nil {
				return nil, err
			}
			return len(b.Name), nil
		})
		big := `{"name":"` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}`
		r := f.do(t, "POST", "/api/v1/test/big", "alice", strings.NewReader(big))
		r.expect(t, 413, "E0", KeyRequestTooLarge)
		if r.env.Msg != "body must be at most 1048576 bytes" {
			t.Errorf("msg %q", r.env.Msg)
		}
		// Just under the limit is read.
		fits := `{"name":"` + strings.Repeat("x", DefaultMaxBodyBytes-12) + `"}`
		f.do(t, "POST", "/api/v1/test/big", "alice", strings.NewReader(fits)).expect(t, 200, "S", "")
		if f.logs.Len() != 0 {
			t.Errorf("a body over the limit was logged as unexpected: %s", f.logs)
		}
	})
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) accepted a config without an Authenticator")
	}
	if _, err := New(&Config{Authenticator: users, MaxBodyBytes: -1}); err == nil {
		t.Error("New accepted a negative MaxBodyBytes")
	}
	srv, err := New(&Config{Authenticator: users})
	if err != nil {
		t.Fatal(err)
	}
	// Without a trash, its routes are not mounted.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/v1/task/trash/count?projectId=1", nil)
	req.Header.Set("Authorization", "Bearer alice")
	srv.ServeHTTP(rec, req)
	if rec.Code != 404 {
		t.Errorf("trash route without a trash: %d", rec.Code)
	}
}

func TestGetTrashEntry(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		e := f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "Login page"})

		r := f.do(t, "GET", fmt.Sprintf("/api/v1/task/trash/%d", e.ID), "bob", nil)
		r.expect(t, 200, "S", "")
		var got trash.Entry
		remarshal(t, r.env.Data, &got)
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("entry (-added +got):\n%s", diff)
		}

		// Another tenant's id, a missing one and a malformed one.
		f.do(t, "GET", fmt.Sprintf("/api/v1/task/trash/%d", e.ID), "eve", nil).expect(t, 404, "E1", KeyNotFound)
		f.do(t, "GET", fmt.Sprintf("/api/v1/task/trash/%d", e.ID+100), "bob", nil).expect(t, 404, "E1", KeyNotFound)
		r = f.do(t, "GET", "/api/v1/task/trash/0", "bob", nil)
		r.expect(t, 400, "E0", KeyValidation)
		if r.env.Msg != "id must be a positive integer" {
			t.Errorf("msg = %q", r.env.Msg)
		}
		f.do(t, "GET", fmt.Sprintf("/api/v1/task/trash/%d?infoScope=DETAIL", e.ID), "bob", nil).expect(t, 400, "E0", KeyValidation)
		f.do(t, "GET", fmt.Sprintf("/api/v1/task/trash/%d", e.ID), "", nil).expect(t, 401, "E0", KeyUnauthorized)
		// The static routes beside the new wildcard still answer.
		f.do(t, "GET", "/api/v1/task/trash/count?projectId=1", "bob", nil).expect(t, 200, "S", "")
		f.do(t, "GET", "/api/v1/task/trash/search?targetType=TASK", "bob", nil).expect(t, 200, "S", "")
		r = f.do(t, "PUT", fmt.Sprintf("/api/v1/task/trash/%d", e.ID), "bob", nil)
		r.expect(t, 405, "E0", KeyMethodNotAllowed)
		if got := r.header.Get("Allow"); got != "GET, DELETE" {
			t.Errorf("Allow = %q", got)
		}
	})
}
