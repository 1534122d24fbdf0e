package trash

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// Asking before acting: a page that offers Restore and Clear offers them
// only where the action would be allowed. Allowed and ProjectRights answer
// by the rule Restore, Clear, RestoreAll and ClearAll enforce (mayAct and
// canManage, the same functions), before any transaction, as those do.

// mayAct is the rule of one entry: a principal who may manage its project
// may restore and clear it; anyone else only an entry they deleted or
// whose target they created.
func mayAct(p deskkit.Principal, manage bool, deletedBy, createdBy int64) bool {
	return manage || deletedBy == p.UserID || createdBy == p.UserID
}

// EntryRights is what a principal may do with one entry.
type EntryRights struct {
	Restore bool // Restore would act
	// Clear: Clear would act. It can be false where Restore is true: a
	// sprint holding trashed tasks the principal may not clear.
	Clear bool
}

// Allowed tells, for each of es (entries p read, from Search or Get), what
// p may do with it: where Restore and Clear would act, and where they
// would answer ErrForbidden. It asks the Authorizer once per distinct
// project of es and, for sprints of projects p does not manage, reads
// once which of them hold tasks p may not clear (the check Clear makes),
// all outside any transaction; an error is passed on. An entry restored or
// cleared meanwhile is still answered, and the action then finds it gone.
func (t *Trash) Allowed(ctx context.Context, p deskkit.Principal, es []Entry) ([]EntryRights, error) {
	if !p.Valid() {
		return nil, ErrUnauthenticated
	}
	manage := map[int64]bool{}
	out := make([]EntryRights, len(es))
	blocked := map[int64][]int64{} // project: own sprints whose clearing p's rights must check
	for i, e := range es {
		m, ok := manage[e.ProjectID]
		if !ok {
			var err error
			if m, err = t.canManage(ctx, p, e.ProjectID); err != nil {
				return nil, err
			}
			manage[e.ProjectID] = m
		}
		may := mayAct(p, m, e.DeletedBy, e.CreatedBy)
		out[i] = EntryRights{Restore: may, Clear: may}
		if may && !m && e.TargetType == TargetSprint {
			blocked[e.ProjectID] = append(blocked[e.ProjectID], e.TargetID)
		}
	}
	for project, sprints := range blocked {
		var found []int64
		err := t.db.NewSelect().TableExpr("deskkit_trash AS k").ColumnExpr("DISTINCT k.sprint_id").
			Where("k.tenant_id = ? AND k.project_id = ? AND k.target_type = ?", p.TenantID, project, TargetTask).
			Where("k.sprint_id IN (?)", bun.List(sprints)).
			Where("k.deleted_by <> ? AND k.created_by <> ?", p.UserID, p.UserID).
			Scan(ctx, &found)
		if err != nil {
			return nil, fmt.Errorf("trash: rights: %w", err)
		}
		for i, e := range es {
			if e.ProjectID == project && e.TargetType == TargetSprint && slices.Contains(found, e.TargetID) {
				out[i].Clear = false
			}
		}
	}
	return out, nil
}

// Rights is what a principal may do with the trash of one project.
type Rights struct {
	// Manage: the principal may restore and clear every entry of the
	// project (an admin, or as the Authorizer says).
	Manage bool
	// Entries is how many of the project's entries RestoreAll and
	// ClearAll would take for the principal: all of them with Manage, else
	// those the principal deleted or whose target they created. 0 means
	// the project-wide actions would do nothing.
	Entries int64
}

// ProjectRights answers what p may do with the trash of projectID, by the
// rule RestoreAll and ClearAll enforce: it returns an *deskkit.InputError
// for a bad projectID and ErrNotFound for a project p may not see, as
// Count does. Entries is read with one statement (the counts table for a
// manager, as Count reads it); the hooks are asked first, outside any
// transaction.
func (t *Trash) ProjectRights(ctx context.Context, p deskkit.Principal, projectID int64) (Rights, error) {
	if !p.Valid() {
		return Rights{}, ErrUnauthenticated
	}
	if err := deskkit.CheckID("projectId", projectID); err != nil {
		return Rights{}, err
	}
	if err := t.checkVisible(ctx, p, projectID); err != nil {
		return Rights{}, err
	}
	manage, err := t.canManage(ctx, p, projectID)
	if err != nil {
		return Rights{}, err
	}
	var n int64
	if manage {
		err = t.db.QueryRowContext(ctx, countSQL, p.TenantID, projectID).Scan(&n)
	} else {
		err = t.db.NewSelect().TableExpr("deskkit_trash AS t").ColumnExpr("count(*)").
			Where("t.tenant_id = ? AND t.project_id = ? AND (t.deleted_by = ? OR t.created_by = ?)", p.TenantID, projectID, p.UserID, p.UserID).
			Scan(ctx, &n)
	}
	if err != nil {
		return Rights{}, fmt.Errorf("trash: rights: %w", err)
	}
	return Rights{Manage: manage, Entries: n}, nil
}

// ProjectCount is a project with entries in the trash, and how many.
type ProjectCount struct {
	ProjectID int64
	Entries   int64
}

// Projects lists the projects of p's tenant that p may see and that have
// entries in the trash, by id, with their counts (tasks and sprints): what
// a form offers to pick a project from. It reads the counts table (see
// Count), one row per project and type.
func (t *Trash) Projects(ctx context.Context, p deskkit.Principal) ([]ProjectCount, error) {
	if !p.Valid() {
		return nil, ErrUnauthenticated
	}
	scope, err := t.visible(ctx, p)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ProjectID int64 `bun:"project_id"`
		Entries   int64 `bun:"entries"`
	}
	q := t.db.NewSelect().Table("deskkit_trash_counts").Column("project_id").ColumnExpr("sum(entries) AS entries").
		Where("tenant_id = ?", p.TenantID).Group("project_id").Having("sum(entries) > 0").Order("project_id")
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("trash: projects: %w", err)
	}
	out := make([]ProjectCount, 0, len(rows))
	for _, r := range rows {
		if scope.Contains(r.ProjectID) {
			out = append(out, ProjectCount{ProjectID: r.ProjectID, Entries: r.Entries})
		}
	}
	return slices.Clip(out), nil
}
