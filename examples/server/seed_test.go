package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"

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
