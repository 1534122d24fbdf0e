package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestRestoreRacesSprintDelete is fault 9: restoring a task while its sprint
// is being deleted must not leave the task active inside a trashed sprint.
// The two must end as if one ran after the other: either restore, then
// delete (the sprint trashed, the task hidden with it and back when the
// sprint comes back), or delete, then restore (the restore takes the
// sprint's new entry and brings both back).
func TestRestoreRacesSprintDelete(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		ctx := context.Background()
		const rounds = 50
		hidden := 0
		for round := range rounds {
			sprint := f.createSprint(9, fmt.Sprintf("sprint %d", round))
			task := f.createTask(9, &sprint, fmt.Sprintf("task %d", round))
			entry := f.delete("task", task)

			// Both requests wait on start, so they hit the database together.
			start := make(chan struct{})
			var wg sync.WaitGroup
			var restore, del *httptest.ResponseRecorder
			send := func(out **httptest.ResponseRecorder, method, path string) {
				req := httptest.NewRequest(method, path, nil)
				req.Header.Set("Authorization", "Bearer "+f.admin)
				rec := httptest.NewRecorder()
				*out = rec
				wg.Go(func() {
					<-start
					f.app.handler.ServeHTTP(rec, req)
				})
			}
			send(&restore, http.MethodPatch, fmt.Sprintf("/api/v1/task/trash/%d/back", entry.TrashID))
			send(&del, http.MethodDelete, fmt.Sprintf("/api/v1/demo/sprint/%d", sprint))
			close(start)
			wg.Wait()
			if restore.Code != http.StatusOK || del.Code != http.StatusOK {
				t.Fatalf("round %d: restore %d %s, delete sprint %d %s; want both 200",
					round, restore.Code, restore.Body, del.Code, del.Body)
			}

			var taskState, sprintState string
			if err := db.NewSelect().Model((*demoTask)(nil)).Column("state").Where("id = ?", task).Scan(ctx, &taskState); err != nil {
				t.Fatal(err)
			}
			if err := db.NewSelect().Model((*demoSprint)(nil)).Column("state").Where("id = ?", sprint).Scan(ctx, &sprintState); err != nil {
				t.Fatal(err)
			}
			switch {
			case taskState == stateHidden && sprintState == stateTrashed:
				hidden++
			case taskState == stateActive && sprintState == stateActive:
			default:
				t.Fatalf("round %d: task %s, sprint %s; want both active, or the task hidden with its trashed sprint", round, taskState, sprintState)
			}
		}
		t.Logf("%d of %d rounds ended with the sprint deleted last", hidden, rounds)

		// Nowhere an active task in a sprint that is not active.
		n, err := db.NewSelect().Model((*demoTask)(nil)).
			Join("JOIN deskkit_demo_sprints AS s ON s.id = t.sprint_id").
			Where("t.state = ? AND s.state <> ?", stateActive, stateActive).
			Count(ctx)
		if err != nil || n != 0 {
			t.Fatalf("%d active tasks in trashed sprints (%v)", n, err)
		}

		// The hidden tasks come back with their sprints.
		var restored int
		f.ok(f.admin, http.MethodPatch, "/api/v1/task/trash/back?projectId=9", nil, &restored)
		if restored != hidden {
			t.Errorf("restored %d entries, want the %d trashed sprints", restored, hidden)
		}
		n, err = db.NewSelect().Model((*demoTask)(nil)).Where("project_id = 9 AND state = ?", stateActive).Count(ctx)
		if err != nil || n != rounds {
			t.Errorf("%d active tasks after restoring the sprints (%v), want %d", n, err, rounds)
		}
	})
}

// TestConcurrentDeletes: two deletes of one row at once, which now add the
// trash entry before they change the row; one wins, the other answers 404,
// and the row has one entry.
func TestConcurrentDeletes(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		for round := range 20 {
			kind := []string{"task", "sprint"}[round%2]
			var id int64
			if kind == "task" {
				id = f.createTask(10, nil, fmt.Sprintf("task %d", round))
			} else {
				id = f.createSprint(10, fmt.Sprintf("sprint %d", round))
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			recs := make([]*httptest.ResponseRecorder, 2)
			for i := range recs {
				req := httptest.NewRequest(http.MethodDelete, fmt.Sprintf("/api/v1/demo/%s/%d", kind, id), nil)
				req.Header.Set("Authorization", "Bearer "+f.admin)
				recs[i] = httptest.NewRecorder()
				wg.Go(func() {
					<-start
					f.app.handler.ServeHTTP(recs[i], req)
				})
			}
			close(start)
			wg.Wait()
			codes := map[int]int{recs[0].Code: 1}
			codes[recs[1].Code]++
			if codes[http.StatusOK] != 1 || codes[http.StatusNotFound] != 1 {
				t.Fatalf("round %d (%s): answers %d %s and %d %s, want one 200 and one 404",
					round, kind, recs[0].Code, recs[0].Body, recs[1].Code, recs[1].Body)
			}
		}
		if p := f.search("targetType=TASK&projectId=10"); p.Total != 10 {
			t.Errorf("%d task entries, want 10", p.Total)
		}
		if p := f.search("targetType=TASK_SPRINT&projectId=10"); p.Total != 10 {
			t.Errorf("%d sprint entries, want 10", p.Total)
		}
	})
}
