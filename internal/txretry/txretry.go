// Package txretry runs a transaction again when PostgreSQL rolled it back
// for a deadlock or a serialization failure: the loop behind
// deskkit.RunInTx, which the services' own transactions go through too.
package txretry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Run calls attempt until it succeeds, fails for another reason, or has
// run max times, pausing a few milliseconds (growing and
// jittered, so that the two losers of a deadlock do not collide again in
// step) between attempts. It returns attempt's last error.
func Run(ctx context.Context, max int, attempt func() error) error {
	var err error
	for n := 1; ; n++ {
		err = attempt()
		if err == nil || !Retryable(err) || n >= max {
			return err
		}
		pause := time.Duration(n) * time.Duration(1+rand.IntN(5)) * time.Millisecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// Retryable reports whether err is a deadlock (SQLSTATE 40P01) or a
// serialization failure (40001): the transaction was rolled back whole and
// may run again.
func Retryable(err error) bool {
	switch SQLState(err) {
	case "40P01", "40001":
		return true
	}
	return false
}

// SQLState is deskkit.SQLState.
func SQLState(err error) string {
	var withState interface{ SQLState() string }
	if errors.As(err, &withState) {
		return withState.SQLState()
	}
	var withFields interface{ Field(byte) string }
	if errors.As(err, &withFields) {
		return withFields.Field('C')
	}
	return ""
}
