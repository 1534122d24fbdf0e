package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/trash/trashtest"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// The host's users store passes deskkit's conformance suite for a
// verify.Directory, over its real tables.
func TestHostUsersConformance(t *testing.T) {
	verifytest.RunDirectoryTests(t, func(t *testing.T) verifytest.DirectoryHarness {
		db, err := openDB(filepath.Join(t.TempDir(), "embed.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		ctx := context.Background()
		for _, stmt := range usersSchema {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		return verifytest.DirectoryHarness{
			Directory: hostUsers{db},
			DB:        db,
			AddTenant: func(ctx context.Context, name string) (int64, error) {
				row := tenantRow{Name: name}
				_, err := db.NewInsert().Model(&row).ExcludeColumn("id").Returning("id").Exec(ctx)
				return row.ID, err
			},
			AddUser: func(ctx context.Context, tenantID int64, username string) (int64, error) {
				row := userRow{TenantID: tenantID, Username: username}
				_, err := db.NewInsert().Model(&row).ExcludeColumn("id").Returning("id").Exec(ctx)
				return row.ID, err
			},
		}
	})
}

// The host's trash.Restorer passes deskkit's conformance suite, with
// tasks deleted through the host's own DELETE /tasks/{id}.
func TestHostRestorerConformance(t *testing.T) {
	ada := deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}
	trashtest.RunRestorerTests(t, func(t *testing.T) trashtest.RestorerHarness {
		db, err := openDB(filepath.Join(t.TempDir(), "embed.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		h, err := newApp(context.Background(), db, &appOptions{Logger: slog.New(slog.DiscardHandler), Keys: apiKeys{"key-ada": ada}})
		if err != nil {
			t.Fatal(err)
		}
		return trashtest.RestorerHarness{
			DB: db, Restorer: h, Principal: ada, ProjectID: 1,
			NewTask: func(ctx context.Context, _ int64) (int64, error) {
				tk := task{TenantID: 1, ProjectID: 1, Title: "a task", CreatedBy: 1}
				_, err := db.NewInsert().Model(&tk).Exec(ctx)
				return tk.ID, err
			},
			Delete: func(ctx context.Context, tt trash.TargetType, id int64) (int64, error) {
				req := httptest.NewRequestWithContext(ctx, http.MethodDelete, "/tasks/"+strconv.FormatInt(id, 10), nil)
				req.Header.Set("Authorization", "Bearer key-ada")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					return 0, fmt.Errorf("DELETE /tasks/%d: %d %s", id, rec.Code, rec.Body)
				}
				var entry int64
				err := db.NewRaw("SELECT id FROM deskkit_trash WHERE target_type = ? AND target_id = ?", string(tt), id).Scan(ctx, &entry)
				return entry, err
			},
			State: func(ctx context.Context, _ trash.TargetType, id int64) (trashtest.State, error) {
				var tk task
				err := db.NewSelect().Model(&tk).Where("id = ?", id).Scan(ctx)
				switch {
				case errors.Is(err, sql.ErrNoRows):
					return trashtest.Gone, nil
				case err != nil:
					return "", err
				case tk.Deleted:
					return trashtest.Trashed, nil
				}
				return trashtest.Live, nil
			},
		}
	})
}
