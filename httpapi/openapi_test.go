package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// fakeAuthenticator is the host's token check.
type fakeAuthenticator struct {
	AuthenticateFn func(ctx context.Context, token string) (deskkit.Principal, error)
}

func (f *fakeAuthenticator) Authenticate(ctx context.Context, token string) (deskkit.Principal, error) {
	return f.AuthenticateFn(ctx, token)
}

// fakeRestorer is the host's task store; by default it records what it is
// asked to do.
type fakeRestorer struct {
	RestoreFn func(ctx context.Context, tx bun.Tx, e trash.Entry) error
	PurgeFn   func(ctx context.Context, tx bun.Tx, e trash.Entry) error
}

func (f *fakeRestorer) Restore(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return f.RestoreFn(ctx, tx, e)
}

func (f *fakeRestorer) Purge(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return f.PurgeFn(ctx, tx, e)
}

// allButDave lets every user but dave manage the channels, so that the
// document's 403 answers of the channel operations have cases.
type allButDave struct{}

func (allButDave) CanManageChannels(_ context.Context, p deskkit.Principal, _ channel.Action) (bool, error) {
	return p != dave, nil
}

// fakeAuthorizer names project managers and the projects each user sees.
type fakeAuthorizer struct {
	CanManageProjectFn func(ctx context.Context, p deskkit.Principal, projectID int64) (bool, error)
	VisibleProjectsFn  func(ctx context.Context, p deskkit.Principal) (trash.ProjectScope, error)
}

func (f *fakeAuthorizer) CanManageProject(ctx context.Context, p deskkit.Principal, projectID int64) (bool, error) {
	return f.CanManageProjectFn(ctx, p, projectID)
}

func (f *fakeAuthorizer) VisibleProjects(ctx context.Context, p deskkit.Principal) (trash.ProjectScope, error) {
	return f.VisibleProjectsFn(ctx, p)
}

// fakeUsers shows users for detailed searches.
type fakeUsers struct {
	ResolveUsersFn func(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error)
}

func (f *fakeUsers) ResolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	return f.ResolveUsersFn(ctx, db, tenantID, ids)
}

var (
	_ httpapi.Authenticator = (*fakeAuthenticator)(nil)
	_ trash.Restorer        = (*fakeRestorer)(nil)
	_ trash.Authorizer      = (*fakeAuthorizer)(nil)
	_ trash.ProjectViewer   = (*fakeAuthorizer)(nil)
	_ trash.UserResolver    = (*fakeUsers)(nil)
)

// The users of tenant 1, by token. "broken" makes the authenticator fail
// unexpectedly, which the API answers 500.
var (
	admin = deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}
	alice = deskkit.Principal{UserID: 2, TenantID: 1}
	bob   = deskkit.Principal{UserID: 3, TenantID: 1}
	carol = deskkit.Principal{UserID: 4, TenantID: 1} // manages project 10 through the Authorizer
	dave  = deskkit.Principal{UserID: 5, TenantID: 1} // sees project 11 only
)

// nomad's user and tenant are in no directory: the token outlived them.
var nomad = deskkit.Principal{UserID: 98, TenantID: 99}

var tokens = map[string]deskkit.Principal{"admin": admin, "alice": alice, "bob": bob, "carol": carol, "dave": dave, "nomad": nomad}

var names = map[int64]deskkit.UserInfo{
	1: {Name: "Admin", Avatar: "https://example.com/admin.png"},
	2: {Name: "Alice", Avatar: "https://example.com/alice.png"},
	3: {Name: "Bob", Avatar: "https://example.com/bob.png"},
}

var now = time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)

// fixture is the trash every test starts with, all in project 10.
type fixture struct {
	sprint  trash.Entry // alice's sprint 100
	task    trash.Entry // alice's task 200, of sprint 100
	loose   trash.Entry // alice's task 201, in no sprint
	bobTask trash.Entry // bob's task 300

	// Set by a case's prepare: a code it had sent, a link secret it won,
	// the URL of a receiver it started, a channel it stored.
	code     string
	link     string
	hook     string
	channel  channel.Added
	delivery int64 // a delivery of channel
}

type env struct {
	url    string
	doc    *openapi3.T
	router routers.Router
	srv    *httpapi.Server
	db     *bun.DB
	add    func(p deskkit.Principal, ne trash.NewEntry) trash.Entry
	fx     fixture
	vh     *verifyHost  // the Verifier over the same database, with its fakes
	ch     *channelHost // the channel registry over the same database

	mu    sync.Mutex
	calls []string // what the restorer was asked, e.g. "restore TASK 200"
}

func (e *env) record(verb string, en trash.Entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, fmt.Sprintf("%s %s %d", verb, en.TargetType, en.TargetID))
}

func (e *env) recorded() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// setup starts a server over a fresh SQLite trash holding the fixture, a
// Verifier over the same database with the users of newVerifyHost, and a
// channel registry (private networks allowed, so that receivers on
// loopback answer; 2 tests a minute), and loads and validates the OpenAPI
// document the server serves.
func setup(t *testing.T) *env {
	t.Helper()
	return setupOn(t, dbtest.OpenSQLite(t))
}

