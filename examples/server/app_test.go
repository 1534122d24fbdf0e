package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// fixture is an app over a fresh database, with tokens of three users: an
// admin and a non-admin of the demo tenant, and an admin of another tenant.
type fixture struct {
	t       *testing.T
	db      *bun.DB
	app     *app
	clock   *clock
	admin   string
	member  string
	outside string
	adminP  deskkit.Principal
}

const retention = 24 * time.Hour

func setup(t *testing.T, db *bun.DB) *fixture {
	t.Helper()
	ctx := context.Background()
	if err := migrateAll(ctx, db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	clk := &clock{now: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler), Now: clk.Now, Retention: retention})
	if err != nil {
		t.Fatalf("new app: %v", err)
	}
	f := &fixture{t: t, db: db, app: a, clock: clk}
	f.admin, err = a.demoToken(ctx)
	if err != nil {
		t.Fatalf("demo token: %v", err)
	}
	if f.adminP, err = a.dir.Authenticate(ctx, f.admin); err != nil {
		t.Fatal(err)
	}
	f.member = f.token("demo", "member", false)
	f.outside = f.token("other", "eve", true)
	return f
}

func (f *fixture) token(tenant, username string, admin bool) string {
	f.t.Helper()
	return issueToken(f.t, f.app, tenant, username, admin)
}

// issueToken makes sure tenant and its user username exist in a's
// directory (admin or not) and issues a token for the user.
func issueToken(tb testing.TB, a *app, tenant, username string, admin bool) string {
	tb.Helper()
	ctx := context.Background()
	tn, err := a.dir.EnsureTenant(ctx, tenant)
	if err != nil {
		tb.Fatal(err)
	}
	u, err := a.dir.EnsureUser(ctx, tn.ID, username, admin)
	if err != nil {
		tb.Fatal(err)
	}
	token, err := a.dir.IssueToken(ctx, u)
	if err != nil {
		tb.Fatal(err)
	}
	return token
}

// response is an answer of the app: its status and envelope.
type response struct {
	Status int
	Code   string          `json:"code"`
	Msg    string          `json:"msg"`
	Data   json.RawMessage `json:"data"`
	Ext    map[string]any  `json:"ext"`
}

// do sends a request as the holder of token ("" for none) and decodes the
// envelope.
func (f *fixture) do(token, method, path string, body any) response {
	f.t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	f.app.handler.ServeHTTP(rec, req)
	res := response{Status: rec.Code}
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		f.t.Fatalf("%s %s: answer is not an envelope: %v\n%s", method, path, err, rec.Body)
	}
	return res
}

// ok sends a request that must succeed and decodes its data into out.
func (f *fixture) ok(token, method, path string, body, out any) {
	f.t.Helper()
	res := f.do(token, method, path, body)
	if res.Status != http.StatusOK || res.Code != "S" {
		f.t.Fatalf("%s %s: %d %s %s, want 200", method, path, res.Status, res.Code, res.Msg)
	}
	if out != nil {
		if err := json.Unmarshal(res.Data, out); err != nil {
			f.t.Fatalf("%s %s: data: %v", method, path, err)
		}
	}
}

// status sends a request and checks only its status.
func (f *fixture) status(want int, token, method, path string, body any) response {
	f.t.Helper()
	res := f.do(token, method, path, body)
	if res.Status != want {
		f.t.Errorf("%s %s: %d %s, want %d", method, path, res.Status, res.Msg, want)
	}
	return res
}

func (f *fixture) createSprint(project int64, name string) int64 {
	f.t.Helper()
	var c created
	f.ok(f.admin, http.MethodPost, "/api/v1/demo/sprint", map[string]any{"projectId": project, "name": name}, &c)
	return c.ID
}

