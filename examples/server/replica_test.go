package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/readroute"
	"github.com/deskkit/deskkit/trash"
)

// standbyReads counts the statements bun runs on the standby's pool: the
// services' reads (the router's own position checks bypass bun's hooks).
type standbyReads struct{ n atomic.Int64 }

func (c *standbyReads) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *standbyReads) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if e.Err == nil {
		c.n.Add(1)
	}
}

var _ bun.QueryHook = (*standbyReads)(nil)

// replicaApp is the server's app over a private primary, reading from a
// streaming standby (-database-read-url), with a counter of the reads
// the standby served.
type replicaApp struct {
	*fixture
	replica dbtest.Replica
	reads   *standbyReads
	primary *bun.DB
	standby *bun.DB
	plain   bool // -database-transaction-pooling: nothing prepared
}

func newReplicaApp(t *testing.T) *replicaApp {
	t.Helper()
	r := dbtest.StartReplica(t)
	return openReplicaApp(t, r, serveConfig{databaseURL: r.PrimaryURL, readURL: r.StandbyURL, db: database.Options{MaxOpenConns: 8}})
}

// openReplicaApp opens cfg's database and read pool as serve does, waits
// until the standby has replayed the migrations, and makes the first
// server replica over them.
func openReplicaApp(t *testing.T, r dbtest.Replica, cfg serveConfig) *replicaApp {
	t.Helper()
	ctx := context.Background()
	if err := checkDatabaseURLs(cfg); err != nil {
		t.Fatal(err)
	}
	primary, err := openServeDB(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Close() })
	standby, err := database.Open(cfg.readURL, cfg.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standby.Close() })
	if err := r.WaitReplayed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	ra := &replicaApp{replica: r, reads: &standbyReads{}, primary: primary, standby: standby, plain: cfg.db.TransactionPooling}
	ra.fixture = ra.newFixture(t, "")
	return ra
}

