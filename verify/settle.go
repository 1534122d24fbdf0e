package verify

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// Bounds of the retries of an outcome the database could not take: Run
// retries it settleFirstRetry after it failed, then after twice the wait
// before, at most settleMaxRetry, for CodeTTL in all; each attempt has
// settleTimeout.
const (
	settleFirstRetry = 100 * time.Millisecond
	settleMaxRetry   = 5 * time.Second
	settleTimeout    = 5 * time.Second
)

// unsettled is the outcome of a send that the database could not take
// when the send ended: its codes go to state, until the code lifetime
// ends, after which recording it is worth nothing.
type unsettled struct {
	codes []pendingCode
	state string
	until time.Time
}

// settleQueue holds the outcomes waiting for the database, in memory:
// Run retries them, SendNotices tries them once. They go with the
// process; their codes then stay unusable, never wrongly usable.
type settleQueue struct {
	mu    sync.Mutex
	items []unsettled
	wake  chan struct{} // Run's settler: an outcome came; buffered, 1
}

func newSettleQueue() *settleQueue { return &settleQueue{wake: make(chan struct{}, 1)} }

// settle moves the pending codes to state: active for codes whose message
// went out, failed, with the limits their sends took given back, for codes
// whose message did not. If the database cannot take it now, the outcome
// waits in the Verifier for Run (or SendNotices) to record it, for up to
// CodeTTL (a code is worth nothing after that): a code delivered during an
// outage becomes usable once the database is back.
func (v *Verifier) settle(ctx context.Context, codes []pendingCode, state string) {
	if len(codes) == 0 {
		return
	}
	err := v.settleNow(ctx, codes, state)
	if err == nil {
		return
	}
	v.cfg.Logger.WarnContext(ctx, "verify: could not record the outcome of a send; Run records it once the database is back",
		slog.String("state", state), slog.Int("codes", len(codes)), slog.Any("error", err))
	now := v.cfg.Now()
	q := v.settles
	q.mu.Lock()
	// What Run never came to retry is dropped once worthless, so that the
	// queue holds no more than the sends of one code lifetime.
	q.items = slices.DeleteFunc(q.items, func(u unsettled) bool { return v.expired(ctx, u, now) })
	q.items = append(q.items, unsettled{codes: codes, state: state, until: now.Add(v.cfg.CodeTTL)})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// expired reports whether u's codes have outlived CodeTTL at now, and
// logs that their outcome is given up if so.
func (v *Verifier) expired(ctx context.Context, u unsettled, now time.Time) bool {
	if now.Before(u.until) {
		return false
	}
	v.cfg.Logger.ErrorContext(ctx, "verify: gave up recording the outcome of a send: its codes have expired",
		slog.String("state", u.state), slog.Int("codes", len(u.codes)))
	return true
}

// retrySettles tries once to record the outcomes waiting in the queue, in
// the order they came, until one fails (the database is still away) or
// ctx ends, and returns how many are left.
func (v *Verifier) retrySettles(ctx context.Context) int {
	q := v.settles
	q.mu.Lock()
	items := q.items
	q.items = nil
	q.mu.Unlock()
	now := v.cfg.Now()
	left := items[:0]
	for i, u := range items {
		if v.expired(ctx, u, now) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, settleTimeout)
		err := v.settleNow(actx, u.codes, u.state)
		cancel()
		if err != nil {
			left = append(left, items[i:]...)
			break
		}
		v.cfg.Logger.InfoContext(ctx, "verify: recorded the outcome of a send after a retry",
			slog.String("state", u.state), slog.Int("codes", len(u.codes)))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(left, q.items...) // before those that came meanwhile
	return len(q.items)
}

// runSettles is Run's settler: it retries the outcomes in the queue, from
// settleFirstRetry after one comes, with a doubling pause while the
// database stays away, until ctx is done. What is left then waits for a
// later Run or SendNotices.
func (v *Verifier) runSettles(ctx context.Context) {
	q := v.settles
	timer := time.NewTimer(settleFirstRetry)
	defer timer.Stop()
	wait := settleFirstRetry
	q.mu.Lock()
	armed := len(q.items) > 0
	q.mu.Unlock()
	if !armed {
		timer.Stop()
	}
	for {
		select {
		case <-ctx.Done():
			q.mu.Lock()
			n := len(q.items)
			q.mu.Unlock()
			if n > 0 {
				v.cfg.Logger.WarnContext(ctx, "verify: Run stopped with outcomes of sends not recorded: their codes stay unusable until a later Run or SendNotices records them",
					slog.Int("outcomes", n))
			}
			return
		case <-q.wake:
			if !armed {
				wait = settleFirstRetry
				timer.Reset(wait)
				armed = true
			}
		case <-timer.C:
			armed = false
			if v.retrySettles(ctx) > 0 {
				wait = min(2*wait, settleMaxRetry)
				timer.Reset(wait)
				armed = true
			}
		}
	}
}

// settleNow moves the pending codes to state, and with stateFailed gives
// their limits back. A code replaced meanwhile (its hash changed), or
// already settled by an earlier attempt whose commit was not acknowledged,
// is left alone and gives nothing back twice. Activation is one statement,
// atomic without a transaction of its own; a failure gives back the limits
// of exactly the codes it moved, in one transaction.
func (v *Verifier) settleNow(ctx context.Context, codes []pendingCode, state string) error {
	// The codes of one send are one user's, of one kind and bizKey: each
	// row is named by its address and its hash.
	first := codes[0]
	var match strings.Builder
	args := []any{state, statePending, first.user.TenantID, first.user.ID, first.kind, first.bizKey}
	for i, pc := range codes {
		if i > 0 {
			match.WriteString(" OR ")
		}
		match.WriteString("(address = ? AND code_hash = ?)")
		args = append(args, pc.address, pc.hash)
	}
	query := "UPDATE deskkit_verify_codes SET state = ? WHERE state = ? AND tenant_id = ? AND user_id = ? AND kind = ? AND biz_key = ? AND (" + match.String() + ")"
	if state != stateFailed {
		if _, err := v.db.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("verify: mark codes %s: %w", state, err)
		}
		return nil
	}
	return deskkit.RunInTx(ctx, v.db, nil, func(ctx context.Context, tx bun.Tx) error {
		var moved []string
		if err := tx.NewRaw(query+" RETURNING address", args...).Scan(ctx, &moved); err != nil {
			return fmt.Errorf("verify: mark codes %s: %w", state, err)
		}
		for _, pc := range codes {
			if !slices.Contains(moved, pc.address) {
				continue
			}
			for _, key := range pc.limits {
				if err := giveBack(ctx, tx, key, pc.takenAt); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
