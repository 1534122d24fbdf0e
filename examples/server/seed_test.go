package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// TestSeed checks the counts seed.go documents, scaled down: at 10,000
// entries, zephyr matches 1, urgent 1,000, release 50 sprints.
func TestSeed(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db)
		const entries, projects = 10000, 7
		res, err := seed(ctx, db, seedConfig{Tenant: "bench", Projects: projects, Entries: entries, BatchSize: 1500, Now: f.clock.Now}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if res.First != 0 || res.Sprints != 500 || res.Tasks != 9500 {
			t.Errorf("result = %+v, want 500 sprints and 9500 tasks from 0", res)
		}
		if share := float64(res.TasksInSprint) / float64(res.Tasks); share < 0.7 || share > 0.85 {
			t.Errorf("%.2f of tasks in a sprint, want about 0.8", share)
		}

		tenant, err := f.app.dir.EnsureTenant(ctx, "bench")
		if err != nil {
			t.Fatal(err)
		}
		user, err := f.app.dir.EnsureUser(ctx, tenant.ID, demoUsername, true)
		if err != nil {
			t.Fatal(err)
		}
		p := user.Principal()
		count := func(q *bun.SelectQuery) int {
			t.Helper()
			n, err := q.Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(db.NewSelect().Model((*demoSprint)(nil)).Where("tenant_id = ? AND state = ?", tenant.ID, stateTrashed)); n != 500 {
			t.Errorf("%d trashed demo sprints, want 500", n)
		}
		if n := count(db.NewSelect().Model((*demoTask)(nil)).Where("tenant_id = ? AND state = ?", tenant.ID, stateTrashed)); n != 9500 {
			t.Errorf("%d trashed demo tasks, want 9500", n)
		}
		for project := int64(1); project <= projects; project++ {
			n, err := f.app.trash.Count(ctx, p, project)
			if err != nil {
				t.Fatal(err)
			}
			if n < entries/projects-50 || n > entries/projects+50 {
				t.Errorf("project %d has %d entries, want about %d", project, n, entries/projects)
			}
		}

		for _, c := range []struct {
			typ  trash.TargetType
			term string
			want int64
		}{
			{trash.TargetTask, "task-0004321", 1},
			{trash.TargetTask, "ZEPHYR", entries / 10000},
			{trash.TargetTask, "urgent", entries / 10},
			{trash.TargetSprint, "release", entries / 20 / 10},
			{trash.TargetTask, "task", 9500},
			{trash.TargetSprint, "sprint", 500},
			{trash.TargetSprint, "urgent", 0},
		} {
			page, err := f.app.trash.Search(ctx, p, trash.Query{TargetType: c.typ, TargetName: c.term})
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != c.want {
				t.Errorf("%s %q matches %d, want %d", c.typ, c.term, page.Total, c.want)
			}
		}
		page, err := f.app.trash.Search(ctx, p, trash.Query{TargetType: trash.TargetTask, OrderBy: trash.OrderByDeletedDate, PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		if newest := page.List[0]; !newest.DeletedDate.Equal(f.clock.Now()) || newest.TargetName[:12] != "task-0009999" {
			t.Errorf("newest entry = %+v, want task 9999 deleted now", newest)
		}

		// A seeded task in a sprint restores with its sprint, as one deleted
		// through the API would.
		page, err = f.app.trash.Search(ctx, p, trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{Key: "sprintId", Op: trash.OpIsNotNull}}, PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		e := page.List[0]
		if err := f.app.trash.Restore(ctx, p, e.ID); err != nil {
			t.Fatal(err)
		}
		var taskState, sprintState string
		if err := db.NewSelect().Model((*demoTask)(nil)).Column("state").Where("id = ?", e.TargetID).Scan(ctx, &taskState); err != nil {
			t.Fatal(err)
		}
		if err := db.NewSelect().Model((*demoSprint)(nil)).Column("state").Where("id = ?", *e.SprintID).Scan(ctx, &sprintState); err != nil {
			t.Fatal(err)
		}
		if taskState != stateActive || sprintState != stateActive {
			t.Errorf("task is %s and sprint %s after restore, want both active", taskState, sprintState)
		}

		// A second seed continues the numbering.
		res, err = seed(ctx, db, seedConfig{Tenant: "bench", Projects: projects, Entries: 100, Now: f.clock.Now}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if res.First != entries {
			t.Errorf("second seed starts at %d, want %d", res.First, entries)
		}
	})
}

func TestSeedCommand(t *testing.T) {
	rawURL := "sqlite:" + t.TempDir() + "/seed.db"
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"seed", "-projects", "3", "-entries", "200", "-tenant", "cli", "-database-url", rawURL}, &stdout, io.Discard, env(nil)); err != nil {
		t.Fatal(err)
	}
	if want := "seeded 200 entries (10 sprints, 190 tasks) numbered 0 to 199 in tenant \"cli\"\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want %q", stdout.String(), want)
	}
}

