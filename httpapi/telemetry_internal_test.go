package httpapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/telemetry"
)

// The services' metrics name a result by the key httpapi answers for the
// error: for every class, telemetry.ResultOf and the error table agree.
func TestResultKeysAreErrorKeys(t *testing.T) {
	for _, err := range []error{
		deskkit.Invalid("name", "is required"),
		deskkit.ErrUnauthenticated,
		deskkit.ErrForbidden,
		fmt.Errorf("trash: %w", deskkit.ErrNotFound),
		deskkit.ErrConflict,
		&deskkit.RateLimitError{Message: deskkit.Plain("slow down")},
		deskkit.ErrUnavailable,
		errors.New("the disk is on fire"),
	} {
		want := KeyInternal
		for _, row := range errorTable {
			if row.match(err) {
				want = row.key
				break
			}
		}
		if got := telemetry.ResultOf(err); got != want {
			t.Errorf("%v: result %q, error key %q", err, got, want)
		}
	}
	if telemetry.ResultOf(nil) != "ok" {
		t.Error("nil is not ok")
	}
}