// setupOn is setup over db, for tests that run on every backend.
func setupOn(t *testing.T, db *bun.DB) *env {
	t.Helper()
	ctx := t.Context()
	if err := trash.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	e := &env{db: db}
	restorer := &fakeRestorer{
		RestoreFn: func(_ context.Context, _ bun.Tx, en trash.Entry) error { e.record("restore", en); return nil },
		PurgeFn:   func(_ context.Context, _ bun.Tx, en trash.Entry) error { e.record("purge", en); return nil },
	}
	tr, err := trash.New(db, restorer, &trash.Config{
		Now: func() time.Time { return now },
		Authorizer: &fakeAuthorizer{CanManageProjectFn: func(_ context.Context, p deskkit.Principal, projectID int64) (bool, error) {
			return p.UserID == carol.UserID && projectID == 10, nil
		},
			VisibleProjectsFn: func(_ context.Context, p deskkit.Principal) (trash.ProjectScope, error) {
				if p.UserID == dave.UserID {
					return trash.ProjectScope{IDs: []int64{11}}, nil
				}
				return trash.ProjectScope{All: true}, nil
			}},
		Users: &fakeUsers{ResolveUsersFn: func(_ context.Context, _ bun.IDB, _ int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
			out := map[int64]deskkit.UserInfo{}
			for _, id := range ids {
				if u, ok := names[id]; ok {
					out[id] = u
				}
			}
			return out, nil
		}},
	})
	if err != nil {
		t.Fatalf("trash.New: %v", err)
	}
	add := func(p deskkit.Principal, ne trash.NewEntry) trash.Entry {
		t.Helper()
		en, err := tr.Add(ctx, db, p, ne)
		if err != nil {
			t.Fatalf("add %+v: %v", ne, err)
		}
		return en
	}
	e.add = add
	sprintID := int64(100)
	e.fx = fixture{
		sprint:  add(alice, trash.NewEntry{ProjectID: 10, TargetType: trash.TargetSprint, TargetID: 100, TargetName: "Sprint one", CreatedBy: alice.UserID}),
		task:    add(alice, trash.NewEntry{ProjectID: 10, TargetType: trash.TargetTask, TargetID: 200, TargetName: "Write docs", SprintID: &sprintID, CreatedBy: admin.UserID}),
		loose:   add(alice, trash.NewEntry{ProjectID: 10, TargetType: trash.TargetTask, TargetID: 201, TargetName: "Fix bug", CreatedBy: alice.UserID}),
		bobTask: add(bob, trash.NewEntry{ProjectID: 10, TargetType: trash.TargetTask, TargetID: 300, TargetName: "Bob's task", CreatedBy: bob.UserID}),
	}
	e.vh = newVerifyHost(t, db)
	e.ch = newChannelHost(t, db, channel.Config{AllowPrivateNetworks: true, TestsPerMinute: 2, ResendsPerMinute: resendsPerMinute, Authorizer: allButDave{}})

	e.srv, err = httpapi.New(&httpapi.Config{
		Authenticator: &fakeAuthenticator{AuthenticateFn: func(_ context.Context, token string) (deskkit.Principal, error) {
			if token == "broken" {
				return deskkit.Principal{}, errors.New("user directory unreachable")
			}
			if token == "outage" {
				// The host's user directory is down: what answers 503
				// even where the operation itself reads no database.
				return deskkit.Principal{}, fmt.Errorf("user directory: %w", deskkit.ErrUnavailable)
			}
			p, ok := tokens[token]
			if !ok {
				return deskkit.Principal{}, fmt.Errorf("unknown token: %w", deskkit.ErrUnauthenticated)
			}
			return p, nil
		}},
		Trash:    tr,
		Verifier: e.vh.v,
		Channels: e.ch.reg,
		Logger:   slog.New(slog.DiscardHandler),
		Now:      func() time.Time { return now },
	})
	if err != nil {
		t.Fatalf("httpapi.New: %v", err)
	}
	ts := httptest.NewServer(e.srv)
	t.Cleanup(ts.Close)
	e.url = ts.URL

	resp, body := e.do(t, http.MethodGet, httpapi.Prefix+"/openapi.json", "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET openapi.json: status %d: %s", resp.StatusCode, body)
	}
	v, ok := validatedDocs.Load(string(body))
	if !ok {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(body)
		if err != nil {
			t.Fatalf("load OpenAPI document: %v", err)
		}
		if err := doc.Validate(ctx); err != nil {
			t.Fatalf("OpenAPI document is not valid: %v", err)
		}
		// Validated just above: the router need not check the examples again.
		router, err := legacy.NewRouter(doc, openapi3.DisableExamplesValidation())
		if err != nil {
			t.Fatalf("router: %v", err)
		}
		v, _ = validatedDocs.LoadOrStore(string(body), &validatedDoc{doc: doc, router: router})
	}
	e.doc, e.router = v.(*validatedDoc).doc, v.(*validatedDoc).router
	return e
}

// validatedDocs holds the documents setup loaded and validated, by their
// bytes. Every server of the test binary serves the same document, and
// kin-openapi checks each example of a 3.1 document by compiling a JSON
// Schema for it (seconds a document): so each distinct document is
// validated once, not once per test.
var validatedDocs sync.Map // string -> *validatedDoc

type validatedDoc struct {
	doc    *openapi3.T
	router routers.Router
}

// do sends a request to the server, with the bearer token if not "" and
// body as JSON if not "".
func (e *env) do(t *testing.T, method, target, token, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+target, bodyReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, target, err)
	}
	return resp, answer
}

// bodyReader is body as a request body: none if "".
func bodyReader(body string) io.Reader {
	if body == "" {
		return nil
	}
	return strings.NewReader(body)
}

var update = flag.Bool("update", false, "rewrite openapi.json with the generated document")

// The committed openapi.json is the document the server generates with
// every service mounted; go generate ./httpapi rewrites it.
func TestOpenAPIDocumentCommitted(t *testing.T) {
	e := setup(t)
	resp, got := e.do(t, http.MethodGet, httpapi.Prefix+"/openapi.json", "", "")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if *update {
		if err := os.WriteFile("openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal(want, &w)
		t.Errorf("httpapi/openapi.json is not the generated document; run go generate ./httpapi (-committed +generated):\n%s", cmp.Diff(w, g))
	}
}

func TestOpenAPIDocumentCoversRoutes(t *testing.T) {
	e := setup(t)

	documented := map[httpapi.Route]bool{}
	for p, item := range e.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[httpapi.Route{Method: method, Path: p}] = true
		}
	}
	served := map[httpapi.Route]bool{}
	for _, r := range e.srv.Routes() {
		served[r] = true
		if !documented[r] {
			t.Errorf("route %s %s is not in the OpenAPI document", r.Method, r.Path)
		}
	}
	for r := range documented {
		if !served[r] {
			t.Errorf("operation %s %s of the OpenAPI document is not a route of the server", r.Method, r.Path)
		}
	}
}

// responseCase is one real request and what the server must answer.
type responseCase struct {
	name   string
	op     string // operationId whose responses the answer must match; "" for an unknown route
	method string
	target func(fx fixture) string // path and query
	body   func(fx fixture) string // the JSON body, if not nil
	token  string
	down   bool // the database (and the user directory) is closed first: an outage
	// prepare, if set, changes the fixture first, before target and body
	// are read.
	prepare func(t *testing.T, e *env)

	reqValid   bool // the request conforms to the document, as kin-openapi checks it
	wantStatus int
	wantKey    string                 // ext.eKey of an error
	wantData   func(fx fixture) any   // data of a success; nil wants null
	wantCalls  []string               // what the restorer is asked, in order
	wantAfter  func(fx fixture) int64 // entries of project 10 left afterwards, if not nil
	// checkData, if set, checks the data of a success instead of wantData.
	checkData func(t *testing.T, data json.RawMessage)
}

func path(format string, args ...any) func(fixture) string {
	return func(fixture) string { return fmt.Sprintf(format, args...) }
}

func search(v url.Values) func(fixture) string {
	return func(fixture) string { return httpapi.Prefix + "/task/trash/search?" + v.Encode() }
}

func entryPath(pick func(fixture) trash.Entry, suffix string) func(fixture) string {
	return func(fx fixture) string { return fmt.Sprintf("%s/task/trash/%d%s", httpapi.Prefix, pick(fx).ID, suffix) }
}

// named is en as every search shows it: with the deleter's name.
func named(en trash.Entry) trash.Entry {
	en.DeletedByName = names[en.DeletedBy].Name
	return en
}

func detailed(en trash.Entry) trash.Entry {
	en.CreatedByName, en.CreatedByAvatar = names[en.CreatedBy].Name, names[en.CreatedBy].Avatar
	en.DeletedByName, en.DeletedByAvatar = names[en.DeletedBy].Name, names[en.DeletedBy].Avatar
	return en
}

func left(n int64) func(fixture) int64 { return func(fixture) int64 { return n } }

var (
	sprintOf  = func(fx fixture) trash.Entry { return fx.sprint }
	taskOf    = func(fx fixture) trash.Entry { return fx.task }
	looseOf   = func(fx fixture) trash.Entry { return fx.loose }
	bobTaskOf = func(fx fixture) trash.Entry { return fx.bobTask }
)