// newFixture is a server replica over the primary and the standby, with
// a clock of its own; token "" makes the demo's first token, else it is
// the admin's token that the first replica made.
func (ra *replicaApp) newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	a, err := newApp(ra.primary, appConfig{Logger: slog.New(slog.DiscardHandler), Now: clk.Now, PlainStatements: ra.plain,
		ReadDB: ra.standby.WithQueryHook(ra.reads), Verify: verifyConfig{secret: []byte("0123456789abcdef0123456789abcdef-replica")},
		Channel: channelConfig{allowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: ra.primary, app: a, clock: clk, admin: token}
	if token == "" {
		if f.admin, err = a.demoToken(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if f.adminP, err = a.dir.Authenticate(ctx, f.admin); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReadReplica runs the server's app over one private primary and
// its streaming standby (the subtests share them: each takes seconds to
// start): the trash and the channels read their own writes, and a
// stopped standby loses every read within the lag bound.
func TestReadReplica(t *testing.T) {
	ra := newReplicaApp(t)
	t.Run("OwnWrites", func(t *testing.T) { ra.fixture.t = t; testReadReplicaOwnWrites(t, ra) })
	t.Run("Channels", func(t *testing.T) { ra.fixture.t = t; testReadReplicaChannels(t, ra) })
	// Last: it pauses the standby.
	t.Run("StoppedStandby", func(t *testing.T) { ra.fixture.t = t; testReadReplicaStoppedStandby(t, ra) })
}

// replicaTries is how many restore-then-search rounds
// testReadReplicaOwnWrites runs.
const replicaTries = 1000

// testReadReplicaOwnWrites: through the reference server's API over a
// real streaming standby, a task deleted and restored is, at once, found
// in the trash and then gone from it, replicaTries times, with no stale
// answer; and the standby serves the reads: in the steady state every
// search is read there.
func testReadReplicaOwnWrites(t *testing.T, ra *replicaApp) {
	f := ra.fixture
	task := f.createTask(1, nil, "Replica")
	staleIn, staleGone, onStandby := 0, 0, 0
	search := func() trash.Page {
		before := ra.reads.n.Load()
		p := f.search("targetType=TASK&targetName=replica")
		if ra.reads.n.Load() > before {
			onStandby++
		}
		return p
	}
	for range replicaTries {
		d := f.delete("task", task)
		if p := search(); p.Total != 1 || p.List[0].ID != d.TrashID {
			staleIn++
		}
		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", d.TrashID), nil, nil)
		if p := search(); p.Total != 0 {
			staleGone++
		}
	}
	t.Logf("stale reads: %d after a delete, %d after a restore, of %d tries each; the standby served %d of %d searches (%.1f%%)",
		staleIn, staleGone, replicaTries, onStandby, 2*replicaTries, 100*float64(onStandby)/float64(2*replicaTries))
	if staleIn+staleGone != 0 {
		t.Errorf("%d stale reads after a delete and %d after a restore, of %d each", staleIn, staleGone, replicaTries)
	}
	// The steady state: the demo host's delete ran in its own
	// transaction, so the tenant's reads wait for the primary's position
	// for trash's pending window; past it, and with the standby caught up,
	// every search reads the standby.
	f.clock.Advance(time.Minute)
	ra.settle(t, f)
	before := ra.reads.n.Load()
	const steady = 20
	for range steady {
		if p := f.search("targetType=TASK&targetName=replica"); p.Total != 0 {
			t.Fatalf("steady search: %+v", p)
		}
		var n int64
		f.ok(f.admin, http.MethodGet, "/api/v1/task/trash/count?projectId=1", nil, &n)
	}
	if got := ra.reads.n.Load() - before; got < 2*steady {
		t.Errorf("in the steady state the standby served %d of %d reads", got, 2*steady)
	}
}

// testReadReplicaStoppedStandby: a standby that stops replaying while
// another server replica writes gets no more reads once its lag reaches
// the bound (-database-read-max-lag, 1 s), and the reads answer fresh
// data from the primary.
func testReadReplicaStoppedStandby(t *testing.T, ra *replicaApp) {
	f := ra.fixture
	// Past the pending windows of the writes of the subtests before: the
	// tenant's reads go by the lag alone.
	f.clock.Advance(time.Minute)
	other := ra.newFixture(t, f.admin)
	task := other.createTask(1, nil, "Paused")
	ctx := context.Background()
	ra.settle(t, f)
	if p := f.search("targetType=TASK&targetName=paused"); p.Total != 0 {
		t.Fatalf("before the delete: %+v", p)
	}
	if err := ra.replica.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ra.replica.ResumeReplay(context.Background()) })
	d := other.delete("task", task) // through the other replica: f has no mark
	const step = 10 * time.Millisecond
	var moved time.Duration
	for ; ; moved += step {
		before := ra.reads.n.Load()
		p := f.search("targetType=TASK&targetName=paused")
		if ra.reads.n.Load() == before {
			if p.Total != 1 || p.List[0].ID != d.TrashID {
				t.Fatalf("the primary answered %+v", p)
			}
			break
		}
		if moved >= readroute.DefaultMaxLag {
			t.Fatalf("%s after the write, at or past the bound, a search was read on the stopped standby", moved)
		}
		f.clock.Advance(step)
	}
	t.Logf("every read went to the primary %s after the stopped standby's first unreplayed write (bound %s, ratio %.2f)",
		moved, readroute.DefaultMaxLag, float64(moved)/float64(readroute.DefaultMaxLag))
	before := ra.reads.n.Load()
	for range 10 {
		if p := f.search("targetType=TASK&targetName=paused"); p.Total != 1 {
			t.Fatalf("while paused: %+v", p)
		}
	}
	if got := ra.reads.n.Load() - before; got != 0 {
		t.Errorf("while the standby lags past the bound, it served %d reads", got)
	}
	if err := ra.replica.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	ra.settle(t, f)
	if p := f.search("targetType=TASK&targetName=paused"); p.Total != 1 {
		t.Errorf("after the resume: %+v", p)
	}
}

// settle waits until f's searches read the standby again: it has
// replayed what the primary had, and f's router has seen so. The
// primary writes WAL of its own now and then (a checkpoint, autovacuum),
// which the router may catch unreplayed at a check; f's clock moves a
// refresh at a time until a check finds the standby caught up, for at
// most 100 checks.
func (ra *replicaApp) settle(t *testing.T, f *fixture) {
	t.Helper()
	for range 100 {
		if err := ra.replica.WaitReplayed(context.Background(), time.Minute); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(readroute.DefaultRefresh)
		before := ra.reads.n.Load()
		f.search("targetType=TASK")
		if ra.reads.n.Load() > before {
			return
		}
	}
	t.Fatal("after 100 checks with the standby caught up, searches still read the primary")
}

// TestServeReadReplica runs the serve command as a user would, with
// -database-read-url: the printed curl line answers, a task deleted and
// restored through the API is in the trash and then gone at once.
func TestServeReadReplica(t *testing.T) {
	r := dbtest.StartReplica(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-db-max-conns", "4", "-database-url", r.PrimaryURL,
			"-database-read-url", r.StandbyURL, "-database-read-max-lag", "2s"}, outW, &stderr, env(nil))
		outW.Close()
	}()
	curl := regexp.MustCompile(`curl -H 'Authorization: Bearer (dk_[A-Za-z0-9_-]{43})' '(http://127\.0\.0\.1:\d+)/api/v1/task/trash/search`)
	sc := bufio.NewScanner(outR)
	var m []string
	for m == nil && sc.Scan() {
		m = curl.FindStringSubmatch(sc.Text())
	}
	if m == nil {
		t.Fatalf("no curl line printed; run returned %v\n%s", <-done, stderr.String())
	}
	go io.Copy(io.Discard, outR) //nolint:errcheck // drain whatever else is printed
	token, base := m[1], m[2]
	call := func(method, path string, body any, out any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			rd = bytes.NewReader(j)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var env struct {
			Code string          `json:"code"`
			Data json.RawMessage `json:"data"`
		}
		b, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(b, &env); err != nil || res.StatusCode != http.StatusOK || env.Code != "S" {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
		if out != nil {
			if err := json.Unmarshal(env.Data, out); err != nil {
				t.Fatal(err)
			}
		}
	}
	var c created
	call(http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 1, "name": "Served"}, &c)
	for range 20 {
		var d deleted
		call(http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", c.ID), nil, &d)
		var p trash.Page
		call(http.MethodGet, "/api/v1/task/trash/search?targetType=TASK&targetName=served", nil, &p)
		if p.Total != 1 {
			t.Fatalf("after the delete: total %d", p.Total)
		}
		call(http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", d.TrashID), nil, nil)
		call(http.MethodGet, "/api/v1/task/trash/search?targetType=TASK&targetName=served", nil, &p)
		if p.Total != 0 {
			t.Fatalf("after the restore: total %d", p.Total)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	if logs := stderr.String(); !strings.Contains(logs, `"msg":"stopped"`) {
		t.Errorf("logs lack stopped:\n%s", logs)
	}
}

// channelTries is how many write-then-read rounds
// testReadReplicaChannels runs.
const channelTries = 100

// testReadReplicaChannels: through the API over a real streaming
// standby, a channel disabled and enabled is read back at once as it was
// left, its deliveries count the events a trash delete and restore just
// published (in the demo host's transaction), channelTries times, and
// the standby serves the reads.
func testReadReplicaChannels(t *testing.T, ra *replicaApp) {
	f := ra.fixture
	var ch struct {
		ID int64 `json:"id"`
	}
	f.ok(f.admin, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "replica", "address": "http://127.0.0.1:9/hook"}, &ch)
	task := f.createTask(1, nil, "Channel replica")
	stale, onStandby, reads := 0, 0, 0
	read := func(path string, out any) {
		before := ra.reads.n.Load()
		f.ok(f.admin, http.MethodGet, path, nil, out)
		reads++
		if ra.reads.n.Load() > before {
			onStandby++
		}
	}
	for i := range channelTries {
		var c struct {
			Enabled bool `json:"enabled"`
		}
		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/event/channel/%d/disable", ch.ID), nil, nil)
		if read(fmt.Sprintf("/api/v1/event/channel/%d", ch.ID), &c); c.Enabled {
			stale++
		}
		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/event/channel/%d/enable", ch.ID), nil, nil)
		var list []struct {
			ID      int64 `json:"id"`
			Enabled bool  `json:"enabled"`
		}
		if read("/api/v1/event/channel/type/WEBHOOK", &list); len(list) != 1 || !list[0].Enabled {
			stale++
		}
		d := f.delete("task", task)
		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", d.TrashID), nil, nil)
		var page struct {
			Total int64 `json:"total"`
		}
		if read(fmt.Sprintf("/api/v1/event/channel/%d/deliveries?pageSize=1", ch.ID), &page); page.Total != int64(2*(i+1)) {
			stale++
		}
	}
	t.Logf("stale channel reads: %d of %d; the standby served %d (%.1f%%)", stale, reads, onStandby, 100*float64(onStandby)/float64(reads))
	if stale != 0 {
		t.Errorf("%d stale channel reads of %d", stale, reads)
	}
	if onStandby == 0 {
		t.Error("the standby served no channel read")
	}
}

// TestReadReplicaFlagsChecked: each bad use of -database-read-url and
// -database-read-max-lag is refused before anything opens, naming the
// flag and the rule.
func TestReadReplicaFlagsChecked(t *testing.T) {
	pg := "postgres://postgres@127.0.0.1:1/x?sslmode=disable"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-database-url", "sqlite:x.db", "-database-read-url", pg}, "-database-read-url: only for PostgreSQL"},
		{[]string{"-database-url", pg, "-database-read-url", "sqlite:y.db"}, "-database-read-url: must be a postgres:// URL"},
		{[]string{"-database-url", pg, "-database-read-max-lag", "2s"}, "-database-read-max-lag: only with -database-read-url"},
		{[]string{"-database-url", pg, "-database-read-url", "postgres://postgres@127.0.0.1:1,127.0.0.1:2/x?target_session_attrs=read-write"}, "-database-read-url: target_session_attrs=read-write reaches no standby"},
		{[]string{"-database-url", pg, "-database-read-url", "postgres://postgres@127.0.0.1:1/x?target_session_attrs=standby"}, "-database-read-url: "},
		{[]string{"-database-url", pg, "-database-read-url", pg, "-database-read-max-lag", "-1s"}, `invalid value "-1s" for flag -database-read-max-lag`},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"serve"}, tc.args...), &bytes.Buffer{}, &stderr, env(nil))
		// A value the flag refuses is told on stderr, as the flag package does.
		if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.want) {
			t.Errorf("%q: %v %s, want an error with %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}

// TestReadReplicaPooled: with -database-transaction-pooling, the read
// pool goes through PgBouncer in transaction mode too, opened as
// -database-url is: nothing is prepared on it, and the trash and the
// channels still read their own writes from the standby.
func TestReadReplicaPooled(t *testing.T) {
	r := dbtest.StartReplica(t)
	pooledPrimary, pooledStandby := dbtest.PgBouncer(t, r.PrimaryURL), dbtest.PgBouncer(t, r.StandbyURL)
	ra := openReplicaApp(t, r, serveConfig{databaseURL: pooledPrimary, migrateURL: r.PrimaryURL, readURL: pooledStandby,
		db: database.Options{MaxOpenConns: 4, TransactionPooling: true}})
	f, reads := ra.fixture, ra.reads
	var ch struct {
		ID int64 `json:"id"`
	}
	f.ok(f.admin, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "pooled", "address": "http://127.0.0.1:9/hook"}, &ch)
	task := f.createTask(1, nil, "Pooled")
	for i := range 20 {
		d := f.delete("task", task)
		if p := f.search("targetType=TASK&targetName=pooled"); p.Total != 1 {
			t.Fatalf("round %d, after the delete: %+v", i, p)
		}
		f.ok(f.admin, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", d.TrashID), nil, nil)
		if p := f.search("targetType=TASK&targetName=pooled"); p.Total != 0 {
			t.Fatalf("round %d, after the restore: %+v", i, p)
		}
		var page struct {
			Total int64 `json:"total"`
		}
		if f.ok(f.admin, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries?pageSize=1", ch.ID), nil, &page); page.Total != int64(2*(i+1)) {
			t.Fatalf("round %d: %d deliveries", i, page.Total)
		}
	}
	if reads.n.Load() == 0 {
		t.Error("through PgBouncer, the standby served no read")
	}
	t.Logf("through PgBouncer: %d statements on the standby", reads.n.Load())
}
