// Package readroute sends a service's reads that may be a moment stale to
// a PostgreSQL hot standby (a streaming read replica), and to the primary
// whenever the standby could answer with data older than the reader may
// see. It is what trash.Config.ReadDB and channel.Config.ReadDB run on.
//
// # The rules
//
// A Router holds the primary's pool, the standby's, and two things in
// memory, with no goroutine of its own:
//
//   - Per tenant, the primary's WAL position (pg_current_wal_lsn) taken
//     just after that tenant's last write committed (Wrote). A read of
//     the tenant goes to the standby only once it has replayed that
//     position (pg_last_wal_replay_lsn); else the read polls the
//     standby's position, cheaply and for at most Config.MaxWait, and
//     then goes to the primary. A client thus reads its own writes
//     through the server that made them. A write made inside a
//     transaction the service does not commit (trash.Add and
//     channel Publish in the host's transaction) marks its tenant
//     pending (Pending): for Config.PendingWindow, the tenant's reads
//     take the primary's position at read time and wait for that. An
//     entry is dropped once replayed (or its window is over); the map
//     holds at most Config.MaxTenants, past which the oldest positions
//     fold into one floor that every tenant's reads wait for.
//
//   - The standby's replay lag, for writes made through other server
//     processes: at most every Config.Refresh, a read asks the primary's
//     position and the standby's replayed one (two one-row statements,
//     never inside a transaction) and keeps the primary positions the
//     standby has not replayed, each with the time it was first seen.
//     The lag is how long ago the oldest of them was seen (0 when the
//     standby has replayed everything the primary had: an idle primary
//     has no lag, whatever pg_last_xact_replay_timestamp says). While
//     the lag is Config.MaxLag or more, or the standby does not answer, or
//     is not in recovery (pg_last_wal_replay_lsn is NULL), every read
//     goes to the primary. A position is taken as seen at the check
//     before the one that saw it (it was written after that one), so the
//     lag is never under the truth: reads leave a standby that stopped
//     replaying within MaxLag of the first write it lacks, and may leave
//     a healthy one for up to a Refresh after a long quiet spell.
//
// A read that fails on the standby with a lost connection, an
// unavailable server or a recovery conflict (SQLSTATE 40001) runs again
// on the primary, and the standby is taken as down until the next
// refresh: a failing standby costs no 503. The checks are bounded: a
// standby that hangs delays the read that refreshes by at most 2 s, and
// a read waiting for its tenant's write by at most MaxWait.
//
// The guarantee needs the primary's commits to wait for their WAL to be
// written (synchronous_commit = on, local or remote_*, PostgreSQL's
// default): with synchronous_commit = off a commit returns before its WAL
// is written, and the position taken after it may not cover it.
//
// Time comes from Config.Now, so the lag rule is tested without waiting;
// the bounded wait for a tenant's write polls with real timers, as it
// waits for a real server.
//
// No method holds a connection while it asks for another: each statement
// runs alone on a pool, outside any transaction; Wrote must be called
// after the write's transaction has ended.
package readroute

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/database"
)

// Defaults of Config.
const (
	DefaultMaxLag        = time.Second
	DefaultMaxWait       = 100 * time.Millisecond
	DefaultRefresh       = 100 * time.Millisecond
	DefaultPendingWindow = 10 * time.Second
	DefaultMaxTenants    = 10000
)

