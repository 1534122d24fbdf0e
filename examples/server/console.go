package main

import (
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// newConsole builds the web console over the services the API mounts: the
// same objects, so the console's answers and refusals are the API's. A
// session acts for the principal of the token it signed in with, which the
// directory checks again on every request.
func newConsole(db *bun.DB, dir *directory.Directory, tr *trash.Trash, v *verify.Verifier, reg *channel.ChannelRegistry, cfg appConfig) (*console.Console, error) {
	return console.New(&console.Config{
		DB: db, Authenticator: dir, TokenHash: directory.TokenHash,
		Trash: tr, Verifier: v, Channels: reg,
		Logger: cfg.Logger, Now: cfg.Now,
	})
}
