package main

import (
	"context"

	"github.com/deskkit/deskkit/internal/directory"
	"github.com/deskkit/deskkit/trash"
)

// The adapters that make the one user directory serve each service in that
// service's own vocabulary. The directory knows no service, and no service
// knows the directory: this composition root is the only place both meet.

// trashUsers makes the directory the trash's UserResolver.
type trashUsers struct{ d *directory.Directory }

var _ trash.UserResolver = trashUsers{}

func (u trashUsers) ResolveUsers(ctx context.Context, tenantID int64, ids []int64) (map[int64]trash.UserInfo, error) {
	return u.d.ResolveUsers(ctx, tenantID, ids)
}
