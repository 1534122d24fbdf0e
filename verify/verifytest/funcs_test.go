package verifytest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// A FuncDirectory scripts the directory's answers: here one that is down,
// whose error the Verifier passes on, and one that serves a user.
func TestFuncDirectory(t *testing.T) {
	ctx := context.Background()
	db := dbtest.OpenSQLite(t)
	if err := verify.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	down := errors.New("directory down")
	dir := &verifytest.FuncDirectory{
		UserFn: func(_ context.Context, tenantID, userID int64) (verify.User, error) {
			if userID == 2 {
				return verify.User{}, down
			}
			return verify.User{ID: userID, TenantID: tenantID, Username: "ann"}, nil
		},
		TenantFn: func(_ context.Context, tenantID int64) (verify.Tenant, error) {
			return verify.Tenant{ID: tenantID, Name: "acme"}, nil
		},
	}
	v, err := verify.New(db, dir, &verifytest.Sink{}, &verifytest.Sink{}, []byte("0123456789abcdef0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := v.Detail(ctx, deskkit.Principal{UserID: 1, TenantID: 7})
	if err != nil || d.ID != 1 || d.Username != "ann" {
		t.Errorf("Detail of user 1 = %+v, %v", d, err)
	}
	if _, err := v.Detail(ctx, deskkit.Principal{UserID: 2, TenantID: 7}); !errors.Is(err, down) {
		t.Errorf("Detail with the directory down: %v, want its error", err)
	}
}
