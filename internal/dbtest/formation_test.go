package dbtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// The formation's multi-host URL reaches the primary whichever node is
// listed first, and a URL that lists only the secondary with
// target_session_attrs=read-write answers ErrNoPrimary, an outage.
func TestFormation(t *testing.T) {
	f := dbtest.StartFormation(t)
	p := f.Primary()
	if p < 0 {
		t.Fatal("no primary")
	}
	ctx := context.Background()
	db, err := database.Open(f.URL, database.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recovery bool
	if err := db.NewRaw("SELECT pg_is_in_recovery()").Scan(ctx, &recovery); err != nil || recovery {
		t.Fatalf("through %s: in recovery %v, %v; want the primary", f.URL, recovery, err)
	}
	secondary, err := database.Open(f.NodeURL(1-p)+"&target_session_attrs=read-write", database.Options{MaxOpenConns: 1, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer secondary.Close()
	err = secondary.PingContext(ctx)
	if !errors.Is(err, database.ErrNoPrimary) || !database.Unavailable(err) {
		t.Errorf("the secondary alone, read-write: %v; want ErrNoPrimary, Unavailable", err)
	}
	any, err := database.Open(f.NodeURL(1-p)+"&target_session_attrs=any", database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer any.Close()
	if err := any.NewRaw("SELECT pg_is_in_recovery()").Scan(ctx, &recovery); err != nil || !recovery {
		t.Errorf("the secondary alone, any: in recovery %v, %v; want the standby", recovery, err)
	}
}
