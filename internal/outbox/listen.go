package outbox

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Listening reports whether a Listen's LISTEN holds for w: a commit
// that writes w's deliveries wakes it, and a publisher need not.
func (w *Worker) Listening() bool { return w.listening.Load() > 0 }

// Listen wakes workers when deliveries of their kinds are committed: on
// PostgreSQL opened with bun's pgdriver it LISTENs on the outbox's
// channel, to which Enqueue NOTIFYs in the publishing transaction, and
// wakes the worker of the notification's kind. A lost listener connection
// is logged and established again (waiting up to 5 s between tries), and
// every worker is woken then, for what it missed. While its LISTEN holds,
// the workers' Run relies on it: after a claim that found deliveries it
// waits for the next wake (or Config.Poll) instead of looking again
// within milliseconds, as it does while no listener holds. It returns
// when ctx is done, at once if db is not PostgreSQL over pgdriver
// (workers then find deliveries by their poll, and in-process publishers
// wake them directly). db must reach PostgreSQL directly, not through a
// pooler in transaction mode, which keeps no LISTEN: a worker whose pool
// goes through one (Config.PlainStatements) is given a direct pool here,
// or no Listen at all. The listener's own pings go through db too.
// Opened by internal/database on several hosts, db's pgdriver connector
// dials the primary of the moment, so that a listener lost in a failover
// is established again on the new primary (its confirmation, a ping sent
// through db, comes back only on the server db writes to).
func Listen(ctx context.Context, db *bun.DB, log *slog.Logger, workers ...*Worker) {
	if _, ok := db.Driver().(pgdriver.Driver); !ok {
		return
	}
	byKind := make(map[string]*Worker, len(workers))
	for _, w := range workers {
		byKind[w.cfg.Kind] = w
	}
	wakeAll := func() {
		for _, w := range workers {
			w.Wake()
		}
	}
	pause := 100 * time.Millisecond
	lost := false
	for ctx.Err() == nil {
		ln := pgdriver.NewListener(db)
		err := ln.Listen(ctx, notifyChannel)
		if err == nil {
			err = confirm(ctx, db, ln, byKind)
		}
		if err == nil {
			if lost {
				log.InfoContext(ctx, "outbox: listener connection established again")
				lost = false
			}
			// While the LISTEN holds, a commit wakes its workers: their
			// Run makes no quick polls (see Run).
			for _, w := range workers {
				w.listening.Add(1)
			}
			wakeAll()
			pause = 100 * time.Millisecond
			err = receive(ctx, db, ln, byKind)
			for _, w := range workers {
				w.listening.Add(-1)
			}
		}
		_ = ln.Close()
		if ctx.Err() != nil {
			return
		}
		log.WarnContext(ctx, "outbox: listener connection lost; workers poll until it is back", slog.Any("error", err), slog.Duration("retry_in", pause))
		lost = true
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// pingPayload is the payload of the listener's own health check; no
// worker has that kind.
const pingPayload = "ping"

// confirm waits until the listener's LISTEN has taken effect: pgdriver
// writes it without waiting for PostgreSQL's answer, and a commit between
// the two would not notify. It sends a ping through the pool, again every
// confirmEvery while none has come back (a ping sent before the LISTEN
// took effect is not delivered), and returns when one arrives on the
// listener, waking the workers of any notification before it; it gives up
// after listenTimeout. Listen wakes every worker after it, for what was
// committed before.
func confirm(ctx context.Context, db *bun.DB, ln *pgdriver.Listener, byKind map[string]*Worker) error {
	deadline := time.Now().Add(listenTimeout)
	for time.Now().Before(deadline) {
		if err := pgdriver.Notify(ctx, db, notifyChannel, pingPayload); err != nil {
			return err
		}
		next := time.Now().Add(confirmEvery)
		for {
			wait := time.Until(next)
			if wait <= 0 {
				break // ReceiveTimeout would take 0 as no limit
			}
			_, kind, err := ln.ReceiveTimeout(ctx, wait)
			if err != nil {
				if isTimeout(err) {
					break
				}
				return err
			}
			if kind == pingPayload {
				return nil
			}
			if w := byKind[kind]; w != nil {
				w.Wake()
			}
		}
	}
	return errors.New("the listener's LISTEN was not confirmed in time")
}

// confirmEvery is how often confirm pings while no ping came back.
const confirmEvery = 50 * time.Millisecond

// receive wakes workers on notifications until the connection fails or ctx
// is done. A connection that is silent for listenTimeout gets a ping
// notification through the pool; one that stays silent for another
// listenTimeout after it (a peer gone without a reset) is lost.
func receive(ctx context.Context, db *bun.DB, ln *pgdriver.Listener, byKind map[string]*Worker) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	pinged := false
	for {
		_, kind, err := ln.ReceiveTimeout(ctx, listenTimeout)
		switch {
		case err == nil:
			pinged = false
			if w := byKind[kind]; w != nil {
				w.Wake()
			}
		case !isTimeout(err):
			return err
		case pinged:
			return errors.New("no answer to the listener's ping")
		default:
			if err := pgdriver.Notify(ctx, db, notifyChannel, pingPayload); err != nil {
				return err
			}
			pinged = true
		}
	}
}

// listenTimeout is how long the listener waits silently before it checks
// its connection.
const listenTimeout = 30 * time.Second

// isTimeout reports whether err is ReceiveTimeout's timeout, which only
// says that no notification came.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