var responseCases = []responseCase{
	// GET /openapi.json
	{name: "document", op: "getOpenAPIDocument", method: http.MethodGet, target: path("/api/v1/openapi.json"),
		reqValid: true, wantStatus: 200},
	{name: "document unknown parameter", op: "getOpenAPIDocument", method: http.MethodGet, target: path("/api/v1/openapi.json?format=yaml"),
		reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},

	// GET /task/trash/search
	{name: "search by name order", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"targetType": {"TASK"}, "projectId": {"10"}, "orderBy": {"targetName"}, "orderSort": {"ASC"}, "pageSize": {"2"}, "infoScope": {"BASIC"}}),
		token:  "alice", reqValid: true, wantStatus: 200,
		wantData: func(fx fixture) any {
			return trash.Page{Total: 3, List: []trash.Entry{named(fx.bobTask), named(fx.loose)}}
		}},
	{name: "search detail with filters", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{
			"targetType": {"TASK"}, "infoScope": {"DETAIL"}, "pageNo": {"1"},
			"filters[0].key": {"sprintId"}, "filters[0].op": {"IS_NOT_NULL"},
			"filters[1].key": {"targetName"}, "filters[1].op": {"MATCH"}, "filters[1].value": {"DOCS"},
			"filters[2].key": {"deletedDate"}, "filters[2].op": {"LESS_THAN_EQUAL"}, "filters[2].value": {"2026-11-22 01:00:00"},
		}),
		token: "bob", reqValid: true, wantStatus: 200,
		wantData: func(fx fixture) any { return trash.Page{Total: 1, List: []trash.Entry{detailed(fx.task)}} }},
	{name: "search sprints by date", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"targetType": {"TASK_SPRINT"}, "deletedDate": {"2026-11-22T01:00:00Z"}, "targetName": {"sprint"}}),
		token:  "alice", reqValid: true, wantStatus: 200,
		wantData: func(fx fixture) any { return trash.Page{Total: 1, List: []trash.Entry{named(fx.sprint)}} }},
	{name: "search past the last page", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"targetType": {"TASK"}, "pageNo": {"100000"}, "pageSize": {"2000"}, "orderBy": {"deletedDate"}}),
		token:  "alice", reqValid: true, wantStatus: 200,
		wantData: func(fixture) any { return trash.Page{Total: 3, List: []trash.Entry{}} }},
	{name: "search page size out of bounds", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"targetType": {"TASK"}, "pageSize": {"2001"}}),
		token:  "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "search without target type", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"projectId": {"10"}}),
		token:  "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "search unknown filter op", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"targetType": {"TASK"}, "filters[0].key": {"id"}, "filters[0].op": {"LIKE"}, "filters[0].value": {"1"}}),
		token:  "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "search a project not visible", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"targetType": {"TASK"}, "projectId": {"10"}}),
		token:  "dave", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "search only visible projects", op: "searchTrash", method: http.MethodGet,
		target: search(url.Values{"targetType": {"TASK"}}),
		token:  "dave", reqValid: true, wantStatus: 200,
		wantData: func(fixture) any { return trash.Page{Total: 0, List: []trash.Entry{}} }},

	// GET /task/trash/count
	{name: "count", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count?projectId=10"),
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return 4 }},
	{name: "count empty project", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count?projectId=11"),
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return 0 }},
	{name: "count a project not visible", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count?projectId=10"),
		token: "dave", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "count without project", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count"),
		token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
	// OpenAPI cannot say "no other parameters" or "at most once", so these
	// requests conform to the document; its descriptions say they are 400.
	{name: "count unknown parameter", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count?projectId=10&project=10"),
		token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "count project given twice", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count?projectId=10&projectId=11"),
		token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "count unknown token", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count?projectId=10"),
		token: "mallory", reqValid: true, wantStatus: 401, wantKey: httpapi.KeyUnauthorized},

	// GET /task/trash/{id}
	{name: "get entry", op: "getTrash", method: http.MethodGet, target: entryPath(taskOf, ""),
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fx fixture) any { return detailed(fx.task) }},
	{name: "get entry a project not visible", op: "getTrash", method: http.MethodGet, target: entryPath(taskOf, ""),
		token: "dave", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "get entry unknown id", op: "getTrash", method: http.MethodGet, target: path("/api/v1/task/trash/9999"),
		token: "bob", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "get entry id not a number", op: "getTrash", method: http.MethodGet, target: path("/api/v1/task/trash/abc"),
		token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "get entry unknown parameter", op: "getTrash", method: http.MethodGet, target: entryPath(taskOf, "?infoScope=DETAIL"),
		token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "get entry database down", op: "getTrash", method: http.MethodGet, target: entryPath(taskOf, ""),
		token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// PATCH /task/trash/{id}/back
	{name: "restore task with its sprint", op: "restoreTrash", method: http.MethodPatch, target: entryPath(taskOf, "/back"),
		token: "alice", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return nil },
		wantCalls: []string{"restore TASK_SPRINT 100", "restore TASK 200"}, wantAfter: left(2)},
	{name: "restore by project manager", op: "restoreTrash", method: http.MethodPatch, target: entryPath(looseOf, "/back"),
		token: "carol", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return nil },
		wantCalls: []string{"restore TASK 201"}, wantAfter: left(3)},
	{name: "restore bad id", op: "restoreTrash", method: http.MethodPatch, target: path("/api/v1/task/trash/0/back"),
		token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "restore another user's entry", op: "restoreTrash", method: http.MethodPatch, target: entryPath(sprintOf, "/back"),
		token: "bob", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden, wantAfter: left(4)},
	{name: "restore unknown id", op: "restoreTrash", method: http.MethodPatch, target: path("/api/v1/task/trash/9999/back"),
		token: "admin", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},

	// PATCH /task/trash/back
	{name: "restore all own", op: "restoreAllTrash", method: http.MethodPatch, target: path("/api/v1/task/trash/back?projectId=10"),
		token: "alice", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return 3 },
		wantCalls: []string{"restore TASK_SPRINT 100", "restore TASK 200", "restore TASK 201"}, wantAfter: left(1)},
	{name: "restore all as admin", op: "restoreAllTrash", method: http.MethodPatch, target: path("/api/v1/task/trash/back?projectId=10"),
		token: "admin", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return 4 },
		wantCalls: []string{"restore TASK_SPRINT 100", "restore TASK 200", "restore TASK 201", "restore TASK 300"}, wantAfter: left(0)},
	{name: "restore all of a project not visible", op: "restoreAllTrash", method: http.MethodPatch, target: path("/api/v1/task/trash/back?projectId=10"),
		token: "dave", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound, wantAfter: left(4)},
	{name: "restore all bad project", op: "restoreAllTrash", method: http.MethodPatch, target: path("/api/v1/task/trash/back?projectId=-1"),
		token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	// POST: GET /task/trash/back is not getTrash either (the static
	// segment shadows {id}, as OpenAPI matches concrete paths first), but
	// kin-openapi's router, which checks the answer, matches the template.

	// DELETE /task/trash/{id}
	{name: "clear sprint with its task", op: "clearTrash", method: http.MethodDelete, target: entryPath(sprintOf, ""),
		token: "alice", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return nil },
		wantCalls: []string{"purge TASK 200", "purge TASK_SPRINT 100"}, wantAfter: left(2)},
	{name: "clear by admin", op: "clearTrash", method: http.MethodDelete, target: entryPath(bobTaskOf, ""),
		token: "admin", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return nil },
		wantCalls: []string{"purge TASK 300"}, wantAfter: left(3)},
	{name: "clear id not a number", op: "clearTrash", method: http.MethodDelete, target: path("/api/v1/task/trash/abc"),
		token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "clear another user's entry", op: "clearTrash", method: http.MethodDelete, target: entryPath(looseOf, ""),
		token: "bob", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden, wantAfter: left(4)},
	{name: "clear unknown id", op: "clearTrash", method: http.MethodDelete, target: path("/api/v1/task/trash/9999"),
		token: "alice", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},

	// DELETE /task/trash
	{name: "clear all own", op: "clearAllTrash", method: http.MethodDelete, target: path("/api/v1/task/trash?projectId=10"),
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return 1 },
		wantCalls: []string{"purge TASK 300"}, wantAfter: left(3)},
	{name: "clear all by project manager", op: "clearAllTrash", method: http.MethodDelete, target: path("/api/v1/task/trash?projectId=10"),
		token: "carol", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return 4 },
		wantCalls: []string{"purge TASK 200", "purge TASK 201", "purge TASK 300", "purge TASK_SPRINT 100"}, wantAfter: left(0)},
	{name: "clear all of a project not visible", op: "clearAllTrash", method: http.MethodDelete, target: path("/api/v1/task/trash?projectId=10"),
		token: "dave", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound, wantAfter: left(4)},
	// Bob's task in alice's sprint: clearing the sprint would purge it, and
	// alice may not clear it herself (fault 4).
	{name: "clear all would purge another's task", op: "clearAllTrash", method: http.MethodDelete, target: path("/api/v1/task/trash?projectId=10"),
		prepare: func(_ *testing.T, e *env) {
			sprintID := int64(100)
			e.add(bob, trash.NewEntry{ProjectID: 10, TargetType: trash.TargetTask, TargetID: 202, TargetName: "Bob's task in alice's sprint", SprintID: &sprintID, CreatedBy: bob.UserID})
		},
		token: "alice", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden, wantAfter: left(5)},
	{name: "clear all bad project", op: "clearAllTrash", method: http.MethodDelete, target: path("/api/v1/task/trash?projectId=0"),
		token: "admin", wantStatus: 400, wantKey: httpapi.KeyValidation, wantAfter: left(4)},

	// The database is down: every operation answers 503 with Retry-After.
	{name: "search database down", op: "searchTrash", method: http.MethodGet, target: search(url.Values{"targetType": {"TASK"}}),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
	{name: "count database down", op: "countTrash", method: http.MethodGet, target: path("/api/v1/task/trash/count?projectId=10"),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
	{name: "restore database down", op: "restoreTrash", method: http.MethodPatch, target: entryPath(taskOf, "/back"),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
	{name: "restore all database down", op: "restoreAllTrash", method: http.MethodPatch, target: path("/api/v1/task/trash/back?projectId=10"),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
	{name: "clear database down", op: "clearTrash", method: http.MethodDelete, target: entryPath(looseOf, ""),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
	{name: "clear all database down", op: "clearAllTrash", method: http.MethodDelete, target: path("/api/v1/task/trash?projectId=10"),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// No route. (Paths a cleaning mux would rewrite: TestNoRedirects.)
	{name: "unknown route", method: http.MethodGet, target: path("/api/v1/task/bin"),
		token: "alice", wantStatus: 404, wantKey: httpapi.KeyRouteNotFound},
	{name: "unknown route outside prefix", method: http.MethodDelete, target: path("/task/trash/1"),
		wantStatus: 404, wantKey: httpapi.KeyRouteNotFound},
}

// fill is a target or body with {code} (the code the case's prepare sent),
// {number} (that code as a JSON number: its leading zeros lost), {wrong} (a
// code that is not it), {link} (the link secret prepare won), {hook} (the
// URL of the receiver it started), {channelId} (the id of the channel
// it stored) and {deliveryId} (the delivery it published) filled in.
func fill(s string) func(fixture) string {
	return func(fx fixture) string {
		number := strings.TrimLeft(fx.code, "0")
		if number == "" {
			number = "0"
		}
		return strings.NewReplacer("{code}", fx.code, "{number}", number, "{wrong}", wrongCode(fx.code), "{link}", fx.link,
			"{hook}", fx.hook, "{channelId}", fmt.Sprint(fx.channel.ID), "{deliveryId}", fmt.Sprint(fx.delivery)).Replace(s)
	}
}

// sentSMS is a prepare that sends p a code, kept as fx.code.
func sentSMS(p deskkit.Principal, bizKey verify.BizKey, mobile string) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) { e.fx.code = e.vh.sendSMS(t, p, bizKey, mobile) }
}

// sentEmail is a prepare that sends p a code, kept as fx.code.
func sentEmail(p deskkit.Principal, bizKey verify.BizKey, email string) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) { e.fx.code = e.vh.sendEmail(t, p, bizKey, email) }
}

// exhausted is a prepare that sends p a code and enters it wrong
// MaxAttempts times, so that it is dead.
func exhausted(p deskkit.Principal, bizKey verify.BizKey, address string) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) {
		if strings.HasPrefix(address, "+") {
			e.fx.code = e.vh.sendSMS(t, p, bizKey, address)
		} else {
			e.fx.code = e.vh.sendEmail(t, p, bizKey, address)
		}
		e.vh.wrongChecks(t, p, bizKey, address, e.fx.code, verify.MaxAttempts)
	}
}

