package trash_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// testRightsMatchActions: Allowed and ProjectRights answer what Restore,
// Clear, RestoreAll and ClearAll then do, for an admin, a project manager,
// a creator and someone with no part in an entry; an own sprint holding
// someone else's task may be restored but not cleared.
func testRightsMatchActions(t *testing.T, db *bun.DB) {
	f := setup(t, db, &trash.Config{Authorizer: fakeAuthorizer(func(p deskkit.Principal, project int64) (bool, error) {
		return p.UserID == 2 && project == 2, nil // bob manages project 2
	})})
	ctx := context.Background()
	carol := deskkit.Principal{UserID: 5, TenantID: 1}
	byAlice := f.add(t, alice, task(1, "alice deleted"))
	createdByCarol := f.add(t, alice, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 2, TargetName: "carol created", CreatedBy: 5})
	sp := f.add(t, alice, sprint(10, "alice's sprint"))
	bobsInSprint := f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 3, TargetName: "bob's task", SprintID: ptr(int64(10)), CreatedBy: 2})
	inProject2 := f.add(t, alice, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 4, TargetName: "project 2"})
	es := []trash.Entry{byAlice, createdByCarol, sp, bobsInSprint, inProject2}

	yes, no, restoreOnly := trash.EntryRights{Restore: true, Clear: true}, trash.EntryRights{}, trash.EntryRights{Restore: true}
	want := map[string][]trash.EntryRights{
		"admin": {yes, yes, yes, yes, yes},
		"alice": {yes, yes, restoreOnly, no, yes},
		"bob":   {no, no, no, yes, yes},
		"carol": {no, yes, no, no, no},
	}
	who := map[string]deskkit.Principal{"admin": admin, "alice": alice, "bob": bob, "carol": carol}
	for name, p := range who {
		got, err := f.trash.Allowed(ctx, p, es)
		if err != nil {
			t.Fatalf("allowed for %s: %v", name, err)
		}
		if diff := cmp.Diff(want[name], got); diff != "" {
			t.Errorf("rights of %s (-want +got):\n%s", name, diff)
		}
		// What Allowed refuses, the actions refuse, changing nothing.
		for i, r := range got {
			if !r.Restore {
				wantErr(t, f.trash.Restore(ctx, p, es[i].ID), trash.ErrForbidden)
			}
			if !r.Clear {
				wantErr(t, f.trash.Clear(ctx, p, es[i].ID), trash.ErrForbidden)
			}
		}
	}
	if calls := f.restorer.Calls(); len(calls) != 0 {
		t.Fatalf("refused actions reached the host: %v", calls)
	}

	rights := func(p deskkit.Principal, project int64) trash.Rights {
		t.Helper()
		r, err := f.trash.ProjectRights(ctx, p, project)
		if err != nil {
			t.Fatalf("project rights: %v", err)
		}
		return r
	}
	if got := rights(admin, 1); got != (trash.Rights{Manage: true, Entries: 4}) {
		t.Errorf("admin's rights on project 1 = %+v", got)
	}
	if got := rights(carol, 1); got != (trash.Rights{Entries: 1}) {
		t.Errorf("carol's rights on project 1 = %+v, want her one entry", got)
	}
	if got := rights(carol, 2); got != (trash.Rights{}) {
		t.Errorf("carol's rights on project 2 = %+v, want nothing", got)
	}
	if got := rights(bob, 2); got != (trash.Rights{Manage: true, Entries: 1}) {
		t.Errorf("bob's rights on project 2 = %+v", got)
	}
	if _, err := f.trash.ProjectRights(ctx, carol, 0); !errors.Is(err, trash.ErrInvalid) {
		t.Errorf("rights of project 0 = %v, want invalid", err)
	}
	// RestoreAll takes what ProjectRights counted: carol restores her one.
	if n, err := f.trash.RestoreAll(ctx, carol, 1); err != nil || n != 1 {
		t.Errorf("carol restores all = %d, %v; want the 1 ProjectRights counted", n, err)
	}
	if n, err := f.trash.ClearAll(ctx, carol, 2); err != nil || n != 0 {
		t.Errorf("carol clears all of project 2 = %d, %v; want 0 as ProjectRights said", n, err)
	}

	ps, err := f.trash.Projects(ctx, carol)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]trash.ProjectCount{{ProjectID: 1, Entries: 3}, {ProjectID: 2, Entries: 1}}, ps); diff != "" {
		t.Errorf("projects (-want +got):\n%s", diff)
	}
	if ps, err := f.trash.Projects(ctx, eve); err != nil || len(ps) != 0 {
		t.Errorf("another tenant's projects = %v, %v; want none", ps, err)
	}
}

// testProjectsVisible: Projects lists only what a ProjectViewer shows.
func testProjectsVisible(t *testing.T, db *bun.DB) {
	f := setup(t, db, &trash.Config{Authorizer: projectOneViewer{}})
	ctx := context.Background()
	f.add(t, alice, task(1, "one"))
	f.add(t, alice, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 2, TargetName: "two"})
	ps, err := f.trash.Projects(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]trash.ProjectCount{{ProjectID: 1, Entries: 1}}, ps); diff != "" {
		t.Errorf("alice's projects (-want +got):\n%s", diff)
	}
	if ps, _ := f.trash.Projects(ctx, admin); len(ps) != 2 {
		t.Errorf("admin's projects = %v, want both", ps)
	}
}

// projectOneViewer lets everyone see project 1 only, and manage nothing.
type projectOneViewer struct{}

func (projectOneViewer) CanManageProject(context.Context, deskkit.Principal, int64) (bool, error) {
	return false, nil
}

func (projectOneViewer) VisibleProjects(context.Context, deskkit.Principal) (trash.ProjectScope, error) {
	return trash.ProjectScope{IDs: []int64{1}}, nil
}
