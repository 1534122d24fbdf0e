package channel

import (
	"testing"

	"github.com/deskkit/deskkit/internal/outbox"
)

// MaxAttemptsKept documents the bound the outbox keeps; it is a constant
// of its own, so that channel's godoc names no internal package.
func TestMaxAttemptsKeptIsTheOutboxBound(t *testing.T) {
	if MaxAttemptsKept != outbox.MaxAttemptsKept {
		t.Errorf("channel.MaxAttemptsKept = %d, the outbox keeps %d", MaxAttemptsKept, outbox.MaxAttemptsKept)
	}
}