func (f *fixture) createTask(project int64, sprint *int64, name string) int64 {
	f.t.Helper()
	var c created
	f.ok(f.admin, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": project, "sprintId": sprint, "name": name}, &c)
	return c.ID
}

func (f *fixture) delete(kind string, id int64) deleted {
	f.t.Helper()
	var d deleted
	f.ok(f.admin, http.MethodDelete, fmt.Sprintf("/api/v1/demo/%s/%d", kind, id), nil, &d)
	return d
}

// visible reports whether GET of the task or sprint answers 200 (else it
// must answer 404).
func (f *fixture) visible(kind string, id int64) bool {
	f.t.Helper()
	res := f.do(f.admin, http.MethodGet, fmt.Sprintf("/api/v1/demo/%s/%d", kind, id), nil)
	switch res.Status {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	f.t.Fatalf("GET %s %d: %d %s", kind, id, res.Status, res.Msg)
	return false
}

func (f *fixture) search(query string) trash.Page {
	f.t.Helper()
	var p trash.Page
	f.ok(f.admin, http.MethodGet, "/api/v1/task/trash/search?"+query, nil, &p)
	return p
}

func TestDemoTaskFlow(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		sprint := f.createSprint(1, "Sprint 1")
		task := f.createTask(1, &sprint, "Write the Release notes")

		var got demoTask
		f.ok(f.admin, http.MethodGet, fmt.Sprintf("/api/v1/demo/task/%d", task), nil, &got)
		if got.ID != task || got.Name != "Write the Release notes" || got.SprintID == nil || *got.SprintID != sprint || got.CreatedBy != f.adminP.UserID {
			t.Errorf("GET task = %+v", got)
		}
		// Another tenant sees nothing, and can delete nothing.
		f.status(http.StatusNotFound, f.outside, http.MethodGet, fmt.Sprintf("/api/v1/demo/task/%d", task), nil)
		f.status(http.StatusNotFound, f.outside, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", task), nil)

		d := f.delete("task", task)
		if d.ID != task || d.TrashID < 1 {
			t.Errorf("delete = %+v", d)
		}
		if f.visible("task", task) {
			t.Error("deleted task still visible")
		}
		f.status(http.StatusNotFound, f.admin, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", task), nil)

		page := f.search("targetType=TASK&targetName=release&infoScope=DETAIL")
		if page.Total != 1 || len(page.List) != 1 {
			t.Fatalf("search: %+v, want the task", page)
		}
		e := page.List[0]
		if e.ID != d.TrashID || e.TargetID != task || e.SprintID == nil || *e.SprintID != sprint || e.DeletedByName != "demo" || e.CreatedByName != "demo" {
			t.Errorf("entry = %+v", e)
		}
		if other := f.do(f.outside, http.MethodGet, "/api/v1/task/trash/search?targetType=TASK", nil); !strings.Contains(string(other.Data), `"total":0`) {
			t.Errorf("other tenant's search: %s", other.Data)
		}

		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", d.TrashID), nil, nil)
		if !f.visible("task", task) {
			t.Error("restored task not visible")
		}
		if p := f.search("targetType=TASK"); p.Total != 0 {
			t.Errorf("trash after restore: %+v", p)
		}
	})
}

func TestDemoSprintHidesTasks(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		sprint := f.createSprint(1, "Sprint")
		a := f.createTask(1, &sprint, "a")
		b := f.createTask(1, &sprint, "b")
		loose := f.createTask(1, nil, "loose")

		bEntry := f.delete("task", b) // b has an entry of its own
		ds := f.delete("sprint", sprint)
		for _, id := range []int64{a, b} {
			if f.visible("task", id) {
				t.Errorf("task %d visible after its sprint was deleted", id)
			}
		}
		if f.visible("sprint", sprint) || !f.visible("task", loose) {
			t.Error("wrong visibility after deleting the sprint")
		}
		var n int64
		f.ok(f.admin, http.MethodGet, "/api/v1/task/trash/count?projectId=1", nil, &n)
		if n != 2 {
			t.Errorf("count = %d, want 2 (the sprint and b; a is hidden, not trashed)", n)
		}

		// Restoring the sprint brings back the task hidden with it, not b.
		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", ds.TrashID), nil, nil)
		if !f.visible("sprint", sprint) || !f.visible("task", a) || f.visible("task", b) {
			t.Error("after restoring the sprint: want sprint and a visible, b not")
		}

		// Restoring a task of a trashed sprint brings the sprint back first.
		ds = f.delete("sprint", sprint)
		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", bEntry.TrashID), nil, nil)
		for kind, id := range map[string]int64{"sprint": sprint, "task": b} {
			if !f.visible(kind, id) {
				t.Errorf("%s %d not back", kind, id)
			}
		}
		if !f.visible("task", a) {
			t.Error("a not back with its sprint")
		}
		var got demoTask
		f.ok(f.admin, http.MethodGet, fmt.Sprintf("/api/v1/demo/task/%d", b), nil, &got)
		if got.SprintID == nil || *got.SprintID != sprint {
			t.Errorf("b lost its sprint: %+v", got)
		}
		f.status(http.StatusNotFound, f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", ds.TrashID), nil)
	})
}

func TestDemoClear(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		ctx := context.Background()
		sprint := f.createSprint(2, "Sprint")
		hidden := f.createTask(2, &sprint, "hidden with the sprint")
		own := f.createTask(2, &sprint, "own entry")
		task := f.createTask(2, nil, "single")

		d := f.delete("task", task)
		f.ok(f.admin, http.MethodDelete, fmt.Sprintf("/api/v1/task/trash/%d", d.TrashID), nil, nil)
		f.status(http.StatusNotFound, f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", d.TrashID), nil)
		if f.visible("task", task) {
			t.Error("cleared task visible")
		}

		f.delete("task", own)
		ds := f.delete("sprint", sprint)
		f.ok(f.admin, http.MethodDelete, fmt.Sprintf("/api/v1/task/trash/%d", ds.TrashID), nil, nil)
		for _, id := range []int64{task, hidden, own} {
			n, err := db.NewSelect().Model((*demoTask)(nil)).Where("id = ?", id).Count(ctx)
			if err != nil || n != 0 {
				t.Errorf("task %d: %d rows, %v; want purged", id, n, err)
			}
		}
		n, err := db.NewSelect().Model((*demoSprint)(nil)).Where("id = ?", sprint).Count(ctx)
		if err != nil || n != 0 {
			t.Errorf("sprint: %d rows, %v; want purged", n, err)
		}
		if p := f.search("targetType=TASK&projectId=2"); p.Total != 0 {
			t.Errorf("tasks left in the trash: %+v", p)
		}
	})
}

