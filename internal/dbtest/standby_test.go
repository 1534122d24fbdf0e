package dbtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestReplicaStreams: a row written on the private primary is read on the
// standby once it has replayed; paused, the standby stops short of a new
// one.
func TestReplicaStreams(t *testing.T) {
	r := dbtest.StartReplica(t)
	ctx := context.Background()
	primary := database.OpenPostgres(r.PrimaryURL, database.Options{MaxOpenConns: 2})
	defer primary.Close()
	standby := database.OpenPostgres(r.StandbyURL, database.Options{MaxOpenConns: 2})
	defer standby.Close()
	if _, err := primary.ExecContext(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReplayed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := standby.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("standby: %d rows, %v", n, err)
	}
	if err := r.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReplayed(ctx, 200*time.Millisecond); err == nil {
		t.Fatal("a paused standby replayed the insert")
	}
	if err := r.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReplayed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := standby.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("standby after resume: %d rows, %v", n, err)
	}
}
