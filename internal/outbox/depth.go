package outbox

import "time"

// A claim costs a round trip and a statement whatever its size (1.8 ms of
// a drain's loop for 6.6 deliveries, measured in the bench's usual layout),
// so while there is a backlog Run's claims grow: the deliveries it lets
// wait for a slot (its depth) start at min(BatchSize, Concurrency), as
// many as its slots, and double after each claim that came back full, up
// to BatchSize (4 x Concurrency by default) while claims take at least
// the depth; a claim that came back less than half full with no cap in
// its way (the due deliveries ran out), or a delivery that waited longer
// than slowWait for its slot, brings the depth back. At low rates claims take what woke them,
// never full, and the depth stays where it starts. A tenant's claimed
// deliveries, waiting ones included, still count toward its slots
// (TenantSlots), so a deeper queue is never one tenant's. A delivery that
// waited so long that its lease could end before its outcome is recorded
// (it has less than half its lease left) is given back instead of
// attempted, whatever the depth.

// follow moves the depth after a claim that asked for asked deliveries
// (the worker's room: its free slots and the depth) and took n.
func (w *Worker) follow(n, asked int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	base := w.baseDepth()
	switch {
	case w.slow || (2*n < asked && !w.capped.Load() && !w.full.Load()):
		w.depth = base
	case n >= max(w.depth, base):
		w.depth = min(2*max(w.depth, base), w.cfg.BatchSize)
	}
	w.slow = false
}

// baseDepth is the depth Run starts at.
func (w *Worker) baseDepth() int { return min(w.cfg.BatchSize, w.cfg.Concurrency) }

// ahead is how many claimed deliveries Run lets wait for a slot now.
func (w *Worker) ahead() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.depth, w.baseDepth())
}

// waited reports whether d, leaving the queue for its slot, waited so
// long that it must not be attempted (less than half its lease left); it
// marks the worker slow when d waited longer than slowWait.
func (w *Worker) waited(d Delivery) bool {
	left := d.leaseEnd.Sub(w.cfg.Now())
	if w.cfg.Lease-left > w.slowWait() {
		w.mu.Lock()
		w.slow = true
		w.mu.Unlock()
	}
	return left < w.cfg.Lease/2
}

// slowWait is how long a delivery may wait for its slot before the depth
// comes back: an eighth of the lease (10 s with the channel registry's
// default timeout).
func (w *Worker) slowWait() time.Duration { return w.cfg.Lease / 8 }