func TestDemoProjectWide(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		ctx := context.Background()
		var sprints, tasks []int64
		for i := range 3 {
			s := f.createSprint(3, fmt.Sprintf("sprint %d", i))
			sprints = append(sprints, s)
			for j := range 2 {
				tasks = append(tasks, f.createTask(3, &s, fmt.Sprintf("task %d.%d", i, j)))
			}
		}
		loose := f.createTask(3, nil, "loose")
		f.delete("task", tasks[0])
		f.delete("task", loose)
		for _, s := range sprints {
			f.delete("sprint", s)
		}

		var restored int
		f.ok(f.admin, http.MethodPatch, "/api/v1/task/trash/back?projectId=3", nil, &restored)
		if restored != 5 {
			t.Errorf("restored %d, want 5 entries", restored)
		}
		for _, id := range append(tasks, loose) {
			if !f.visible("task", id) {
				t.Errorf("task %d not back", id)
			}
		}

		f.delete("task", tasks[1])
		for _, s := range sprints {
			f.delete("sprint", s)
		}
		var cleared int
		f.ok(f.admin, http.MethodDelete, "/api/v1/task/trash?projectId=3", nil, &cleared)
		if cleared != 4 {
			t.Errorf("cleared %d, want 4 entries", cleared)
		}
		n, err := db.NewSelect().Model((*demoTask)(nil)).Where("project_id = 3").Count(ctx)
		if err != nil || n != 1 {
			t.Errorf("%d tasks left, %v; want only the loose one", n, err)
		}
		if !f.visible("task", loose) {
			t.Error("loose task gone")
		}
	})
}

