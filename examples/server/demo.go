package main

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/http"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/trash"
)

// The demo host is what a real application's task tracker would be: it owns
// tasks and sprints, and deskkit's trash only keeps entries pointing at
// them. Deleting hides a row and adds its entry in one transaction;
// restoring and purging come back through the trash.Restorer hooks.
//
// A task or sprint is in one of three states. Active rows are visible.
// Trashed rows have a trash entry of their own. Hidden tasks went away with
// their sprint, have no entry, and come back (or are purged) with it.
const (
	stateActive  = "active"
	stateTrashed = "trashed"
	stateHidden  = "hidden"
)

//go:embed migrations/*.sql
var demoMigrations embed.FS

// migrateDemo creates the demo host's tables.
func migrateDemo(ctx context.Context, db *bun.DB) error {
	return migrate.Run(ctx, db, "deskkit_demo_migrations", demoMigrations)
}

type demoSprint struct {
	bun.BaseModel `bun:"table:deskkit_demo_sprints,alias:s"`

	ID        int64  `bun:"id,pk,autoincrement" json:"id"`
	TenantID  int64  `bun:"tenant_id,notnull" json:"-"`
	ProjectID int64  `bun:"project_id,notnull" json:"projectId"`
	Name      string `bun:"name,notnull" json:"name"`
	CreatedBy int64  `bun:"created_by,notnull" json:"createdBy"`
	State     string `bun:"state,notnull" json:"-"`
}

type demoTask struct {
	bun.BaseModel `bun:"table:deskkit_demo_tasks,alias:t"`

	ID        int64  `bun:"id,pk,autoincrement" json:"id"`
	TenantID  int64  `bun:"tenant_id,notnull" json:"-"`
	ProjectID int64  `bun:"project_id,notnull" json:"projectId"`
	SprintID  *int64 `bun:"sprint_id" json:"sprintId"`
	Name      string `bun:"name,notnull" json:"name"`
	CreatedBy int64  `bun:"created_by,notnull" json:"createdBy"`
	State     string `bun:"state,notnull" json:"-"`
}

// demoHost serves the demo routes and implements the trash's hooks. Its
// write transactions go through deskkit.RunInTx, which runs one again when
// PostgreSQL rolls it back for a deadlock or a serialization failure: each
// is safe to repeat, as it does nothing outside the transaction.
type demoHost struct {
	db       *bun.DB
	trash    *trash.Trash // set once the trash is built with this host as its Restorer
	postgres bool
}

var (
	_ trash.Restorer      = (*demoHost)(nil)
	_ trash.BatchRestorer = (*demoHost)(nil)
	_ trash.BatchPurger   = (*demoHost)(nil)
)

func newDemoHost(db *bun.DB) (*demoHost, error) {
	d, err := migrate.DialectOf(db)
	if err != nil {
		return nil, err
	}
	return &demoHost{db: db, postgres: d.Postgres}, nil
}

// mount adds the demo routes to api, under its prefix, so they get its
// authentication, envelope and error table.
func (h *demoHost) mount(api *httpapi.Server) {
	api.Handle(http.MethodPost, "/demo/sprint", h.createSprint)
	api.Handle(http.MethodPost, "/demo/task", h.createTask)
	api.Handle(http.MethodGet, "/demo/sprint/{id}", h.getSprint)
	api.Handle(http.MethodGet, "/demo/task/{id}", h.getTask)
	api.Handle(http.MethodDelete, "/demo/sprint/{id}", h.deleteSprint)
	api.Handle(http.MethodDelete, "/demo/task/{id}", h.deleteTask)
}

// created is the data of a create: the new row's id.
type created struct {
	ID int64 `json:"id"`
}

// deleted is the data of a delete: the row's id and its trash entry's id.
type deleted struct {
	ID      int64 `json:"id"`
	TrashID int64 `json:"trashId"`
}

type createSprintRequest struct {
	ProjectID int64  `json:"projectId"`
	Name      string `json:"name"`
}

func (h *demoHost) createSprint(r *http.Request, p deskkit.Principal) (any, error) {
	var req createSprintRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if err := checkCreate(req.ProjectID, req.Name); err != nil {
		return nil, err
	}
	s := demoSprint{TenantID: p.TenantID, ProjectID: req.ProjectID, Name: req.Name, CreatedBy: p.UserID, State: stateActive}
	if _, err := h.db.NewInsert().Model(&s).Exec(r.Context()); err != nil {
		return nil, fmt.Errorf("demo: create sprint: %w", err)
	}
	return created{s.ID}, nil
}

type createTaskRequest struct {
	ProjectID int64  `json:"projectId"`
	SprintID  *int64 `json:"sprintId"`
	Name      string `json:"name"`
}

