package main

import (
	"context"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/directory"
	"github.com/deskkit/deskkit/trash"
)

// The adapters that make the one user directory serve each service in that
// service's own vocabulary. The directory knows no service, and no service
// knows the directory: this composition root is the only place both meet.

// The directory authenticates requests as it is: httpapi.Authenticator
// speaks only deskkit types.
var _ httpapi.Authenticator = (*directory.Directory)(nil)

// trashUsers makes the directory the trash's UserResolver.
type trashUsers struct{ d *directory.Directory }

var _ trash.UserResolver = trashUsers{}

// ResolveUsers returns how the trash shows the users ids of the tenant:
// the directory's display name and avatar. Unknown ids are left out.
func (u trashUsers) ResolveUsers(ctx context.Context, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	return u.d.ResolveUsers(ctx, tenantID, ids)
}