func TestDemoBadInput(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		active := f.createSprint(4, "active")
		gone := f.createSprint(4, "gone")
		f.delete("sprint", gone)
		otherTenant := func() int64 {
			var c created
			f.ok(f.outside, http.MethodPost, "/api/v1/demo/sprint", map[string]any{"projectId": 4, "name": "theirs"}, &c)
			return c.ID
		}()

		cases := []struct {
			name, method, path string
			body               any
			field              string
		}{
			{"no body", http.MethodPost, "/api/v1/demo/task", nil, "body"},
			{"bad JSON", http.MethodPost, "/api/v1/demo/task", `{"projectId":`, "body"},
			{"unknown field", http.MethodPost, "/api/v1/demo/task", `{"projectId":1,"name":"x","owner":2}`, "owner"},
			{"string project", http.MethodPost, "/api/v1/demo/task", `{"projectId":"1","name":"x"}`, "projectId"},
			{"no project", http.MethodPost, "/api/v1/demo/sprint", map[string]any{"name": "x"}, "projectId"},
			{"negative project", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": -1, "name": "x"}, "projectId"},
			{"no name", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4}, "name"},
			{"blank name", http.MethodPost, "/api/v1/demo/sprint", map[string]any{"projectId": 4, "name": "  "}, "name"},
			{"long name", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4, "name": strings.Repeat("é", 513)}, "name"},
			{"NUL in name", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4, "name": "a\x00b"}, "name"},
			{"zero sprint", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4, "sprintId": 0, "name": "x"}, "sprintId"},
			{"missing sprint", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4, "sprintId": 999999, "name": "x"}, "sprintId"},
			{"trashed sprint", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4, "sprintId": gone, "name": "x"}, "sprintId"},
			{"sprint of another project", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 5, "sprintId": active, "name": "x"}, "sprintId"},
			{"sprint of another tenant", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4, "sprintId": otherTenant, "name": "x"}, "sprintId"},
			{"word id", http.MethodGet, "/api/v1/demo/task/abc", nil, "id"},
			{"zero id", http.MethodDelete, "/api/v1/demo/sprint/0", nil, "id"},
			{"huge id", http.MethodGet, "/api/v1/demo/sprint/99999999999999999999", nil, "id"},
			// Issue 28, fault 8: ids have one spelling on every route.
			{"plus id", http.MethodGet, "/api/v1/demo/sprint/+" + strconv.FormatInt(active, 10), nil, "id"},
			{"zero-led id", http.MethodDelete, "/api/v1/demo/sprint/0" + strconv.FormatInt(active, 10), nil, "id"},
		}
		for _, c := range cases {
			res := f.do(f.admin, c.method, c.path, c.body)
			if res.Status != http.StatusBadRequest || !strings.HasPrefix(res.Msg, c.field+" ") {
				t.Errorf("%s: %d %q, want 400 naming %s", c.name, res.Status, res.Msg, c.field)
			}
		}
		if res := f.do("", http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 4, "name": "x"}); res.Status != http.StatusUnauthorized {
			t.Errorf("no token: %d, want 401", res.Status)
		}
		if res := f.do("dk_nope", http.MethodGet, "/api/v1/demo/task/1", nil); res.Status != http.StatusUnauthorized {
			t.Errorf("bad token: %d, want 401", res.Status)
		}
		// A sprint id that is fine works, and only the tenant's own sprint.
		f.createTask(4, &active, "fine")
	})
}

func TestRetention(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		ctx := context.Background()
		old := f.createTask(6, nil, "old")
		young := f.createTask(6, nil, "young")
		f.delete("task", old)
		f.clock.Advance(retention / 2)
		f.delete("task", young)
		f.clock.Advance(retention/2 + time.Second)

		purgeOnce(ctx, f.app.trash, slog.New(slog.DiscardHandler))
		p := f.search("targetType=TASK&projectId=6")
		if p.Total != 1 || p.List[0].TargetID != young {
			t.Errorf("after purge: %+v, want only the young task", p)
		}
		n, err := db.NewSelect().Model((*demoTask)(nil)).Where("id = ?", old).Count(ctx)
		if err != nil || n != 0 {
			t.Errorf("old task: %d rows, %v; want purged", n, err)
		}
	})
}

func TestPurgeLoop(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t))
	old := f.createTask(7, nil, "old")
	f.delete("task", old)
	f.clock.Advance(retention + time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() { purgeLoop(ctx, f.app.trash, tick, slog.New(slog.DiscardHandler)); close(done) }()
	tick <- time.Time{} // accepted only after the first purge has run
	cancel()
	<-done
	if p := f.search("targetType=TASK&projectId=7"); p.Total != 0 {
		t.Errorf("after the loop ran: %+v, want nothing", p)
	}
}

func TestHealth(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		get := func(path string) int {
			rec := httptest.NewRecorder()
			f.app.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec.Code
		}
		if got := get("/healthz"); got != http.StatusOK {
			t.Errorf("/healthz = %d", got)
		}
		if got := get("/readyz"); got != http.StatusOK {
			t.Errorf("/readyz = %d", got)
		}
		f.status(http.StatusNotFound, "", http.MethodGet, "/elsewhere", nil)
		db.Close()
		if got := get("/readyz"); got != http.StatusServiceUnavailable {
			t.Errorf("/readyz with the database closed = %d, want 503", got)
		}
		if got := get("/healthz"); got != http.StatusOK {
			t.Errorf("/healthz with the database closed = %d, want 200", got)
		}
	})
}