func (h *demoHost) createTask(r *http.Request, p deskkit.Principal) (any, error) {
	var req createTaskRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return nil, err
	}
	if err := checkCreate(req.ProjectID, req.Name); err != nil {
		return nil, err
	}
	if req.SprintID != nil && *req.SprintID < 1 {
		return nil, deskkit.Invalid("sprintId", "must be a positive integer")
	}
	t := demoTask{TenantID: p.TenantID, ProjectID: req.ProjectID, SprintID: req.SprintID, Name: req.Name, CreatedBy: p.UserID, State: stateActive}
	err := deskkit.RunInTx(r.Context(), h.db, nil, func(ctx context.Context, tx bun.Tx) error {
		if req.SprintID != nil {
			// The sprint must stay active until the task is in it: on
			// PostgreSQL FOR SHARE makes a concurrent sprint delete wait for
			// this transaction (and then hide the new task too); SQLite's
			// write transactions queue anyway.
			q := tx.NewSelect().Model((*demoSprint)(nil)).Column("id").
				Where("s.id = ? AND s.tenant_id = ? AND s.project_id = ? AND s.state = ?", *req.SprintID, p.TenantID, req.ProjectID, stateActive)
			if h.postgres {
				q = q.For("SHARE")
			}
			var ids []int64
			if err := q.Scan(ctx, &ids); err != nil {
				return fmt.Errorf("demo: read sprint: %w", err)
			}
			if len(ids) == 0 {
				return deskkit.Invalid("sprintId", "must name an active sprint of project %d", req.ProjectID)
			}
		}
		_, err := tx.NewInsert().Model(&t).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return created{t.ID}, nil
}

func (h *demoHost) getSprint(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	var s demoSprint
	err = h.db.NewSelect().Model(&s).
		Where("s.id = ? AND s.tenant_id = ? AND s.state = ?", id, p.TenantID, stateActive).
		Scan(r.Context())
	return found(s, err, "sprint")
}

func (h *demoHost) getTask(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	var t demoTask
	err = h.db.NewSelect().Model(&t).
		Where("t.id = ? AND t.tenant_id = ? AND t.state = ?", id, p.TenantID, stateActive).
		Scan(r.Context())
	return found(t, err, "task")
}

// found turns a lookup of one row into the row or ErrNotFound: rows of other
// tenants, trashed and hidden rows are all simply not there.
func found[T any](v T, err error, what string) (any, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return nil, deskkit.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("demo: read %s: %w", what, err)
	}
	return v, nil
}