// modifyProof is a prepare for p's MODIFY_MOBILE or MODIFY_EMAIL change to
// newAddress: it wins a link secret on wonOn (p's current address for a
// real proof) and sends a code to newAddress.
func modifyProof(p deskkit.Principal, bizKey verify.BizKey, wonOn, newAddress string) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) {
		if strings.HasPrefix(newAddress, "+") {
			e.fx.link = e.vh.checkSMS(t, p, bizKey, wonOn, e.vh.sendSMS(t, p, bizKey, wonOn))
			e.vh.clock.Advance(verify.DefaultResendInterval) // wonOn may be newAddress
			e.fx.code = e.vh.sendSMS(t, p, bizKey, newAddress)
		} else {
			e.fx.link = e.vh.checkEmail(t, p, bizKey, wonOn, e.vh.sendEmail(t, p, bizKey, wonOn))
			e.vh.clock.Advance(verify.DefaultResendInterval)
			e.fx.code = e.vh.sendEmail(t, p, bizKey, newAddress)
		}
	}
}

func sinkFails(_ *testing.T, e *env) { e.vh.sink.FailWith(errGatewayDown) }

func sinkThrottled(_ *testing.T, e *env) { e.vh.sink.FailWith(errThrottled) }

// userData is the data of an answer that shows u.
func userData(u verify.User, edit func(u *verify.User)) func(fixture) any {
	return func(fixture) any {
		v := u
		if edit != nil {
			edit(&v)
		}
		return detailOf(v)
	}
}

func wantLinkSecret(t *testing.T, data json.RawMessage) {
	t.Helper()
	var link verify.Link
	if err := json.Unmarshal(data, &link); err != nil || !strings.HasPrefix(link.Secret, "dkl_") {
		t.Errorf("data %s is not a link secret (%v)", data, err)
	}
}

var codeSent = func(fixture) any { return verify.Sent{ExpiresInSeconds: 300, ResendInSeconds: 60} }

