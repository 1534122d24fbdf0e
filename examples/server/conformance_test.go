package main

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/trash/trashtest"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// backends opens a fresh database of each kind.
var backends = []struct {
	name string
	open func(testing.TB) *bun.DB
}{{"sqlite", dbtest.OpenSQLite}, {"postgres", dbtest.OpenPostgres}}

// The reference server's directory adapter passes deskkit's conformance
// suite for a verify.Directory, on both databases.
func TestVerifyUsersConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			verifytest.RunDirectoryTests(t, func(t *testing.T) verifytest.DirectoryHarness {
				db := b.open(t)
				ctx := context.Background()
				if err := directory.Migrate(ctx, db); err != nil {
					t.Fatal(err)
				}
				dir, err := directory.New(db, nil)
				if err != nil {
					t.Fatal(err)
				}
				return verifytest.DirectoryHarness{
					Directory: verifyUsers{dir},
					DB:        db,
					AddTenant: func(ctx context.Context, name string) (int64, error) {
						tn, err := dir.EnsureTenant(ctx, name)
						return tn.ID, err
					},
					AddUser: func(ctx context.Context, tenantID int64, username string) (int64, error) {
						u, err := dir.EnsureUserRole(ctx, tenantID, username, directory.Role{})
						return u.ID, err
					},
				}
			})
		})
	}
}

// The demo host's trash.Restorer (with its batch capabilities) passes
// deskkit's conformance suite, with sprints and tasks made and deleted
// through the demo routes, on both databases.
func TestDemoRestorerConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			trashtest.RunRestorerTests(t, func(t *testing.T) trashtest.RestorerHarness {
				f := setup(t, b.open(t))
				const project = 7
				kinds := map[trash.TargetType]string{trash.TargetTask: "task", trash.TargetSprint: "sprint"}
				return trashtest.RestorerHarness{
					DB: f.db, Restorer: f.app.demo, Principal: f.adminP, ProjectID: project,
					NewTask: func(_ context.Context, sprintID int64) (int64, error) {
						var sprint *int64
						if sprintID != 0 {
							sprint = &sprintID
						}
						return f.createTask(project, sprint, "a task"), nil
					},
					NewSprint: func(context.Context) (int64, error) { return f.createSprint(project, "a sprint"), nil },
					Delete: func(_ context.Context, tt trash.TargetType, id int64) (int64, error) {
						return f.delete(kinds[tt], id).TrashID, nil
					},
					State: func(ctx context.Context, tt trash.TargetType, id int64) (trashtest.State, error) {
						var state string
						q := f.db.NewSelect().Model((*demoTask)(nil)).Column("state")
						if tt == trash.TargetSprint {
							q = f.db.NewSelect().Model((*demoSprint)(nil)).Column("state")
						}
						err := q.Where("id = ?", id).Scan(ctx, &state)
						switch {
						case errors.Is(err, sql.ErrNoRows):
							return trashtest.Gone, nil
						case err != nil:
							return "", err
						}
						return map[string]trashtest.State{stateActive: trashtest.Live, stateTrashed: trashtest.Trashed, stateHidden: trashtest.Hidden}[state], nil
					},
				}
			})
		})
	}
}
