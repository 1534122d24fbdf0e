package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/deskkit/deskkit/internal/directory"
)

// tokenCmd creates the tenant and user if missing and prints a new token for
// the user, and nothing else, on stdout.
func tokenCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, logger *slog.Logger) error {
	fs := newFlagSet("token", stderr, getenv)
	tenantName := fs.String("tenant", "", "tenant name, created if missing (required)")
	username := fs.String("username", "", "user name, created if missing (required)")
	admin := fs.Bool("admin", false, "make the user an admin; without it the user is made a non-admin")
	dbURL := fs.databaseURL()
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case *tenantName == "":
		return errors.New("-tenant is required")
	case *username == "":
		return errors.New("-username is required")
	}
	db, err := openDB(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	dir, err := directory.New(db, nil)
	if err != nil {
		return err
	}
	tenant, err := dir.EnsureTenant(ctx, *tenantName)
	if err != nil {
		return fmt.Errorf("-tenant: %w", err)
	}
	user, err := dir.EnsureUser(ctx, tenant.ID, *username, *admin)
	if err != nil {
		return fmt.Errorf("-username: %w", err)
	}
	token, err := dir.IssueToken(ctx, user)
	if err != nil {
		return err
	}
	logger.InfoContext(ctx, "token issued", slog.String("tenant", tenant.Name), slog.Int64("tenantId", tenant.ID),
		slog.String("username", user.Username), slog.Int64("userId", user.ID), slog.Bool("admin", user.Admin))
	_, err = fmt.Fprintln(stdout, token)
	return err
}

// demoToken makes sure the demo tenant and its admin user exist and issues
// a new token for the user. A token is issued on every start because only
// its hash is kept: the one printed last time cannot be printed again.
func (a *app) demoToken(ctx context.Context) (string, error) {
	tenant, err := a.dir.EnsureTenant(ctx, demoTenant)
	if err != nil {
		return "", err
	}
	user, err := a.dir.EnsureUser(ctx, tenant.ID, demoUsername, true)
	if err != nil {
		return "", err
	}
	return a.dir.IssueToken(ctx, user)
}

// printDemoAccess tells the person who started the server how to call it:
// curl lines with token, when there is one to show.
func printDemoAccess(stdout io.Writer, base, token string) {
	if token == "" {
		return
	}
	auth := "-H 'Authorization: Bearer " + token + "'"
	fmt.Fprintf(stdout, "Search the demo tenant's trash with:\n  curl %s '%s/api/v1/task/trash/search?targetType=TASK'\n", auth, base)
	fmt.Fprintf(stdout, "Create a demo task, then delete it into the trash (use the id the first call answers):\n"+
		"  curl %s -H 'Content-Type: application/json' -d '{\"projectId\":1,\"name\":\"My first task\"}' '%s/api/v1/demo/task'\n"+
		"  curl %s -X DELETE '%s/api/v1/demo/task/1'\n", auth, base, auth, base)
}