// verifyResponseCases are the current user's operations.
var verifyResponseCases = []responseCase{
	// GET /user/current
	{name: "current user", op: "getCurrentUser", method: http.MethodGet, target: path("/api/v1/user/current"),
		token: "alice", reqValid: true, wantStatus: 200, wantData: userData(aliceUser, nil)},
	{name: "current user unknown parameter", op: "getCurrentUser", method: http.MethodGet, target: path("/api/v1/user/current?id=2"),
		token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "current user gone", op: "getCurrentUser", method: http.MethodGet, target: path("/api/v1/user/current"),
		token: "nomad", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "current user directory down", op: "getCurrentUser", method: http.MethodGet, target: path("/api/v1/user/current"),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// PATCH /user/current
	{name: "update profile", op: "updateCurrentUser", method: http.MethodPatch, target: path("/api/v1/user/current"),
		body:  fill(`{"title": "Engineer", "avatar": "https://example.com/alice.png", "lastName": "", "gender": null}`),
		token: "alice", reqValid: true, wantStatus: 200,
		// fullName follows its parts: lastName cleared, the given name alone.
		wantData: userData(aliceUser, func(u *verify.User) {
			u.Title, u.Avatar, u.LastName, u.FullName = "Engineer", "https://example.com/alice.png", "", "Alice"
		})},
	{name: "update profile bad gender", op: "updateCurrentUser", method: http.MethodPatch, target: path("/api/v1/user/current"),
		body: fill(`{"gender": "OTHER"}`), token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "update profile unknown field", op: "updateCurrentUser", method: http.MethodPatch, target: path("/api/v1/user/current"),
		body: fill(`{"nickname": "al"}`), token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "update profile username taken", op: "updateCurrentUser", method: http.MethodPatch, target: path("/api/v1/user/current"),
		body: fill(`{"username": "bob"}`), token: "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyConflict},
	{name: "update profile user gone", op: "updateCurrentUser", method: http.MethodPatch, target: path("/api/v1/user/current"),
		body: fill(`{"title": "x"}`), token: "nomad", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "update profile database down", op: "updateCurrentUser", method: http.MethodPatch, target: path("/api/v1/user/current"),
		body: fill(`{"title": "x"}`), token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// GET /user/current/tenant
	{name: "tenant", op: "getCurrentUserTenant", method: http.MethodGet, target: path("/api/v1/user/current/tenant"),
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return verify.TenantDetail{ID: 1, Name: "Acme"} }},
	{name: "tenant unknown parameter", op: "getCurrentUserTenant", method: http.MethodGet, target: path("/api/v1/user/current/tenant?tenantId=1"),
		token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "tenant gone", op: "getCurrentUserTenant", method: http.MethodGet, target: path("/api/v1/user/current/tenant"),
		token: "nomad", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "tenant directory down", op: "getCurrentUserTenant", method: http.MethodGet, target: path("/api/v1/user/current/tenant"),
		token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// POST /user/current/sms/send
	{name: "send sms mobile as number", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`),
		token: "alice", reqValid: true, wantStatus: 200, wantData: codeSent},
	{name: "send sms mobile as written", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": "+86 137-0013-7000", "country": "cn"}`),
		token: "carol", reqValid: true, wantStatus: 200, wantData: codeSent},
	{name: "send sms e-mail bizKey", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "MODIFY_EMAIL", "mobile": 13800138000, "country": "CN"}`),
		token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "send sms not a mobile number", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "SIGNIN", "mobile": 1380013800, "country": "CN"}`),
		token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "send sms another user's number", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "SIGNIN", "mobile": "13900139000", "country": "CN"}`),
		token: "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAddressTaken},
	{name: "send sms bind with a number", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": "13700137000", "country": "CN"}`),
		token: "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAlreadyBound},
	{name: "send sms modify without a number", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "MODIFY_MOBILE", "mobile": "13700137000", "country": "CN"}`),
		token: "carol", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyNotBound},
	{name: "send sms again too soon", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		prepare: sentSMS(alice, "SIGNIN", aliceMobile), body: fill(`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`),
		token: "alice", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyTooManyRequests},
	{name: "send sms gateway down", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		prepare: sinkFails, body: fill(`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`),
		token: "alice", reqValid: true, wantStatus: 502, wantKey: httpapi.KeySendFailed},
	{name: "send sms throttled", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		prepare: sinkThrottled, body: fill(`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`),
		token: "alice", reqValid: true, wantStatus: 503, wantKey: httpapi.KeySendThrottled},
	{name: "send sms user gone", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`),
		token: "nomad", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "send sms database down", op: "sendSmsCode", method: http.MethodPost, target: path("/api/v1/user/current/sms/send"),
		body:  fill(`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// POST /user/current/email/send
	{name: "send email", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com", "alice@EXAMPLE.com"], ["ann@example.org"]]}`),
		token: "alice", reqValid: true, wantStatus: 200, wantData: codeSent},
	{name: "send email six addresses", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "SIGNIN", "toAddress": [["a@example.com", "b@example.com", "c@example.com"], ["d@example.com", "e@example.com", "f@example.com"]]}`),
		token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "send email sms bizKey", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "MODIFY_MOBILE", "toAddress": [["alice@example.com"]]}`),
		token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "send email another user's address", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"], ["admin@example.com"]]}`),
		token: "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAddressTaken},
	{name: "send email bind with an address", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "BIND_EMAIL", "toAddress": [["new@example.com"]]}`),
		token: "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAlreadyBound},
	{name: "send email modify without an address", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "MODIFY_EMAIL", "toAddress": [["new@example.com"]]}`),
		token: "bob", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyNotBound},
	{name: "send email again too soon", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		prepare: sentEmail(alice, "SIGNIN", aliceEmail), body: fill(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]]}`),
		token: "alice", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyTooManyRequests},
	{name: "send email mail server down", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		prepare: sinkFails, body: fill(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]]}`),
		token: "alice", reqValid: true, wantStatus: 502, wantKey: httpapi.KeySendFailed},
	{name: "send email user gone", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]]}`),
		token: "nomad", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "send email database down", op: "sendEmailCode", method: http.MethodPost, target: path("/api/v1/user/current/email/send"),
		body:  fill(`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com"]]}`),
		token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// GET /user/current/sms/check
	{name: "check sms", op: "checkSmsCode", method: http.MethodGet, prepare: sentSMS(alice, "SIGNIN", aliceMobile),
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=138+0013+8000&country=CN&verificationCode={code}"),
		token:  "alice", reqValid: true, wantStatus: 200, checkData: wantLinkSecret},
	{name: "check sms wrong code", op: "checkSmsCode", method: http.MethodGet, prepare: sentSMS(alice, "SIGNIN", aliceMobile),
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode={wrong}"),
		token:  "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeWrong},
	{name: "check sms expired code", op: "checkSmsCode", method: http.MethodGet,
		prepare: func(t *testing.T, e *env) {
			sentSMS(alice, "SIGNIN", aliceMobile)(t, e)
			e.vh.clock.Advance(verify.DefaultCodeTTL)
		},
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode={code}"),
		token:  "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeExpired},
	{name: "check sms no code", op: "checkSmsCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode=123456"),
		token:  "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeMissing},
	{name: "check sms code not digits", op: "checkSmsCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode=12a456"),
		token:  "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "check sms without country", op: "checkSmsCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&verificationCode=123456"),
		token:  "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "check sms dead code", op: "checkSmsCode", method: http.MethodGet, prepare: exhausted(alice, "SIGNIN", aliceMobile),
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode={code}"),
		token:  "alice", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyCodeExhausted},
	{name: "check sms too many failures today", op: "checkSmsCode", method: http.MethodGet,
		prepare: func(t *testing.T, e *env) {
			for _, b := range []verify.BizKey{"SIGNUP", "PASSWORD_FORGET", "PASSWORD_UPDATE", "SIGN_CANCEL"} {
				exhausted(alice, b, aliceMobile)(t, e) // 4 x 5 = DefaultFailuresPerDay
			}
			sentSMS(alice, "SIGNIN", aliceMobile)(t, e)
		},
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode={code}"),
		token:  "alice", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyTooManyFailures},
	{name: "check sms another user's number", op: "checkSmsCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13900139000&country=CN&verificationCode=123456"),
		token:  "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAddressTaken},
	// A check reads no user: one the directory lost has no code.
	{name: "check sms user gone", op: "checkSmsCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13700137000&country=CN&verificationCode=123456"),
		token:  "nomad", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeMissing},
	{name: "check sms database down", op: "checkSmsCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/sms/check?bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode=123456"),
		token:  "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// GET /user/current/email/check
	{name: "check email", op: "checkEmailCode", method: http.MethodGet, prepare: sentEmail(alice, "SIGNIN", aliceEmail),
		target: fill("/api/v1/user/current/email/check?bizKey=SIGNIN&email=alice%40EXAMPLE.com&verificationCode={number}"),
		token:  "alice", reqValid: true, wantStatus: 200, checkData: wantLinkSecret},
	{name: "check email wrong code", op: "checkEmailCode", method: http.MethodGet, prepare: sentEmail(alice, "SIGNIN", aliceEmail),
		target: fill("/api/v1/user/current/email/check?bizKey=SIGNIN&email=alice%40example.com&verificationCode={wrong}"),
		token:  "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeWrong},
	{name: "check email code too long", op: "checkEmailCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/email/check?bizKey=SIGNIN&email=alice%40example.com&verificationCode=123456789"),
		token:  "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "check email dead code", op: "checkEmailCode", method: http.MethodGet, prepare: exhausted(alice, "SIGNIN", aliceEmail),
		target: fill("/api/v1/user/current/email/check?bizKey=SIGNIN&email=alice%40example.com&verificationCode={code}"),
		token:  "alice", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyCodeExhausted},
	{name: "check email another user's address", op: "checkEmailCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/email/check?bizKey=SIGNIN&email=admin%40example.com&verificationCode=123456"),
		token:  "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAddressTaken},
	// A check reads no user: one the directory lost has no code.
	{name: "check email user gone", op: "checkEmailCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/email/check?bizKey=SIGNIN&email=new%40example.com&verificationCode=123456"),
		token:  "nomad", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeMissing},
	{name: "check email database down", op: "checkEmailCode", method: http.MethodGet,
		target: fill("/api/v1/user/current/email/check?bizKey=SIGNIN&email=alice%40example.com&verificationCode=123456"),
		token:  "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// PATCH /user/current/mobile
	{name: "bind mobile", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		prepare: sentSMS(carol, "BIND_MOBILE", freeMobile),
		body:    fill(`{"bizKey": "BIND_MOBILE", "mobile": "137 0013 7000", "country": "CN", "itc": "+86", "verificationCode": "{code}"}`),
		token:   "carol", reqValid: true, wantStatus: 200,
		wantData: userData(carolUser, func(u *verify.User) { u.Mobile, u.Country = freeMobile, "CN" })},
	{name: "modify mobile", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		prepare: modifyProof(alice, "MODIFY_MOBILE", aliceMobile, freeMobile),
		body:    fill(`{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": {number}, "linkSecret": "{link}"}`),
		token:   "alice", reqValid: true, wantStatus: 200,
		wantData: userData(aliceUser, func(u *verify.User) { u.Mobile = freeMobile })},
	{name: "change mobile sign-in bizKey", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		body:  fill(`{"bizKey": "SIGNIN", "mobile": 13700137000, "country": "CN", "verificationCode": 123456}`),
		token: "carol", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "change mobile wrong itc", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 1, "verificationCode": 123456}`),
		token: "carol", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "change mobile wrong code", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		prepare: sentSMS(carol, "BIND_MOBILE", freeMobile),
		body:    fill(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": "{wrong}"}`),
		token:   "carol", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeWrong},
	{name: "change mobile link secret won on the new number", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		prepare: modifyProof(alice, "MODIFY_MOBILE", freeMobile, freeMobile),
		body:    fill(`{"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": "{code}", "linkSecret": "{link}"}`),
		token:   "alice", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyLinkSecretRefused},
	{name: "change mobile bind with a number", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 123456}`),
		token: "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAlreadyBound},
	{name: "change mobile to another user's number", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": 13900139000, "country": "CN", "verificationCode": 123456}`),
		token: "carol", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyAddressTaken},
	{name: "change mobile concurrent change", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		prepare: func(t *testing.T, e *env) {
			sentSMS(carol, "BIND_MOBILE", freeMobile)(t, e)
			e.vh.dir.WhenSetting(func() { e.vh.dir.SetAddress(dave.UserID, verify.KindSMS, freeMobile) }) // dave takes it meanwhile
		},
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": "{code}"}`),
		token: "carol", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyConflict},
	{name: "change mobile dead code", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		prepare: exhausted(carol, "BIND_MOBILE", freeMobile),
		body:    fill(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": "{code}"}`),
		token:   "carol", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyCodeExhausted},
	{name: "change mobile user gone", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 123456}`),
		token: "nomad", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "change mobile database down", op: "changeMobile", method: http.MethodPatch, target: path("/api/v1/user/current/mobile"),
		body:  fill(`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 123456}`),
		token: "carol", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// PATCH /user/current/email
	{name: "bind email", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		prepare: sentEmail(bob, "BIND_EMAIL", freeEmail),
		body:    fill(`{"bizKey": "BIND_EMAIL", "email": "new@EXAMPLE.com", "verificationCode": {number}}`),
		token:   "bob", reqValid: true, wantStatus: 200,
		wantData: userData(bobUser, func(u *verify.User) { u.Email = freeEmail })},
	{name: "modify email", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		prepare: modifyProof(alice, "MODIFY_EMAIL", aliceEmail, freeEmail),
		body:    fill(`{"bizKey": "MODIFY_EMAIL", "email": "new@example.com", "verificationCode": "{code}", "linkSecret": "{link}"}`),
		token:   "alice", reqValid: true, wantStatus: 200,
		wantData: userData(aliceUser, func(u *verify.User) { u.Email = freeEmail })},
	{name: "change email without link secret", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		body:  fill(`{"bizKey": "MODIFY_EMAIL", "email": "new@example.com", "verificationCode": "123456"}`),
		token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "change email code as a fraction", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		body:  fill(`{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": 1234.5}`),
		token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "change email expired code", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		prepare: func(t *testing.T, e *env) {
			sentEmail(bob, "BIND_EMAIL", freeEmail)(t, e)
			e.vh.clock.Advance(verify.DefaultCodeTTL)
		},
		body:  fill(`{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": "{code}"}`),
		token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyCodeExpired},
	{name: "change email link secret won on the new address", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		prepare: modifyProof(alice, "MODIFY_EMAIL", freeEmail, freeEmail),
		body:    fill(`{"bizKey": "MODIFY_EMAIL", "email": "new@example.com", "verificationCode": "{code}", "linkSecret": "{link}"}`),
		token:   "alice", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyLinkSecretRefused},
	{name: "change email modify without an address", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		body:  fill(`{"bizKey": "MODIFY_EMAIL", "email": "new@example.com", "verificationCode": "123456", "linkSecret": "dkl_x"}`),
		token: "carol", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyNotBound},
	{name: "change email dead code", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		prepare: exhausted(bob, "BIND_EMAIL", freeEmail),
		body:    fill(`{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": "{code}"}`),
		token:   "bob", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyCodeExhausted},
	{name: "change email user gone", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		body:  fill(`{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": "123456"}`),
		token: "nomad", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "change email database down", op: "changeEmail", method: http.MethodPatch, target: path("/api/v1/user/current/email"),
		body:  fill(`{"bizKey": "BIND_EMAIL", "email": "new@example.com", "verificationCode": "123456"}`),
		token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
}

