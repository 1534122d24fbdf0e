package trash

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// Restorer is implemented by the host, which owns tasks and sprints: the
// library only keeps the trash entries. Each method runs inside the
// transaction that also removes the entry, so when it returns an error the
// whole operation rolls back and the entry stays in the trash.
//
// Restore brings the entry's target back. For a sprint, the host decides which
// of its tasks come back with it; tasks with trash entries of their own are
// not among them (they stay in the trash until restored themselves).
//
// Purge deletes the entry's target for good. When a sprint is purged, the
// library purges the trash entries of its tasks first, through Purge too.
//
// A Restorer that also implements BatchRestorer or BatchPurger is handed
// whole batches instead, which restore-all and clear-all use.
type Restorer interface {
	Restore(ctx context.Context, tx bun.Tx, e Entry) error
	Purge(ctx context.Context, tx bun.Tx, e Entry) error
}

// BatchRestorer is an optional capability of a Restorer: restore many
// entries in one call. Sprints come in a batch before their tasks.
type BatchRestorer interface {
	RestoreBatch(ctx context.Context, tx bun.Tx, es []Entry) error
}

// BatchPurger is an optional capability of a Restorer: purge many entries in
// one call. Tasks of a sprint come before the sprint.
type BatchPurger interface {
	PurgeBatch(ctx context.Context, tx bun.Tx, es []Entry) error
}

// Authorizer tells whether a principal may manage a whole project's trash.
// Without one only admin principals may. A principal who may not manage the
// project may still restore and clear the entries they deleted or created.
// An error it returns aborts the operation and is passed on.
type Authorizer interface {
	CanManageProject(ctx context.Context, p deskkit.Principal, projectID int64) (bool, error)
}

// UserResolver looks up how users are shown, for searches with InfoScope
// InfoDetail, in the shape every service shares (deskkit.UserInfo). It is
// called once per page with every distinct user id of the page; ids it does
// not return are shown with empty name and avatar. An error it returns fails
// the search and is passed on.
type UserResolver interface {
	ResolveUsers(ctx context.Context, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error)
}
