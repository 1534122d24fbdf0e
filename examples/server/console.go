package main

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"os"
	"strings"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/httpapi/console"
)

// newConsole builds the web console over the services the API mounts: the
// same objects, so the console's answers and refusals are the API's. Every
// session, signed in with a token or opened by a portal link, acts for its
// user as the directory knows them on each request (Principals: a user
// demoted with token -admin=false acts as a non-admin at the next click);
// a token session's token is checked again too. Portal links are signed
// with a key derived from the server secret. Behind -trusted-proxies the
// console's limits and cookies follow the client the proxies name, as the
// API's logs do. The sign-in page shows the token command as this server
// is invoked. Projects and sprints show by the demo host's names
// (demoNames); a portal link's -return URL must be on one of
// -host-origins.
func newConsole(db *bun.DB, dir *directory.Directory, tr httpapi.TrashService, v httpapi.VerifyService, reg httpapi.ChannelService, secret []byte, cfg appConfig) (*console.Console, error) {
	cmd := serverInvocation(os.Args[0])
	key, err := portalSecret(secret)
	if err != nil {
		return nil, err
	}
	return console.New(&console.Config{
		DB: db, Principals: dir, Authenticator: dir, TokenHash: directory.TokenHash, Secret: key,
		Names: consoleNames{dir}, Projects: demoNames{db}, Sprints: demoNames{db}, TrustedProxies: cfg.TrustedProxies,
		HostOrigins: cfg.HostOrigins,
		Trash:       tr, Verifier: v, Channels: reg,
		Logger: cfg.Logger, Now: cfg.Now,
		TokenCommand: cmd + " token -tenant TENANT -username USERNAME",
		LinkCommand:  cmd + " token -tenant TENANT -username USERNAME -console",
	})
}

// serverInvocation is how a person runs this server's commands: the
// program as it was started, or "go run ./examples/server" for a binary
// that go run built in a temporary directory.
func serverInvocation(arg0 string) string {
	if arg0 == "" || goRunBinary(arg0) || strings.HasSuffix(arg0, ".test") {
		return "go run ./examples/server"
	}
	return shellWord(arg0)
}

// portalSecret derives the key that signs portal links from the server
// secret, so that one secret serves codes, channel secrets and links
// without a link's signature telling anything of the others.
func portalSecret(secret []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, secret, nil, "deskkit console portal links", 32)
}

// The directory tells the console who a session's user is now.
var _ console.PrincipalResolver = (*directory.Directory)(nil)

// consoleNames gives the console's header the directory's names.
type consoleNames struct{ d *directory.Directory }

var _ console.Namer = consoleNames{}

// Names returns the user's display name (the username when none is set)
// and the tenant's name.
func (n consoleNames) Names(ctx context.Context, p deskkit.Principal) (string, string, error) {
	u, err := n.d.User(ctx, p.TenantID, p.UserID)
	if err != nil {
		return "", "", err
	}
	t, err := n.d.Tenant(ctx, p.TenantID)
	if err != nil {
		return "", "", err
	}
	name := u.DisplayName
	if name == "" {
		name = u.Username
	}
	return name, t.Name, nil
}