// resendsPerMinute is the resend throttle of setup's registry.
const resendsPerMinute = 2

// TestOpenAPIResponses sends real requests and checks every answer against
// the document; it then checks that every documented response of every
// operation was seen.
func TestOpenAPIResponses(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{} // "operationId status"
	t.Run("cases", func(t *testing.T) {
		for _, tc := range slices.Concat(responseCases, verifyResponseCases, channelResponseCases, eventResponseCases) {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e := setup(t)
				checkResponse(t, e, tc)
				mu.Lock()
				seen[fmt.Sprintf("%s %d", tc.op, tc.wantStatus)] = true
				mu.Unlock()
			})
		}
		// The answers every operation shares, derived from the document:
		// a request of each operation built from its examples, sent
		// without a token (401), with a method that serves nothing at its
		// path (405), with a token the authenticator fails on (500), and
		// with one whose directory is down (503), each where the document
		// lists it.
		for _, tc := range genericCases(t, setup(t)) {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				checkResponse(t, setup(t), tc)
				mu.Lock()
				seen[fmt.Sprintf("%s %d", tc.op, tc.wantStatus)] = true
				mu.Unlock()
			})
		}
		// Every operation the document says answers 413 (those with a
		// body, once the error table has its body-size row) gets a body
		// over the limit.
		t.Run("body too large", func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			big := `{"name":"` + strings.Repeat("x", httpapi.DefaultMaxBodyBytes) + `"}`
			for p, item := range e.doc.Paths.Map() {
				for method, op := range item.Operations() {
					if op.Responses.Status(http.StatusRequestEntityTooLarge) == nil {
						continue
					}
					target := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(p, "1")
					resp, body := e.do(t, method, target, "admin", big)
					if resp.StatusCode != http.StatusRequestEntityTooLarge {
						t.Errorf("%s %s with a body over the limit: %d %s", method, target, resp.StatusCode, body)
						continue
					}
					req := httptest.NewRequestWithContext(t.Context(), method, target, nil)
					route, pathParams, err := e.router.FindRoute(req)
					if err != nil {
						t.Fatalf("%s %s: %v", method, target, err)
					}
					err = openapi3filter.ValidateResponse(t.Context(), &openapi3filter.ResponseValidationInput{
						RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route},
						Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
						Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
					})
					if err != nil {
						t.Errorf("response to %s %s does not match the document:\n%v", method, target, err)
					}
					mu.Lock()
					seen[fmt.Sprintf("%s %d", op.OperationID, resp.StatusCode)] = true
					mu.Unlock()
				}
			}
		})
	})
	if t.Failed() {
		return
	}

	e := setup(t)
	for p, item := range e.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				if !seen[op.OperationID+" "+status] {
					t.Errorf("no case answers %s %s (%s) with %s", method, p, op.OperationID, status)
				}
			}
		}
	}
}