// Config tunes a Router; the zero value means the defaults.
type Config struct {
	Now           func() time.Time // time.Now if nil
	MaxLag        time.Duration    // DefaultMaxLag if 0: from it on, reads go to the primary
	MaxWait       time.Duration    // DefaultMaxWait if 0: how long a read waits for its tenant's write to replay
	Refresh       time.Duration    // DefaultRefresh if 0: how old the cached lag may be
	PendingWindow time.Duration    // DefaultPendingWindow if 0: see Pending
	MaxTenants    int              // DefaultMaxTenants if 0: positions kept per tenant
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxLag == 0 {
		c.MaxLag = DefaultMaxLag
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.PendingWindow == 0 {
		c.PendingWindow = DefaultPendingWindow
	}
	if c.MaxTenants == 0 {
		c.MaxTenants = DefaultMaxTenants
	}
	return c
}

// Router picks the pool of each read. One without a standby sends every
// read to the primary; Wrote and Pending do nothing on a nil *Router or
// one without a standby. It is safe for concurrent use.
type Router struct {
	primary, standby *bun.DB
	cfg              Config

	mu      sync.Mutex
	marks   map[int64]mark // per tenant: the position its reads wait for
	floor   uint64         // what marks folded into when the map was full
	replay  uint64         // the standby's replayed position, last seen
	up      bool           // the standby answered the last check, in recovery
	checked time.Time      // when the status was last refreshed (Config.Now)
	unseen  []sample       // primary positions the standby has not replayed, oldest first
	refresh sync.Mutex     // held by the one read that refreshes the status

	standbyReads, primaryReads atomic.Int64
}

// mark is a tenant's last write: its position, or pending until a time.
type mark struct {
	lsn     uint64
	pending time.Time // non-zero: position unknown, read the primary's until then
}

// sample is a primary position and when it was first seen.
type sample struct {
	lsn  uint64
	seen time.Time
}

// wroteTimeout bounds Wrote's one statement; checkTimeout the two of a
// refresh of the lag.
const (
	wroteTimeout = 2 * time.Second
	checkTimeout = 2 * time.Second
)

// maxSamples bounds Router.unseen; past it, newer positions are not kept,
// which can only make the lag look longer.
const maxSamples = 256

// New returns a router over primary and standby; standby nil sends every
// read to primary.
func New(primary, standby *bun.DB, cfg Config) (*Router, error) {
	if primary == nil {
		return nil, errors.New("readroute: the primary is required")
	}
	c := cfg.withDefaults()
	if c.MaxLag < 0 || c.MaxWait < 0 || c.Refresh < 0 || c.PendingWindow < 0 || c.MaxTenants < 0 {
		return nil, errors.New("readroute: bounds must not be negative")
	}
	return &Router{primary: primary, standby: standby, cfg: c, marks: map[int64]mark{}}, nil
}

// Stats counts the reads each pool served since New; a read that failed
// on the standby and ran again on the primary counts for both.
type Stats struct{ Standby, Primary int64 }

// Stats returns the counts of reads so far.
func (r *Router) Stats() Stats {
	if r == nil {
		return Stats{}
	}
	return Stats{Standby: r.standbyReads.Load(), Primary: r.primaryReads.Load()}
}

// Do runs the read fn for tenant on the pool the rules pick; if it fails on
// the standby in a way that says the standby, not the read, is at fault
// (StandbyFault), it runs again on the primary.
func (r *Router) Do(ctx context.Context, tenant int64, fn func(db bun.IDB) error) error {
	db, onStandby := r.pick(ctx, tenant)
	err := fn(db)
	if err == nil || !onStandby || ctx.Err() != nil || !StandbyFault(err) {
		return err
	}
	r.down()
	r.primaryReads.Add(1)
	return fn(r.primary)
}

// StandbyFault reports whether err from a read on the standby means that
// the standby could not answer (a lost connection, an unavailable or
// overloaded server, a statement cancelled by a conflict with recovery,
// SQLSTATE 40001), so that the primary should answer instead.
func StandbyFault(err error) bool {
	return database.ConnLost(err) || database.Unavailable(err) || database.SQLSTATE(err) == "40001"
}

// pick chooses the pool of a read of tenant, counting it.
func (r *Router) pick(ctx context.Context, tenant int64) (bun.IDB, bool) {
	if r.standby != nil && r.onStandby(ctx, tenant) {
		r.standbyReads.Add(1)
		return r.standby, true
	}
	r.primaryReads.Add(1)
	return r.primary, false
}

// onStandby applies the package's rules to a read of tenant.
func (r *Router) onStandby(ctx context.Context, tenant int64) bool {
	r.refreshStatus(ctx)
	now := r.cfg.Now()
	r.mu.Lock()
	if !r.up || r.lagLocked(now) >= r.cfg.MaxLag {
		r.mu.Unlock()
		return false
	}
	need := r.floor
	m, ok := r.marks[tenant]
	if ok && !m.pending.IsZero() && !now.Before(m.pending) {
		delete(r.marks, tenant) // the window is over
		ok = false
	}
	replay := r.replay
	r.mu.Unlock()
	if ok {
		if m.pending.IsZero() {
			need = max(need, m.lsn)
		} else {
			lsn, err := r.position(ctx, r.primary, "pg_current_wal_lsn()")
			if err != nil {
				return false
			}
			need = max(need, lsn)
		}
	}
	if need <= replay {
		r.forget(tenant, replay)
		return true
	}
	return r.await(ctx, tenant, need)
}

// await polls the standby until it has replayed need, for at most
// MaxWait, and reports whether it has.
func (r *Router) await(ctx context.Context, tenant int64, need uint64) bool {
	// The bound covers the polls themselves: a standby that hangs costs
	// the read MaxWait, not a dial timeout.
	ctx, cancel := context.WithTimeout(ctx, r.cfg.MaxWait)
	defer cancel()
	pause := time.Millisecond
	for {
		lsn, err := r.position(ctx, r.standby, "pg_last_wal_replay_lsn()")
		if err != nil || lsn == 0 {
			return false
		}
		r.mu.Lock()
		r.replay = max(r.replay, lsn)
		r.mu.Unlock()
		if lsn >= need {
			r.forget(tenant, lsn)
			return true
		}
		poll := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			poll.Stop()
			return false
		case <-poll.C:
		}
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// forget drops tenant's mark if replay covers it.
func (r *Router) forget(tenant int64, replay uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.marks[tenant]; ok && m.pending.IsZero() && m.lsn <= replay {
		delete(r.marks, tenant)
	}
}

// Wrote records that a write of tenant has committed: its reads wait for
// the primary's position now. Call it after the transaction has ended.
// If the primary cannot say, the tenant is marked pending (see Pending).
func (r *Router) Wrote(ctx context.Context, tenant int64) {
	if r == nil || r.standby == nil {
		return
	}
	// The write has committed: the position is wanted even if the
	// request has just been cancelled, but not for longer than a short
	// bound (else the tenant is marked pending).
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wroteTimeout)
	defer cancel()
	lsn, err := r.position(pctx, r.primary, "pg_current_wal_lsn()")
	if err != nil || lsn == 0 {
		r.Pending(tenant)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.marks[tenant]
	if !m.pending.IsZero() {
		return // a pending window covers this write too
	}
	m.lsn = max(m.lsn, lsn)
	r.putLocked(tenant, m)
}

// Pending records a write of tenant in a transaction the caller does not
// commit itself: for PendingWindow, the tenant's reads wait for the
// primary's position at the time of the read, which covers the write once
// it has committed.
func (r *Router) Pending(tenant int64) {
	if r == nil || r.standby == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.putLocked(tenant, mark{pending: r.cfg.Now().Add(r.cfg.PendingWindow)})
}

// putLocked stores tenant's mark, keeping the map within MaxTenants: the
// replayed and expired marks go first, then every known position folds
// into the floor.
func (r *Router) putLocked(tenant int64, m mark) {
	if _, ok := r.marks[tenant]; !ok && len(r.marks) >= r.cfg.MaxTenants {
		now := r.cfg.Now()
		for t, o := range r.marks {
			if (o.pending.IsZero() && o.lsn <= r.replay) || (!o.pending.IsZero() && !now.Before(o.pending)) {
				delete(r.marks, t)
			}
		}
		if len(r.marks) >= r.cfg.MaxTenants {
			for t, o := range r.marks {
				if o.pending.IsZero() {
					r.floor = max(r.floor, o.lsn)
					delete(r.marks, t)
				}
			}
		}
		if len(r.marks) >= r.cfg.MaxTenants {
			// Every mark is pending: the oldest windows cannot fold into a
			// position, so the new mark replaces the map.
			clear(r.marks)
			r.floor = max(r.floor, r.replay)
			m = mark{pending: now.Add(r.cfg.PendingWindow)}
		}
	}
	r.marks[tenant] = m
}

// refreshStatus asks the primary's position and the standby's replayed
// one when the last answer is older than Refresh. One read refreshes;
// the others meanwhile go by the last answer.
func (r *Router) refreshStatus(ctx context.Context) {
	now := r.cfg.Now()
	r.mu.Lock()
	fresh := !r.checked.IsZero() && now.Sub(r.checked) < r.cfg.Refresh
	r.mu.Unlock()
	if fresh || !r.refresh.TryLock() {
		return
	}
	defer r.refresh.Unlock()
	// Bounded, so that a standby that hangs delays one read by at most
	// that, once per Refresh, and is then taken as down.
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	primary, perr := r.position(ctx, r.primary, "pg_current_wal_lsn()")
	replay, serr := r.position(ctx, r.standby, "pg_last_wal_replay_lsn()")
	r.mu.Lock()
	defer r.mu.Unlock()
	// A position first seen now was written after the last check: taken
	// as seen then, the lag is never under the truth, and every read goes
	// to the primary within MaxLag of a write the standby does not replay.
	since := r.checked
	if since.IsZero() || !r.up {
		since = now
	}
	r.checked = now
	r.up = serr == nil && replay != 0
	if !r.up {
		return
	}
	r.replay = max(r.replay, replay)
	if perr == nil && primary > r.replay && len(r.unseen) < maxSamples &&
		(len(r.unseen) == 0 || primary > r.unseen[len(r.unseen)-1].lsn) {
		r.unseen = append(r.unseen, sample{lsn: primary, seen: since})
	}
	i := 0
	for i < len(r.unseen) && r.unseen[i].lsn <= r.replay {
		i++
	}
	r.unseen = append(r.unseen[:0], r.unseen[i:]...)
}

// lagLocked is how long ago the oldest primary position the standby has
// not replayed was first seen; 0 if it has replayed them all.
func (r *Router) lagLocked(now time.Time) time.Duration {
	if len(r.unseen) == 0 || r.unseen[0].lsn <= r.replay {
		return 0
	}
	return now.Sub(r.unseen[0].seen)
}

// down takes the standby as down until the next refresh.
func (r *Router) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up = false
	r.checked = r.cfg.Now()
}

// position runs SELECT fn on db's pool alone (not through bun's hooks)
// and parses the pg_lsn it returns; 0 for NULL.
func (r *Router) position(ctx context.Context, db *bun.DB, fn string) (uint64, error) {
	var s sql.NullString
	if err := db.DB.QueryRowContext(ctx, "SELECT "+fn+"::text").Scan(&s); err != nil {
		return 0, err
	}
	if !s.Valid {
		return 0, nil
	}
	return ParseLSN(s.String)
}

// ParseLSN parses PostgreSQL's text form of a pg_lsn ("16/B374D848").
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("readroute: %q is not a WAL position", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("readroute: %q is not a WAL position", s)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("readroute: %q is not a WAL position", s)
	}
	return h<<32 | l, nil
}