func TestSeedName(t *testing.T) {
	for n, want := range map[int64]string{
		0:    "sprint-0000000 alpha login",
		60:   "sprint-0000060 india import release",
		7:    "task-0000007 hotel login urgent",
		4321: "task-0004321 foxtrot search zephyr",
	} {
		if got := seedName(n); got != want {
			t.Errorf("seedName(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSeedResume is fault 12: a seed that died part way left a partial load
// it could not complete. Batches are all-or-nothing, a batch that fails for
// a passing reason is tried again, and a seed that stops resumes where it
// stopped, numbering and all.
func TestSeedResume(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setup(t, db)
		const entries, projects, batch = 1000, 3, 100
		errBoom := errors.New("boom")
		cfg := seedConfig{Tenant: "resume", Projects: projects, Entries: entries, BatchSize: batch, Now: f.clock.Now}

		// It stops for good inside the batch that would reach 700.
		cfg.afterBatch = func(_ context.Context, done int) error {
			if done == 700 {
				return errBoom
			}
			return nil
		}
		res, err := seed(ctx, db, cfg, slog.New(slog.DiscardHandler))
		if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "after 600 of 1000 entries") || !strings.Contains(err.Error(), "again to resume") {
			t.Fatalf("err = %v, want the batch's error saying 600 of 1000 are in", err)
		}
		tenant, err := f.app.dir.EnsureTenant(ctx, "resume")
		if err != nil {
			t.Fatal(err)
		}
		checkSeeded(t, db, tenant.ID, 600)
		if res.Sprints+res.Tasks != 600 {
			t.Errorf("result counts %d entries, want 600", res.Sprints+res.Tasks)
		}

		// Other parameters do not mix with the stopped run.
		other := cfg
		other.Entries = 500
		if _, err := seed(ctx, db, other, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "-entries 1000 -projects 3 to finish it") {
			t.Errorf("seed with other parameters: %v, want the stopped run named", err)
		}
		checkSeeded(t, db, tenant.ID, 600)

		// Run again, with a batch that fails once for a passing reason (a
		// lost connection): it is tried again and the seed completes.
		failed := false
		cfg.afterBatch = func(_ context.Context, done int) error {
			if done == 800 && !failed {
				failed = true
				return fmt.Errorf("write: %w", io.ErrUnexpectedEOF)
			}
			return nil
		}
		res, err = seed(ctx, db, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if !failed || !res.Resumed || res.First != 0 || res.From != 600 || res.Sprints+res.Tasks != 400 {
			t.Errorf("resumed seed = %+v (failed once: %v), want 400 entries from 600", res, failed)
		}
		checkSeeded(t, db, tenant.ID, entries)

		// A new seed of a finished tenant starts a new run after it.
		cfg.afterBatch = nil
		cfg.Entries = 10
		if res, err = seed(ctx, db, cfg, slog.New(slog.DiscardHandler)); err != nil || res.Resumed || res.First != entries {
			t.Errorf("next seed = %+v, %v; want a new run from %d", res, err, entries)
		}
	})
}

// checkSeeded checks that the tenant holds exactly entries seeded entries,
// numbered 0 to entries-1 once each, each backed by one trashed demo row,
// and that the seed runs count them.
func checkSeeded(t *testing.T, db *bun.DB, tenantID int64, entries int) {
	t.Helper()
	ctx := context.Background()
	var names []string
	if err := db.NewSelect().Table("deskkit_trash").Column("target_name").Where("tenant_id = ?", tenantID).Scan(ctx, &names); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, name := range names {
		_, num, _ := strings.Cut(strings.Fields(name)[0], "-")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || seen[n] || n < 0 || n >= int64(entries) || seedName(n) != name {
			t.Errorf("entry %q: number %d (%v) repeated, out of range or misnamed", name, n, err)
		}
		seen[n] = true
	}
	if len(names) != entries {
		t.Errorf("%d entries, want %d", len(names), entries)
	}
	rows := 0
	for _, model := range []any{(*demoSprint)(nil), (*demoTask)(nil)} {
		n, err := db.NewSelect().Model(model).Where("tenant_id = ? AND state = ?", tenantID, stateTrashed).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows += n
	}
	if rows != entries {
		t.Errorf("%d trashed demo rows, want one per entry (%d)", rows, entries)
	}
	var done int64
	if err := db.NewSelect().Model((*seedRun)(nil)).ColumnExpr("coalesce(sum(done), 0)").Where("tenant_id = ?", tenantID).Scan(ctx, &done); err != nil {
		t.Fatal(err)
	}
	if done != int64(entries) {
		t.Errorf("seed runs count %d entries done, want %d", done, entries)
	}
}

// TestSeedProgress checks both ways seed reports progress: a line rewritten
// in place for a terminal, log lines with readable durations otherwise.
func TestSeedProgress(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	f := setup(t, db)
	ctx := context.Background()

	var term bytes.Buffer
	cfg := seedConfig{Tenant: "progress", Projects: 2, Entries: 200, BatchSize: 50, Now: f.clock.Now, Progress: &term}
	if _, err := seed(ctx, db, cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	out := term.String()
	if strings.Count(out, "\rseeding: ") != 4 || !strings.Contains(out, "\rseeding: 200 of 200 entries (100%)") || !strings.HasSuffix(out, "\n") {
		t.Errorf("terminal progress = %q, want 4 lines rewritten in place, the last at 100%%, then a newline", out)
	}

	var logs bytes.Buffer
	cfg.Progress = nil
	if _, err := seed(ctx, db, cfg, slog.New(slog.NewJSONHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	// The log shows the first batch at once (not after seedLogEvery
	// batches, 100,000 entries by default), then the end.
	var done []int
	for l := range strings.Lines(logs.String()) {
		var line struct {
			Msg      string
			Done, Of int
			Took     string
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.Msg != "seeding" {
			continue
		}
		if _, err := time.ParseDuration(line.Took); line.Of != 200 || err != nil {
			t.Errorf("progress log = %+v (took: %v), want of 200 with a duration such as 2.5s", line, err)
		}
		done = append(done, line.Done)
	}
	if want := []int{50, 200}; !slices.Equal(done, want) {
		t.Errorf("progress logged at %v entries, want %v (the first batch, then the last)\n%s", done, want, logs.String())
	}
	if isTerminal(&logs) {
		t.Error("a buffer is not a terminal")
	}
}
