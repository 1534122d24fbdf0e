package directory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/database"
)

// A tenant, an admin user and a token: the token authenticates as the user,
// anything else is ErrUnauthenticated.
func Example() {
	dir, err := os.MkdirTemp("", "deskkit-directory")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := database.OpenSQLite(filepath.Join(dir, "example.db"), database.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	ctx := context.Background()
	if err := directory.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	d, err := directory.New(db, nil)
	if err != nil {
		log.Fatal(err)
	}
	tenant, err := d.EnsureTenant(ctx, "acme")
	if err != nil {
		log.Fatal(err)
	}
	ada, err := d.EnsureUserRole(ctx, tenant.ID, "ada", directory.Role{Admin: true})
	if err != nil {
		log.Fatal(err)
	}
	token, err := d.IssueToken(ctx, ada)
	if err != nil {
		log.Fatal(err)
	}

	p, err := d.Authenticate(ctx, token)
	fmt.Println(p == ada.Principal(), p.Admin, err)
	_, err = d.Authenticate(ctx, "dk_not-a-token")
	fmt.Println(errors.Is(err, deskkit.ErrUnauthenticated))
	// Output:
	// true true <nil>
	// true
}
