package main

import (
	"context"
	"fmt"
	"time"
)

// steadyResult is deskkit's cost per delivery while events come one per
// transaction at a steady rate (issue 29): the worker then claims few rows
// at a time, woken by each commit, where a drain claims full batches.
type steadyResult struct {
	Rate     int     `json:"rate"`     // events/s asked for
	Achieved float64 `json:"achieved"` // events/s the publishers committed
	// Cost is the replica's and PostgreSQL's, from when publishing starts
	// until every delivery arrived and none is PENDING; PostgreSQL's
	// without the backends of the bench's publishers (PublisherPGCPU), as
	// a drain's cost has no publishing in it.
	Cost           cost          `json:"cost"`
	PublisherPGCPU time.Duration `json:"publisher_pg_cpu"`
}

// steadyOverDrainBackends is steadyOverDrain without the server's own
// processes on either side: on a server shared with other work they serve
// its commits too, and count over the steady window's many seconds.
func steadyOverDrainBackends(s *steadyResult, d *drainResult) (float64, bool) {
	if s == nil || d == nil || d.Cost.backendsCPUms() == 0 {
		return 0, false
	}
	return s.Cost.backendsCPUms() / d.Cost.backendsCPUms(), true
}

// steadyOverDrain is the goal's ratio: the steady rate's CPU (replica and
// PostgreSQL) per delivery over the drain's.
func steadyOverDrain(s *steadyResult, d *drainResult) (float64, bool) {
	if s == nil || d == nil || d.Cost.totalCPUms() == 0 {
		return 0, false
	}
	return s.Cost.totalCPUms() / d.Cost.totalCPUms(), true
}

// steady publishes as the latency scenario does, at rate events a second
// for the steady duration, to one warmed-up replica, and measures what the
// deliveries cost, as a drain's are measured.
func (b *bench) steady(ctx context.Context, rate int) (*steadyResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, drop, err := b.newDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	p, err := b.startPaced(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer p.close(b.stopGrace())
	// The publishers' backends are told apart by pid: the host's pool
	// opens them all now and keeps them.
	publishers, err := p.host.backendPIDs(ctx, latencyPublishers)
	if err != nil {
		return nil, err
	}
	db := databaseName(dsn)
	m, err := meterFrom(ctx, b.admin, func() map[int]time.Duration {
		_, rest := partitionPIDs(postgresCPU(db), publishers)
		return rest
	}, serverCPU, p.set)
	if err != nil {
		return nil, err
	}
	pub0, _ := partitionPIDs(postgresCPU(db), publishers)
	evs, achieved, err := publishPaced(ctx, rate, b.opts.steadyDuration, p.publish)
	if err != nil {
		return nil, err
	}
	if err := b.waitArrived(ctx, evs); err != nil {
		return nil, err
	}
	if l := b.latencyOf(evs); l.Missing > 0 {
		return nil, fmt.Errorf("%d of %d deliveries never arrived", l.Missing, len(evs))
	}
	if err := p.host.waitNoPending(ctx, p.chans); err != nil {
		return nil, fmt.Errorf("wait for the outcomes: %w", err)
	}
	c, err := m.finish(ctx, len(evs))
	if err != nil {
		return nil, err
	}
	pub1, _ := partitionPIDs(postgresCPU(db), publishers)
	return &steadyResult{Rate: rate, Achieved: achieved, Cost: c, PublisherPGCPU: postgresCPUDelta(pub0, pub1)}, nil
}