// genericCases are the answers every operation of e's document shares,
// rows of the error table and the router's 405: one case per operation
// and status (401, 405, 500, 503) the document lists, each request built
// from the operation's examples (its path, required query parameters and
// body).
func genericCases(t *testing.T, e *env) []responseCase {
	t.Helper()
	var cases []responseCase
	for p, item := range e.doc.Paths.Map() {
		for method, op := range item.Operations() {
			target, body := exampleRequest(t, p, op)
			base := responseCase{op: op.OperationID, method: method, target: path("%s", target)}
			if body != "" {
				base.body = func(fixture) string { return body }
			}
			for _, g := range []struct {
				status int
				key    string
				change func(*responseCase)
			}{
				{http.StatusUnauthorized, httpapi.KeyUnauthorized, func(tc *responseCase) {}},
				{http.StatusMethodNotAllowed, httpapi.KeyMethodNotAllowed, func(tc *responseCase) {
					tc.token = "admin"
					// A method no documented operation serves at the path
					// (a template the path also matches included).
					for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
						req := httptest.NewRequestWithContext(t.Context(), m, target, nil)
						if _, _, err := e.router.FindRoute(req); err != nil {
							tc.method = m
							return
						}
					}
					t.Fatalf("every method serves %s", target)
				}},
				{http.StatusInternalServerError, httpapi.KeyInternal, func(tc *responseCase) { tc.token, tc.reqValid = "broken", true }},
				{http.StatusServiceUnavailable, httpapi.KeyServiceUnavailable, func(tc *responseCase) { tc.token, tc.reqValid = "outage", true }},
			} {
				if op.Responses.Status(g.status) == nil {
					continue
				}
				tc := base
				tc.wantStatus, tc.wantKey = g.status, g.key
				g.change(&tc)
				tc.name = fmt.Sprintf("%s %d", op.OperationID, g.status)
				cases = append(cases, tc)
			}
		}
	}
	slices.SortFunc(cases, func(a, b responseCase) int { return strings.Compare(a.name, b.name) })
	return cases
}

// exampleRequest is the target (path and required query parameters) and
// body of a request to op at the path template p, from the examples of
// its parameters and body.
func exampleRequest(t *testing.T, p string, op *openapi3.Operation) (target, body string) {
	t.Helper()
	q := url.Values{}
	for _, ref := range op.Parameters {
		prm := ref.Value
		ex := prm.Example
		if ex == nil && prm.Schema != nil && prm.Schema.Value != nil {
			ex = prm.Schema.Value.Example
		}
		if ex == nil && prm.Required {
			t.Fatalf("%s: the required parameter %s has no example", op.OperationID, prm.Name)
		}
		switch {
		case prm.In == openapi3.ParameterInPath:
			p = strings.ReplaceAll(p, "{"+prm.Name+"}", url.PathEscape(fmt.Sprint(ex)))
		case prm.In == openapi3.ParameterInQuery && prm.Required:
			q.Set(prm.Name, fmt.Sprint(ex))
		}
	}
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		mt := op.RequestBody.Value.Content.Get("application/json")
		var ex any
		if mt != nil {
			ex = mt.Example
			if d := mt.Examples["default"]; ex == nil && d != nil && d.Value != nil {
				ex = d.Value.Value
			}
		}
		if ex == nil {
			t.Fatalf("%s: the body has no example", op.OperationID)
		}
		b, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	return p, body
}

