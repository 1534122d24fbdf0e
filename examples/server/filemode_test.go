//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/deskkit/deskkit/internal/database"
)

// TestSQLiteFileModes is fault 12: the SQLite database and its -wal and -shm
// files are readable and writable by their owner only. The umask is cleared
// for the test, so the modes are the ones the code asks for, not ones the
// environment's umask happened to narrow.
func TestSQLiteFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	dir := t.TempDir()
	path := filepath.Join(dir, "deskkit.db")
	ctx := context.Background()
	db, err := openDBWith(ctx, "sqlite:"+path, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := setup(t, db)
	for i := range 5 {
		f.delete("task", f.createTask(1, nil, fmt.Sprintf("task %d", i)))
	}
	f.ok(f.admin, http.MethodDelete, "/api/v1/task/trash?projectId=1", nil, nil)

	for _, name := range []string{"deskkit.db", "deskkit.db-wal", "deskkit.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", name, mode)
		}
	}
}
