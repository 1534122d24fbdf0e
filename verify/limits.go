package verify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// limit is one rate limit: at most max events per window for one key.
// Windows are fixed and open with the first event after the last one
// closed: "10 an hour" means at most 10 within the hour that starts at the
// first of them.
type limit struct {
	key    string
	max    int
	window time.Duration
	msg    string // for the client: "at most 10 codes an hour to this address"
}

// takeLimits counts one event against each limit, in key order (the lock
// order of limit rows), and refuses with a *deskkit.RateLimitError as soon
// as one is exhausted. Each limit is one atomic upsert on its row, so
// parallel requests, in this process or another, cannot both take the last
// unit. Call it inside a transaction: a refusal should roll back the
// limits taken before it.
func (v *Verifier) takeLimits(ctx context.Context, tx bun.IDB, limits []limit) error {
	limits = slices.Clone(limits)
	slices.SortFunc(limits, func(a, b limit) int { return cmpString(a.key, b.key) })
	now := v.now()
	for _, l := range limits {
		if l.max <= 0 {
			continue
		}
		var hits []int
		err := tx.NewRaw(`INSERT INTO deskkit_verify_limits AS l (limit_key, window_start_ms, window_end_ms, hits)
VALUES (?, ?, ?, 1)
ON CONFLICT (limit_key) DO UPDATE SET
    window_start_ms = CASE WHEN l.window_end_ms <= ? THEN excluded.window_start_ms ELSE l.window_start_ms END,
    window_end_ms   = CASE WHEN l.window_end_ms <= ? THEN excluded.window_end_ms ELSE l.window_end_ms END,
    hits            = CASE WHEN l.window_end_ms <= ? THEN 1 ELSE l.hits + 1 END
WHERE l.window_end_ms <= ? OR l.hits < ?
RETURNING hits`, l.key, now, now+l.window.Milliseconds(), now, now, now, now, l.max).Scan(ctx, &hits)
		if err != nil {
			return fmt.Errorf("verify: take limit: %w", err)
		}
		if len(hits) == 1 {
			continue
		}
		var end int64
		err = tx.NewSelect().Table("deskkit_verify_limits").Column("window_end_ms").
			Where("limit_key = ?", l.key).Scan(ctx, &end)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("verify: read limit: %w", err)
		}
		return &deskkit.RateLimitError{Message: l.msg, RetryAfter: time.Duration(max(end-now, 1000)) * time.Millisecond}
	}
	return nil
}

// giveBack returns one event to the limit of key, taken in the same
// transaction.
func giveBack(ctx context.Context, tx bun.IDB, key string) error {
	_, err := tx.NewUpdate().Table("deskkit_verify_limits").
		Set("hits = hits - 1").
		Where("limit_key = ? AND hits > 0", key).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("verify: give back limit: %w", err)
	}
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The limits of a send of kind k to address by user u; the user's own
// limit comes last.
func (v *Verifier) sendLimits(u User, k Kind, b BizKey, address string) []limit {
	return []limit{
		{
			key: fmt.Sprintf("send-interval:%d:%s:%s:%s", u.TenantID, k, b, address),
			max: 1, window: v.cfg.ResendInterval,
			msg: fmt.Sprintf("a code for %s was sent to this address less than %s ago", b, v.cfg.ResendInterval),
		},
		{
			key: fmt.Sprintf("send-address:%d:%s:%s", u.TenantID, k, address),
			max: v.cfg.SendsPerHour, window: time.Hour,
			msg: fmt.Sprintf("at most %d codes an hour may go to one address", v.cfg.SendsPerHour),
		},
		{
			key: userSendKey(u),
			max: v.cfg.SendsPerDay, window: 24 * time.Hour,
			msg: fmt.Sprintf("at most %d codes a day may be requested", v.cfg.SendsPerDay),
		},
	}
}

func userSendKey(u User) string { return fmt.Sprintf("send-user:%d:%d", u.TenantID, u.ID) }

// failureLimit is the limit of wrong checks of user u, across codes.
func (v *Verifier) failureLimit(u User) limit {
	return limit{
		key: fmt.Sprintf("fail-user:%d:%d", u.TenantID, u.ID),
		max: v.cfg.FailuresPerDay, window: 24 * time.Hour,
		msg: fmt.Sprintf("at most %d wrong codes a day", v.cfg.FailuresPerDay),
	}
}