// deleteSprint trashes the sprint and hides its active tasks, and adds the
// sprint's trash entry, all in one transaction.
//
// It adds the entry before it changes its own rows, as trash.Add asks: Add
// locks the project's sprint counter, which a restore in the project locks
// first too, so a restore of one of the sprint's tasks and this delete queue
// on that row instead of deadlocking (the restore would hold the counter and
// wait for the sprint row; this delete would hold the sprint row and wait
// for the counter). The sprint's UPDATE then also waits for any restore that
// holds the sprint FOR SHARE (see RestoreBatch), and the hide that follows,
// a statement of its own, sees the tasks such a restore made active.
func (h *demoHost) deleteSprint(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	var out deleted
	err = deskkit.RunInTx(r.Context(), h.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var s demoSprint
		err := tx.NewSelect().Model(&s).Where("s.id = ? AND s.tenant_id = ? AND s.state = ?", id, p.TenantID, stateActive).Scan(ctx)
		if err != nil {
			return notFound(err, "sprint")
		}
		e, err := h.trash.Add(ctx, tx, p, trash.NewEntry{
			ProjectID: s.ProjectID, TargetType: trash.TargetSprint, TargetID: s.ID, TargetName: s.Name, CreatedBy: s.CreatedBy,
		})
		if err != nil {
			return alreadyDeleted(err)
		}
		if err := markTrashed(ctx, tx.NewUpdate().Model((*demoSprint)(nil)).
			Where("s.id = ? AND s.tenant_id = ? AND s.state = ?", id, p.TenantID, stateActive)); err != nil {
			return fmt.Errorf("demo: trash sprint: %w", err)
		}
		if _, err := tx.NewUpdate().Model((*demoTask)(nil)).
			Set("state = ?", stateHidden).
			Where("t.tenant_id = ? AND t.sprint_id = ? AND t.state = ?", p.TenantID, s.ID, stateActive).
			Exec(ctx); err != nil {
			return fmt.Errorf("demo: hide tasks: %w", err)
		}
		out = deleted{ID: s.ID, TrashID: e.ID}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// deleteTask trashes the task and adds its trash entry in one transaction,
// the entry first, as deleteSprint does and for the same reason.
func (h *demoHost) deleteTask(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	var out deleted
	err = deskkit.RunInTx(r.Context(), h.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var t demoTask
		err := tx.NewSelect().Model(&t).Where("t.id = ? AND t.tenant_id = ? AND t.state = ?", id, p.TenantID, stateActive).Scan(ctx)
		if err != nil {
			return notFound(err, "task")
		}
		e, err := h.trash.Add(ctx, tx, p, trash.NewEntry{
			ProjectID: t.ProjectID, TargetType: trash.TargetTask, TargetID: t.ID, TargetName: t.Name, SprintID: t.SprintID, CreatedBy: t.CreatedBy,
		})
		if err != nil {
			return alreadyDeleted(err)
		}
		if err := markTrashed(ctx, tx.NewUpdate().Model((*demoTask)(nil)).
			Where("t.id = ? AND t.tenant_id = ? AND t.state = ?", id, p.TenantID, stateActive)); err != nil {
			return fmt.Errorf("demo: trash task: %w", err)
		}
		out = deleted{ID: t.ID, TrashID: e.ID}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// notFound turns a failed read of the row to delete into ErrNotFound when
// the row is simply not there (or not active).
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return deskkit.ErrNotFound
	}
	return fmt.Errorf("demo: read %s: %w", what, err)
}

// alreadyDeleted turns Add's ErrConflict into ErrNotFound: the target got
// its entry from a concurrent delete of the same row, which committed while
// this one waited, so for this request the row is gone.
func alreadyDeleted(err error) error {
	if errors.Is(err, trash.ErrConflict) {
		return deskkit.ErrNotFound
	}
	return err
}

// markTrashed runs q, an update of one active row, to make it trashed. The
// row was read active in this transaction, but not locked: if it changed
// since, the delete lost a race and answers ErrNotFound, which also rolls
// back the entry added for it.
func markTrashed(ctx context.Context, q *bun.UpdateQuery) error {
	res, err := q.Set("state = ?", stateTrashed).Exec(ctx)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return deskkit.ErrNotFound
	}
	return nil
}

// Restore brings back one entry's target; see RestoreBatch.
func (h *demoHost) Restore(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return h.RestoreBatch(ctx, tx, []trash.Entry{e})
}

// Purge deletes one entry's target for good; see PurgeBatch.
func (h *demoHost) Purge(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return h.PurgeBatch(ctx, tx, []trash.Entry{e})
}

// RestoreBatch makes the entries' sprints active with the tasks hidden with
// them, then the entries' tasks, clearing the sprint of a task whose sprint
// is gone for good. A target missing from the demo tables is skipped: its
// entry leaves the trash with nothing to bring back.
//
// A task depends on its sprint, which deleteSprint may be trashing at the
// same moment: deleteSprint hides only the tasks that are active when it
// runs, so a task made active just after would stay live inside a trashed
// sprint. RestoreBatch therefore locks the tasks' sprints (FOR SHARE, which
// conflicts with deleteSprint's UPDATE) before touching the tasks, and the
// two serialize: if the restore locks first, deleteSprint waits and then
// hides the restored task with the sprint; if deleteSprint wins, the lock
// waits for its commit, sees the sprint trashed, and the task goes hidden
// with it, as if the restore had run first. Either way the task comes back
// with its sprint. SQLite runs one write transaction at a time, so there
// the lock is not needed; the state check is the same.
func (h *demoHost) RestoreBatch(ctx context.Context, tx bun.Tx, es []trash.Entry) error {
	for _, g := range groupEntries(es) {
		if len(g.sprints) > 0 {
			if _, err := tx.NewUpdate().Model((*demoSprint)(nil)).
				Set("state = ?", stateActive).
				Where("s.tenant_id = ? AND s.id IN (?) AND s.state = ?", g.tenantID, bun.List(g.sprints), stateTrashed).
				Exec(ctx); err != nil {
				return fmt.Errorf("demo: restore sprints: %w", err)
			}
			if _, err := tx.NewUpdate().Model((*demoTask)(nil)).
				Set("state = ?", stateActive).
				Where("t.tenant_id = ? AND t.sprint_id IN (?) AND t.state = ?", g.tenantID, bun.List(g.sprints), stateHidden).
				Exec(ctx); err != nil {
				return fmt.Errorf("demo: restore tasks of sprints: %w", err)
			}
		}
		if len(g.tasks) > 0 {
			if h.postgres {
				// In id order, so that two restores sharing sprints queue
				// rather than deadlock against a sprint delete.
				var locked []int64
				if err := tx.NewSelect().Model((*demoSprint)(nil)).Column("s.id").
					Where("s.tenant_id = ? AND s.id IN (?)", g.tenantID,
						tx.NewSelect().Model((*demoTask)(nil)).Column("t.sprint_id").
							Where("t.tenant_id = ? AND t.id IN (?) AND t.sprint_id IS NOT NULL", g.tenantID, bun.List(g.tasks))).
					OrderExpr("s.id").
					For("SHARE OF s").
					Scan(ctx, &locked); err != nil {
					return fmt.Errorf("demo: lock sprints of tasks: %w", err)
				}
			}
			// Read after the lock: this statement's snapshot sees a sprint
			// delete that the lock waited for.
			if _, err := tx.NewUpdate().Model((*demoTask)(nil)).
				Set(`state = CASE WHEN EXISTS (
					SELECT 1 FROM deskkit_demo_sprints AS s WHERE s.id = t.sprint_id AND s.tenant_id = t.tenant_id AND s.state <> ?
				) THEN ? ELSE ? END`, stateActive, stateHidden, stateActive).
				Set(`sprint_id = CASE WHEN EXISTS (
					SELECT 1 FROM deskkit_demo_sprints AS s WHERE s.id = t.sprint_id AND s.tenant_id = t.tenant_id
				) THEN t.sprint_id END`).
				Where("t.tenant_id = ? AND t.id IN (?) AND t.state = ?", g.tenantID, bun.List(g.tasks), stateTrashed).
				Exec(ctx); err != nil {
				return fmt.Errorf("demo: restore tasks: %w", err)
			}
		}
	}
	return nil
}

// PurgeBatch deletes the entries' tasks, then their sprints with the tasks
// hidden with them. Only trashed rows go: an entry never deletes an active
// row, whatever state the tables are in.
func (h *demoHost) PurgeBatch(ctx context.Context, tx bun.Tx, es []trash.Entry) error {
	for _, g := range groupEntries(es) {
		if len(g.tasks) > 0 {
			if _, err := tx.NewDelete().Model((*demoTask)(nil)).
				Where("t.tenant_id = ? AND t.id IN (?) AND t.state = ?", g.tenantID, bun.List(g.tasks), stateTrashed).
				Exec(ctx); err != nil {
				return fmt.Errorf("demo: purge tasks: %w", err)
			}
		}
		if len(g.sprints) > 0 {
			if _, err := tx.NewDelete().Model((*demoTask)(nil)).
				Where("t.tenant_id = ? AND t.sprint_id IN (?) AND t.state = ?", g.tenantID, bun.List(g.sprints), stateHidden).
				Exec(ctx); err != nil {
				return fmt.Errorf("demo: purge tasks of sprints: %w", err)
			}
			if _, err := tx.NewDelete().Model((*demoSprint)(nil)).
				Where("s.tenant_id = ? AND s.id IN (?) AND s.state = ?", g.tenantID, bun.List(g.sprints), stateTrashed).
				Exec(ctx); err != nil {
				return fmt.Errorf("demo: purge sprints: %w", err)
			}
		}
	}
	return nil
}

// entryGroup is the target ids of one tenant's entries, by type.
type entryGroup struct {
	tenantID       int64
	sprints, tasks []int64
}

// groupEntries splits es by tenant, in order of first appearance: the trash
// hands over one tenant at a time, but the hooks do not rely on it.
func groupEntries(es []trash.Entry) []*entryGroup {
	var out []*entryGroup
	byTenant := map[int64]*entryGroup{}
	for _, e := range es {
		g := byTenant[e.TenantID]
		if g == nil {
			g = &entryGroup{tenantID: e.TenantID}
			byTenant[e.TenantID] = g
			out = append(out, g)
		}
		if e.TargetType == trash.TargetSprint {
			g.sprints = append(g.sprints, e.TargetID)
		} else {
			g.tasks = append(g.tasks, e.TargetID)
		}
	}
	return out
}

// checkCreate checks the fields every create takes. Names follow the rule
// the trash applies to the names it stores (deskkit.CheckName), so whatever
// the demo accepts can go into the trash unchanged.
func checkCreate(projectID int64, name string) error {
	if err := deskkit.CheckID("projectId", projectID); err != nil {
		return err
	}
	return deskkit.CheckName("name", name, trash.MaxNameLength)
}

// pathID reads the {id} path parameter, spelt as every id of the API is
// (httpapi.ParseID): 042 and +42 are refused, not read as 42.
func pathID(r *http.Request) (int64, error) {
	return httpapi.ParseID("id", r.PathValue("id"))
}