func checkResponse(t *testing.T, e *env, tc responseCase) {
	t.Helper()
	if tc.prepare != nil {
		tc.prepare(t, e)
	}
	target := tc.target(e.fx)
	var reqBody string
	if tc.body != nil {
		reqBody = tc.body(e.fx)
	}
	if tc.down {
		e.db.Close()
		// A host's directory lives in a database too.
		e.vh.dir.FailWith(e.db.PingContext(t.Context()))
	}
	resp, body := e.do(t, tc.method, target, tc.token, reqBody)

	if resp.StatusCode != tc.wantStatus {
		t.Fatalf("%s %s: status %d, want %d; body %s", tc.method, target, resp.StatusCode, tc.wantStatus, body)
	}

	// The request as kin-openapi sees it: same method, target and credential.
	req := httptest.NewRequestWithContext(t.Context(), tc.method, target, bodyReader(reqBody))
	if tc.token != "" {
		req.Header.Set("Authorization", "Bearer "+tc.token)
	}
	if reqBody != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	route, pathParams := findOperation(t, e, req, resp, tc)

	if route != nil && tc.wantStatus != http.StatusMethodNotAllowed {
		err := openapi3filter.ValidateRequest(t.Context(), &openapi3filter.RequestValidationInput{
			Request: req, PathParams: pathParams, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: bearerPresent},
		})
		switch {
		case tc.reqValid && err != nil:
			t.Errorf("request %s %s does not conform to the document: %v", tc.method, target, err)
		case !tc.reqValid && err == nil:
			t.Errorf("request %s %s conforms to the document, but the server rejects it with %d", tc.method, target, resp.StatusCode)
		}
	}

	if route != nil {
		err := openapi3filter.ValidateResponse(t.Context(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route},
			Status:                 resp.StatusCode,
			Header:                 resp.Header,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		})
		if err != nil {
			t.Errorf("response to %s %s does not match the document:\n%v\nbody: %s", tc.method, target, err, body)
		}
	} else {
		validateRouteNotFound(t, e, resp, body)
	}

	if tc.op == "getOpenAPIDocument" && tc.wantStatus == http.StatusOK {
		return // the body is the document, not an envelope
	}
	var env struct {
		Code string          `json:"code"`
		Data json.RawMessage `json:"data"`
		Ext  map[string]any  `json:"ext"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("body is not an envelope: %v: %s", err, body)
	}
	if tc.wantKey != "" {
		if got := env.Ext["eKey"]; got != tc.wantKey {
			t.Errorf("ext.eKey = %v, want %s; body %s", got, tc.wantKey, body)
		}
	} else if tc.checkData != nil {
		tc.checkData(t, env.Data)
	} else {
		var want any
		if tc.wantData != nil {
			want = tc.wantData(e.fx)
		}
		if diff := cmp.Diff(jsonValue(t, want), jsonValue(t, env.Data)); diff != "" {
			t.Errorf("data mismatch (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff(tc.wantCalls, e.recorded()); diff != "" {
		t.Errorf("restorer calls mismatch (-want +got):\n%s", diff)
	}
	if tc.wantAfter != nil && !tc.down {
		_, body := e.do(t, http.MethodGet, "/api/v1/task/trash/count?projectId=10", "admin", "")
		var count struct{ Data int64 }
		if err := json.Unmarshal(body, &count); err != nil {
			t.Fatalf("count: %v: %s", err, body)
		}
		if want := tc.wantAfter(e.fx); count.Data != want {
			t.Errorf("project 10 has %d entries afterwards, want %d", count.Data, want)
		}
	}
}

// findOperation finds the documented operation tc answers for. A 405 is
// checked against tc.op, whose method the Allow header must name; an
// unknown route has no operation.
func findOperation(t *testing.T, e *env, req *http.Request, resp *http.Response, tc responseCase) (*routers.Route, map[string]string) {
	t.Helper()
	if tc.op == "" {
		if route, _, err := e.router.FindRoute(req); err == nil {
			t.Fatalf("%s %s is documented as %s, but the server has no route for it", req.Method, req.URL, route.Operation.OperationID)
		}
		return nil, nil
	}
	lookup := req
	if tc.wantStatus == http.StatusMethodNotAllowed {
		if _, _, err := e.router.FindRoute(req); err == nil {
			t.Fatalf("%s %s is documented, but the server answers 405", req.Method, req.URL)
		}
		method := operationMethod(e.doc, tc.op)
		allow := strings.Split(resp.Header.Get("Allow"), ", ")
		if !slices.Contains(allow, method) {
			t.Errorf("405 Allow header %q does not name %s, the method of %s", resp.Header.Get("Allow"), method, tc.op)
		}
		lookup = req.Clone(req.Context())
		lookup.Method = method
	}
	route, pathParams, err := e.router.FindRoute(lookup)
	if err != nil {
		t.Fatalf("%s %s: no operation in the document: %v", lookup.Method, lookup.URL, err)
	}
	if route.Operation.OperationID != tc.op {
		t.Fatalf("%s %s is documented as %s, want %s", lookup.Method, lookup.URL, route.Operation.OperationID, tc.op)
	}
	return route, pathParams
}

// operationMethod is the HTTP method of the documented operation.
func operationMethod(doc *openapi3.T, operationID string) string {
	for _, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == operationID {
				return method
			}
		}
	}
	return ""
}

// validateRouteNotFound checks the answer to a path no route serves against
// the document's ErrorEnvelope (no operation describes it: the document's
// error table does).
func validateRouteNotFound(t *testing.T, e *env, resp *http.Response, body []byte) {
	t.Helper()
	ref := e.doc.Components.Schemas["ErrorEnvelope"]
	if ref == nil || ref.Value == nil {
		t.Fatal("the document has no ErrorEnvelope schema")
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("unknown route: Content-Type %q", ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, body)
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors(), openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("unknown-route answer does not match ErrorEnvelope:\n%v\nbody: %s", err, body)
	}
}

// bearerPresent is the document's security as a client sees it: a bearer
// token must be sent; whether it is known is the server's business.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	if token, ok := strings.CutPrefix(h, "Bearer "); !ok || token == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// jsonValue is v as generic JSON, so that typed wants compare with decoded
// bodies.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// kin-openapi reads the 3.1 document's nulls as the document means them:
// null where a schema's types include it, never elsewhere.
func TestOpenAPINullWhereDocumented(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %s: want 3.1", doc.OpenAPI)
	}
	entry := `{"id": 1, "tenantId": 1, "projectId": 10, "targetType": "TASK", "targetId": 7, "targetName": "t", "createdBy": 1, "deletedBy": 2, "deletedByName": "Alice", "deletedDate": "2026-11-22T01:00:00Z", "purgeDate": %s, "sprintId": %s}`
	errorEnvelope := `{"code": "E0", "msg": "m", "data": %s, "datetime": "2026-11-22T01:00:00Z", "ext": {"eKey": "param_validation_error"}}`
	for _, tc := range []struct {
		schema, value string
		ok            bool
	}{
		{"ErrorEnvelope", fmt.Sprintf(errorEnvelope, "null"), true},
		{"ErrorEnvelope", fmt.Sprintf(errorEnvelope, "{}"), false},
		{"TrashEntry", fmt.Sprintf(entry, "null", "null"), true},
		{"TrashEntry", fmt.Sprintf(entry, `"2026-12-22T01:00:00Z"`, "5"), true},
		{"TrashEntry", fmt.Sprintf(entry, "5", "null"), false},
		{"TrashEntry", fmt.Sprintf(entry, "null", `"5"`), false},
		{"ProfileUpdate", `{"gender": null, "title": null}`, true},
		{"ProfileUpdate", `{"gender": "MALE"}`, true},
		{"ProfileUpdate", `{"gender": "OTHER"}`, false},
		{"ChannelAdd", `{"id": null, "channelType": "WEBHOOK", "name": "n", "address": "https://example.com/"}`, true},
		{"ChannelAdd", `{"id": 5, "channelType": "WEBHOOK", "name": "n", "address": "https://example.com/"}`, false},
		{"TrashPage", `{"total": null, "list": []}`, false},
	} {
		ref := doc.Components.Schemas[tc.schema]
		if ref == nil || ref.Value == nil {
			t.Fatalf("no schema %s", tc.schema)
		}
		var v any
		if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
			t.Fatal(err)
		}
		err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: %v, want ok %v", tc.schema, tc.value, err, tc.ok)
		}
	}
}
