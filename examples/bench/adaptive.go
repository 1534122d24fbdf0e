package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/trash"
)

// The scenarios of issue 29, section 2: how deskkit treats an endpoint
// that turns slow, one that throttles with 429, and a channel with a rate
// limit. Each runs on one database of its own, as the other scenarios do;
// the receiver answers the channel under test through a behaviour (one at
// a time), and measures what the endpoint sees.

// The receiver's paths of the adaptive scenarios' channels under test.
const (
	slowPath     = "/slow/"
	throttlePath = "/throttle/"
	ratePath     = "/rate/"
)

// adaptiveOptions are the flags of the slow, throttled and ratelimit
// scenarios.
type adaptiveOptions struct {
	// slow: tenant A's one webhook gets slowEvents deliveries; tenant B's
	// slowBChannels webhooks slowBEvents each. A's endpoint answers after
	// slowDelay from when half of A's deliveries arrived, for slowDuration.
	slowEvents, slowBChannels, slowBEvents int
	slowDelay, slowDuration                time.Duration
	// slowFloor is the per-channel in-flight floor the slow endpoint's
	// in-flight count should fall to; slowWorkers the replica's workers
	// (the reference server's 16, so that a tenant's share, the in-flight
	// limit's ceiling, is above the floor).
	slowFloor, slowWorkers int

	// throttled: one webhook with throttleEvents deliveries, answered 429
	// with Retry-After: 1 for throttleDuration from its first arrival.
	throttleEvents   int
	throttleDuration time.Duration
	// recoverWait bounds the wait for the throttled channel's backlog
	// after the endpoint recovered.
	recoverWait time.Duration

	// ratelimit: one webhook with rateEvents deliveries and a rate limit
	// of rateLimit messages/s, drained by rateReplicas for rateDuration.
	rateEvents   int
	rateLimit    float64
	rateDuration time.Duration
	rateReplicas int
}

// adaptiveFlags defines the adaptive scenarios' flags on fs.
func adaptiveFlags(fs *flag.FlagSet, a *adaptiveOptions) {
	fs.IntVar(&a.slowEvents, "slow-events", 6000, "slow: tenant A's deliveries to its one webhook")
	fs.IntVar(&a.slowBChannels, "slow-b-channels", 4, "slow: tenant B's webhooks")
	fs.IntVar(&a.slowBEvents, "slow-b-events", 16000, "slow: tenant B's events, each to every one of its webhooks (enough to outlast A's slow time)")
	fs.DurationVar(&a.slowDelay, "slow-delay", 200*time.Millisecond, "slow: how long A's endpoint takes to answer while slow")
	fs.DurationVar(&a.slowDuration, "slow-duration", 10*time.Second, "slow: how long A's endpoint stays slow")
	fs.IntVar(&a.slowFloor, "slow-floor", channel.DefaultMaxInFlightPerChannel, "slow: the per-channel in-flight floor (the reference server's)")
	fs.IntVar(&a.slowWorkers, "slow-workers", channel.DefaultConcurrency, "slow: the replica's workers (channel.Config.Concurrency; the reference server's default, so that half of them, a channel's in-flight ceiling, is above the floor)")
	fs.IntVar(&a.throttleEvents, "throttle-events", 2000, "throttled: the channel's deliveries")
	fs.DurationVar(&a.throttleDuration, "throttle-duration", 10*time.Second, "throttled: how long the endpoint answers 429 with Retry-After: 1")
	fs.DurationVar(&a.recoverWait, "recover-wait", 6*time.Minute, "throttled: how long to wait, after the endpoint recovered, for the rest of the backlog")
	fs.IntVar(&a.rateEvents, "rate-events", 7000, "ratelimit: the channel's deliveries (more than -rate-limit x -rate-duration)")
	fs.Float64Var(&a.rateLimit, "rate-limit", 100, "ratelimit: the channel's rate limit, messages/s")
	fs.DurationVar(&a.rateDuration, "rate-duration", 60*time.Second, "ratelimit: how long to measure from the first arrival")
	fs.IntVar(&a.rateReplicas, "rate-replicas", 2, "ratelimit: replica processes")
}

// adaptiveQuick are -quick's sizes of the adaptive scenarios, by flag.
func adaptiveQuick(a *adaptiveOptions) map[string]func() {
	return map[string]func(){
		"slow-events":       func() { a.slowEvents = 1000 },
		"slow-b-events":     func() { a.slowBEvents = 1500 },
		"slow-duration":     func() { a.slowDuration = 3 * time.Second },
		"throttle-events":   func() { a.throttleEvents = 500 },
		"throttle-duration": func() { a.throttleDuration = 3 * time.Second },
		"recover-wait":      func() { a.recoverWait = time.Minute },
		"rate-events":       func() { a.rateEvents = 1500 },
		"rate-duration":     func() { a.rateDuration = 10 * time.Second },
	}
}

// check validates the adaptive scenarios' flags.
func (a adaptiveOptions) check() error {
	for _, c := range []struct {
		name   string
		n, max int
	}{
		{"slow-events", a.slowEvents, 1_000_000}, {"slow-b-channels", a.slowBChannels, channel.Webhook.Quota()},
		{"slow-b-events", a.slowBEvents, 1_000_000}, {"slow-floor", a.slowFloor, 1000},
		{"throttle-events", a.throttleEvents, 1_000_000}, {"rate-events", a.rateEvents, 1_000_000},
		{"rate-replicas", a.rateReplicas, 8}, {"slow-workers", a.slowWorkers, channel.MaxConcurrency},
	} {
		if c.n < 1 || c.n > c.max {
			return fmt.Errorf("-%s must be between 1 and %d", c.name, c.max)
		}
	}
	if a.slowDelay <= 0 || a.slowDuration <= 0 || a.throttleDuration <= 0 || a.recoverWait <= 0 || a.rateDuration <= 0 {
		return fmt.Errorf("-slow-delay, -slow-duration, -throttle-duration, -recover-wait and -rate-duration must be positive")
	}
	if a.rateLimit <= 0 || a.rateLimit > channel.MaxRateLimit {
		return fmt.Errorf("-rate-limit must be positive and at most %d", int(channel.MaxRateLimit))
	}
	if need := a.rateLimit * (a.rateDuration.Seconds() + 1); float64(a.rateEvents) < need {
		return fmt.Errorf("-rate-events must be at least -rate-limit x (-rate-duration + 1s), %.0f, so that the backlog outlasts the measurement", need)
	}
	return nil
}

// describe records the adaptive scenarios' settings beside the numbers.
func (a adaptiveOptions) describe(m map[string]any) {
	m["slow"] = fmt.Sprintf("A: 1 webhook x %d events; B: %d webhooks x %d events; A slow (%s per answer) for %s from half of A's deliveries; floor %d; %d workers",
		a.slowEvents, a.slowBChannels, a.slowBEvents, a.slowDelay, a.slowDuration, a.slowFloor, a.slowWorkers)
	m["throttled"] = fmt.Sprintf("1 webhook x %d events; 429 with Retry-After: 1 for %s from the first arrival; recover wait %s",
		a.throttleEvents, a.throttleDuration, a.recoverWait)
	m["ratelimit"] = fmt.Sprintf("1 webhook x %d events at %.0f/s, %d replicas, measured for %s",
		a.rateEvents, a.rateLimit, a.rateReplicas, a.rateDuration)
}

// adaptiveSteps runs the adaptive scenarios of -scenarios, as steps of a
// repetition.
func (b *bench) adaptiveSteps(ctx context.Context, r *repResult, step func(string, func() (string, error)) error) error {
	run := b.opts.scenarios
	a := b.opts.adaptive
	if run["slow"] {
		err := step(fmt.Sprintf("A's endpoint slow (%s per answer) for %s", a.slowDelay, a.slowDuration), func() (string, error) {
			s, err := b.slow(ctx)
			if err != nil {
				return "", err
			}
			r.Slow = s
			return fmt.Sprintf("in flight at most %d while slow, B during/before %.2f", s.MaxInFlightSlow, s.bRatio()), nil
		})
		if err != nil {
			return err
		}
	}
	if run["throttled"] {
		err := step(fmt.Sprintf("endpoint answers 429 for %s", a.throttleDuration), func() (string, error) {
			t, err := b.throttled(ctx)
			if err != nil {
				return "", err
			}
			r.Throttled = t
			return fmt.Sprintf("%d of %d attempts within 1 s of a 429", t.InWindow, t.Attempts), nil
		})
		if err != nil {
			return err
		}
	}
	if run["ratelimit"] {
		err := step(fmt.Sprintf("rate limit %.0f/s, %d replicas, %s", a.rateLimit, a.rateReplicas, a.rateDuration), func() (string, error) {
			l, err := b.rateLimited(ctx)
			if err != nil {
				return "", err
			}
			r.RateLimit = l
			return fmt.Sprintf("mean %.1f/s, most in a second %d", l.Mean, l.MaxWindow), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// behaviour answers the receiver's requests under prefix, after the
// receiver recorded their arrival: the endpoint under test of an adaptive
// scenario.
type behaviour struct {
	prefix string
	serve  func(w http.ResponseWriter, req *http.Request, arrived time.Time)
}

// use makes the receiver answer through bh until the returned function is
// called.
func (r *receiver) use(bh *behaviour) func() {
	r.behaviour.Store(bh)
	return func() { r.behaviour.Store(nil) }
}

// addWebhook adds one webhook of tenant at the receiver's path under
// prefix, subscribed to task.trashed, with in's other fields (a rate
// limit) as given.
func (h *deskkitHost) addWebhook(ctx context.Context, base, prefix string, tenant int64, in channel.Input) (chanRef, error) {
	path := channelPath(prefix, tenant, 0)
	in.Type, in.Name, in.Address, in.Events = string(channel.Webhook), "bench under test", base+path, []string{trash.EventTaskTrashed}
	added, err := h.reg.Add(ctx, admin(tenant), in)
	if err != nil {
		return chanRef{}, fmt.Errorf("add channel %s: %w", path, err)
	}
	return chanRef{tenant: tenant, id: added.ID, path: path}, nil
}

// scenarioDB is a scenario's fresh database with a deskkit host on it;
// done closes the host and drops the database.
func (b *bench) scenarioDB(ctx context.Context) (dsn string, host *deskkitHost, done func(), err error) {
	dsn, drop, err := b.newDatabase(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	host, err = newDeskkitHost(ctx, dsn, b.secret, publisherConns)
	if err != nil {
		drop()
		return "", nil, nil, err
	}
	return dsn, host, func() { host.close(); drop() }, nil
}

// --- slow ---------------------------------------------------------------

// slowResult is the slow scenario: what A's endpoint saw, B's throughput
// around A's slow time, and A's drain after it.
type slowResult struct {
	ADeliveries int `json:"a_deliveries"`
	// MaxInFlight is the most requests A's endpoint held at once over the
	// scenario; MaxInFlightSlow while it was slow.
	MaxInFlight     int `json:"max_in_flight"`
	MaxInFlightSlow int `json:"max_in_flight_slow"`
	// FirstAtFloor is the time from the slowdown until A's endpoint first
	// held at most the floor (0: it did at the slowdown); SettledAtFloor
	// until it held at most the floor for the rest of the slow time; both
	// -1 if it never got down to the floor while slow.
	FirstAtFloor   time.Duration `json:"first_at_floor_ns"`
	SettledAtFloor time.Duration `json:"settled_at_floor_ns"`
	// B's deliveries/s from its first arrival to the slowdown, and over
	// the slow time (NaN in the tables if B's backlog ran out before the
	// recovery: then the scenario needs more of B's events).
	BBefore float64 `json:"b_before_per_s"`
	BDuring float64 `json:"b_during_per_s"`
	BRanOut bool    `json:"b_ran_out"`
	// ADrainAfter is the time from the recovery until the last of A's
	// deliveries arrived (0 and ADrainedWhileSlow if none was left).
	ADrainAfter       time.Duration `json:"a_drain_after_ns"`
	ADrainedWhileSlow bool          `json:"a_drained_while_slow"`
	// SlowAt and RecoveredAt are from the replicas' start; Samples every
	// sampleInterval from it: the most A's endpoint held at once in the
	// interval, and B's deliveries arrived so far.
	SlowAt      time.Duration `json:"slow_at_ns"`
	RecoveredAt time.Duration `json:"recovered_at_ns"`
	Samples     []slowSample  `json:"samples"`
}

// bRatio is B's throughput while A was slow over before it.
func (s *slowResult) bRatio() float64 {
	if s.BRanOut || s.BBefore == 0 {
		return math.NaN()
	}
	return s.BDuring / s.BBefore
}

// slowSample is one sample of the slow scenario.
type slowSample struct {
	At       time.Duration `json:"at_ns"`     // from the replicas' start
	InFlight int           `json:"in_flight"` // the most A's endpoint held at once since the previous sample
	BArrived int64         `json:"b_arrived"` // B's deliveries arrived at least once so far
}

// sampleInterval is how often the slow scenario samples.
const sampleInterval = 100 * time.Millisecond

// inFlightChange is A's endpoint's in-flight count from at on.
type inFlightChange struct {
	at time.Time
	n  int
}

// slowEndpoint is A's endpoint in the slow scenario: fast until half of
// its deliveries arrived, then slow for a while, then fast again.
type slowEndpoint struct {
	total    int
	delay    time.Duration
	duration time.Duration

	mu      sync.Mutex
	seen    map[string]bool
	n       int // in flight now
	peak    int // the most in flight since the last sample
	changes []inFlightChange
	slowAt  time.Time // zero until half arrived
	lastAt  time.Time // when the last delivery first arrived
}

func newSlowEndpoint(total int, delay, duration time.Duration) *slowEndpoint {
	return &slowEndpoint{total: total, delay: delay, duration: duration, seen: map[string]bool{}}
}

func (e *slowEndpoint) serve(w http.ResponseWriter, req *http.Request, arrived time.Time) {
	e.mu.Lock()
	if id := req.Header.Get("webhook-id"); !e.seen[id] {
		e.seen[id] = true
		if len(e.seen) == (e.total+1)/2 {
			e.slowAt = arrived
		}
		if len(e.seen) == e.total {
			e.lastAt = arrived
		}
	}
	slow := !e.slowAt.IsZero() && !arrived.Before(e.slowAt) && arrived.Before(e.slowAt.Add(e.duration))
	e.enter(1)
	e.mu.Unlock()
	if slow {
		t := time.NewTimer(e.delay) // the endpoint's answer time
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
		}
	}
	w.WriteHeader(http.StatusNoContent)
	e.mu.Lock()
	e.enter(-1)
	e.mu.Unlock()
}

// enter changes the in-flight count by d, now; e.mu is held, so that the
// changes are in time order.
func (e *slowEndpoint) enter(d int) {
	e.n += d
	e.peak = max(e.peak, e.n)
	e.changes = append(e.changes, inFlightChange{time.Now(), e.n})
}

// sample returns the most in flight since the previous sample.
func (e *slowEndpoint) sample() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peak
	e.peak = e.n
	return p
}

// floorTimes returns, from changes (in time order), how long after from
// the in-flight count first was at most floor (0 if it was at from), and
// after which it stayed at most floor until to; ok is false if it never
// was at most floor in [from, to).
func floorTimes(changes []inFlightChange, floor int, from, to time.Time) (first, settled time.Duration, ok bool) {
	n := 0 // in flight at from
	i := 0
	for ; i < len(changes) && !changes[i].at.After(from); i++ {
		n = changes[i].n
	}
	firstAt, settledAt := time.Time{}, time.Time{}
	if n <= floor {
		firstAt, settledAt = from, from
	}
	for ; i < len(changes) && changes[i].at.Before(to); i++ {
		c := changes[i]
		switch {
		case c.n <= floor && firstAt.IsZero():
			firstAt, settledAt = c.at, c.at
		case c.n <= floor && settledAt.IsZero():
			settledAt = c.at
		case c.n > floor:
			settledAt = time.Time{}
		}
	}
	if firstAt.IsZero() {
		return 0, 0, false
	}
	if settledAt.IsZero() {
		settledAt = to
	}
	return firstAt.Sub(from), settledAt.Sub(from), true
}

// maxInFlight is the most in flight in changes from from until to.
func maxInFlight(changes []inFlightChange, from, to time.Time) int {
	m := 0
	for _, c := range changes {
		if c.at.Before(from) {
			m = c.n // in flight at from
			continue
		}
		if !c.at.Before(to) {
			break
		}
		m = max(m, c.n)
	}
	return m
}

// rateBetween is the rate of the count in samples from the first sample
// after from until the last before to (NaN if that spans no time).
func rateBetween(samples []slowSample, from, to time.Duration) float64 {
	i := slices.IndexFunc(samples, func(s slowSample) bool { return s.At >= from })
	j := -1
	for k, s := range samples {
		if s.At <= to {
			j = k
		}
	}
	if i < 0 || j <= i {
		return math.NaN()
	}
	return float64(samples[j].BArrived-samples[i].BArrived) / (samples[j].At - samples[i].At).Seconds()
}

// slow drains tenant A's one webhook, whose endpoint turns slow when half
// of it arrived and fast again after the slow duration, beside tenant B's
// backlog on its own webhooks, with one replica.
func (b *bench) slow(ctx context.Context) (*slowResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, host, done, err := b.scenarioDB(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	a := b.opts.adaptive
	if _, err := host.addWebhook(ctx, b.rcv.base, slowPath, tenantA, channel.Input{}); err != nil {
		return nil, err
	}
	if _, err := host.addChannels(ctx, b.rcv.base, hookPath, tenantB, a.slowBChannels); err != nil {
		return nil, err
	}
	bLayout := layout{firstTenant: tenantB, tenants: 1, channels: a.slowBChannels, events: a.slowBEvents}
	for _, l := range []layout{{firstTenant: tenantA, tenants: 1, channels: 1, events: a.slowEvents}, bLayout} {
		if err := host.fill(ctx, l); err != nil {
			return nil, err
		}
	}
	b.rcv.reset()
	e := newSlowEndpoint(a.slowEvents, a.slowDelay, a.slowDuration)
	defer b.rcv.use(&behaviour{prefix: slowPath, serve: e.serve})()
	opts := b.replicaOpts(kindDeskkit, dsn)
	opts.workers = a.slowWorkers
	opts.tenantConcurrency = min(opts.tenantConcurrency, a.slowWorkers)
	set, err := startReplicas(ctx, 1, opts, b.env())
	if err != nil {
		return nil, err
	}
	defer set.stop(b.stopGrace())
	if err := set.start(); err != nil {
		return nil, err
	}
	start := time.Now()
	var samples []slowSample
	tick := time.NewTicker(sampleInterval) // the sampling period, not a wait for state
	defer tick.Stop()
	for b.rcv.uniqueOf(tenantA) < int64(a.slowEvents) {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for A's %d deliveries (%d arrived): %w", a.slowEvents, b.rcv.uniqueOf(tenantA), ctx.Err())
		case now := <-tick.C:
			samples = append(samples, slowSample{At: now.Sub(start), InFlight: e.sample(), BArrived: b.rcv.uniqueOf(tenantB)})
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	slowAt, recovered := e.slowAt, e.slowAt.Add(a.slowDuration)
	r := &slowResult{ADeliveries: a.slowEvents, Samples: samples,
		SlowAt: slowAt.Sub(start), RecoveredAt: recovered.Sub(start),
		MaxInFlight:     maxInFlight(e.changes, start, time.Now()),
		MaxInFlightSlow: maxInFlight(e.changes, slowAt, recovered),
	}
	if first, settled, ok := floorTimes(e.changes, a.slowFloor, slowAt, recovered); ok {
		r.FirstAtFloor, r.SettledAtFloor = first, settled
	} else {
		r.FirstAtFloor, r.SettledAtFloor = -1, -1
	}
	if e.lastAt.Before(recovered) {
		r.ADrainedWhileSlow = true
	} else {
		r.ADrainAfter = e.lastAt.Sub(recovered)
	}
	bStart := time.Duration(0)
	if i := slices.IndexFunc(samples, func(s slowSample) bool { return s.BArrived > 0 }); i >= 0 {
		bStart = samples[i].At
	}
	r.BBefore = rateBetween(samples, bStart, r.SlowAt)
	r.BDuring = rateBetween(samples, r.SlowAt, r.RecoveredAt)
	bTotal := int64(bLayout.deliveries())
	r.BRanOut = len(samples) == 0 || samples[len(samples)-1].At < r.RecoveredAt ||
		slices.ContainsFunc(samples, func(s slowSample) bool { return s.At <= r.RecoveredAt && s.BArrived >= bTotal })
	return r, nil
}

// --- throttled ----------------------------------------------------------

// throttleWindow is how long after a 429 with Retry-After: 1 no attempt
// should come.
const throttleWindow = time.Second

// throttledResult is the throttled scenario.
type throttledResult struct {
	Deliveries int `json:"deliveries"`
	// Attempts is every request the endpoint got, Refused those it
	// answered 429, InWindow those that arrived within throttleWindow
	// after a 429 was answered.
	Attempts int `json:"attempts"`
	Refused  int `json:"refused"`
	InWindow int `json:"in_window"`
	// InWindowAfter is, for each of the first maxWindowOffsets of those,
	// how long after the 429 before it it arrived: a request the client
	// started before it read the 429 comes within a few milliseconds.
	InWindowAfter []time.Duration `json:"in_window_after_ns"`
	// DrainAfter is the time from the recovery until the last delivery
	// succeeded; if Left deliveries had not within the recover wait, it
	// is that wait (a lower bound).
	DrainAfter time.Duration `json:"drain_after_ns"`
	Left       int           `json:"left"`
}

// throttledEndpoint answers 429 with Retry-After: 1 for a while from its
// first request, then 204.
type throttledEndpoint struct {
	duration time.Duration

	mu       sync.Mutex
	start    time.Time   // the first arrival
	arrivals []time.Time // every request's
	refusals []time.Time // when each 429 was answered
	ok       map[string]bool
	lastOK   time.Time
}

func (e *throttledEndpoint) serve(w http.ResponseWriter, req *http.Request, arrived time.Time) {
	e.mu.Lock()
	if e.start.IsZero() {
		e.start = arrived
	}
	e.arrivals = append(e.arrivals, arrived)
	refuse := arrived.Before(e.start.Add(e.duration))
	e.mu.Unlock()
	if refuse {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		e.mu.Lock()
		e.refusals = append(e.refusals, time.Now())
		e.mu.Unlock()
		return
	}
	w.WriteHeader(http.StatusNoContent)
	e.mu.Lock()
	if id := req.Header.Get("webhook-id"); !e.ok[id] {
		e.ok[id] = true
		e.lastOK = arrived
	}
	e.mu.Unlock()
}

// succeeded is how many deliveries were answered 204, and whether the
// endpoint got its first request and when it recovers.
func (e *throttledEndpoint) succeeded() (n int, recovers time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.start.IsZero() {
		return len(e.ok), time.Time{}
	}
	return len(e.ok), e.start.Add(e.duration)
}

// maxWindowOffsets bounds the offsets the JSON keeps of the requests in
// a window.
const maxWindowOffsets = 100

// inWindows returns, for each arrival that came within window after a
// refusal (at s <= a < s+window for some refusal s), how long after the
// latest refusal before it it came. Both are in time order.
func inWindows(arrivals, refusals []time.Time, window time.Duration) []time.Duration {
	var out []time.Duration
	j := 0
	var last time.Time // the latest refusal at or before the arrival
	for _, a := range arrivals {
		for ; j < len(refusals) && !refusals[j].After(a); j++ {
			last = refusals[j]
		}
		if !last.IsZero() && a.Before(last.Add(window)) {
			out = append(out, a.Sub(last))
		}
	}
	return out
}

// throttled drains one webhook whose endpoint answers 429 with
// Retry-After: 1 for the throttle duration, with one replica.
func (b *bench) throttled(ctx context.Context) (*throttledResult, error) {
	a := b.opts.adaptive
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, host, done, err := b.scenarioDB(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if _, err := host.addWebhook(ctx, b.rcv.base, throttlePath, tenantA, channel.Input{}); err != nil {
		return nil, err
	}
	if err := host.fill(ctx, layout{firstTenant: tenantA, tenants: 1, channels: 1, events: a.throttleEvents}); err != nil {
		return nil, err
	}
	b.rcv.reset()
	e := &throttledEndpoint{duration: a.throttleDuration, ok: map[string]bool{}}
	defer b.rcv.use(&behaviour{prefix: throttlePath, serve: e.serve})()
	set, err := startReplicas(ctx, 1, b.replicaOpts(kindDeskkit, dsn), b.env())
	if err != nil {
		return nil, err
	}
	defer set.stop(b.stopGrace())
	if err := set.start(); err != nil {
		return nil, err
	}
	var recovers time.Time
	err = waitFor(ctx, func() (bool, error) {
		_, recovers = e.succeeded()
		return !recovers.IsZero(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the first attempt: %w", err)
	}
	wctx, wcancel := context.WithDeadline(ctx, recovers.Add(a.recoverWait))
	defer wcancel()
	err = waitFor(wctx, func() (bool, error) {
		n, _ := e.succeeded()
		return n >= a.throttleEvents, nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("wait for the backlog: %w", ctx.Err())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Requests are logged as they take the lock, in nearly their order.
	slices.SortFunc(e.arrivals, time.Time.Compare)
	slices.SortFunc(e.refusals, time.Time.Compare)
	in := inWindows(e.arrivals, e.refusals, throttleWindow)
	r := &throttledResult{Deliveries: a.throttleEvents, Attempts: len(e.arrivals), Refused: len(e.refusals),
		InWindow: len(in), InWindowAfter: in[:min(len(in), maxWindowOffsets)], Left: a.throttleEvents - len(e.ok)}
	if r.Left > 0 {
		r.DrainAfter = a.recoverWait
	} else {
		r.DrainAfter = max(e.lastOK.Sub(recovers), 0)
	}
	return r, nil
}

// --- ratelimit ----------------------------------------------------------

// rateResult is the ratelimit scenario: what the endpoint got over the
// measurement, from its first arrival.
type rateResult struct {
	Limit    float64       `json:"limit_per_s"`
	Duration time.Duration `json:"duration_ns"`
	// Arrived is every request within the measurement; Mean is that over
	// its duration; MaxWindow the most in any one-second window of it;
	// PerSecond the count in each whole second from the first arrival.
	Arrived   int     `json:"arrived"`
	Mean      float64 `json:"mean_per_s"`
	MaxWindow int     `json:"max_in_one_second"`
	PerSecond []int   `json:"per_second"`
	// RanOut says the backlog arrived in full within the measurement (a
	// mean below the limit is then the backlog's, not the limit's).
	RanOut bool `json:"ran_out"`
}

// arrivalLog answers 204 and keeps every request's arrival.
type arrivalLog struct {
	mu       sync.Mutex
	arrivals []time.Time
}

func (l *arrivalLog) serve(w http.ResponseWriter, _ *http.Request, arrived time.Time) {
	l.mu.Lock()
	l.arrivals = append(l.arrivals, arrived)
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// first is the first arrival, zero before it.
func (l *arrivalLog) first() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.arrivals) == 0 {
		return time.Time{}
	}
	return l.arrivals[0]
}

// maxInWindow is the most of ts (in time order) in any half-open window
// [t, t+window): such a window can be slid to start at one of ts without
// losing any.
func maxInWindow(ts []time.Time, window time.Duration) int {
	m, j := 0, 0
	for i, t := range ts {
		for j < len(ts) && ts[j].Before(t.Add(window)) {
			j++
		}
		m = max(m, j-i)
	}
	return m
}

// perSecond counts ts (in time order) in each whole second [from+k s,
// from+(k+1) s) of [from, from+d).
func perSecond(ts []time.Time, from time.Time, d time.Duration) []int {
	out := make([]int, int(math.Ceil(d.Seconds())))
	for _, t := range ts {
		if t.Before(from) || !t.Before(from.Add(d)) {
			continue
		}
		out[int(t.Sub(from)/time.Second)]++
	}
	return out
}

// within returns the ts (in time order) in [from, from+d).
func within(ts []time.Time, from time.Time, d time.Duration) []time.Time {
	i, _ := slices.BinarySearchFunc(ts, from, time.Time.Compare)
	j, _ := slices.BinarySearchFunc(ts, from.Add(d), time.Time.Compare)
	return ts[i:j]
}

// rateLimited drains one webhook with a rate limit by several replicas
// for the rate duration from its first arrival.
func (b *bench) rateLimited(ctx context.Context) (*rateResult, error) {
	a := b.opts.adaptive
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, host, done, err := b.scenarioDB(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if _, err := host.addWebhook(ctx, b.rcv.base, ratePath, tenantA, channel.Input{RateLimit: a.rateLimit}); err != nil {
		return nil, err
	}
	if err := host.fill(ctx, layout{firstTenant: tenantA, tenants: 1, channels: 1, events: a.rateEvents}); err != nil {
		return nil, err
	}
	b.rcv.reset()
	l := &arrivalLog{}
	defer b.rcv.use(&behaviour{prefix: ratePath, serve: l.serve})()
	set, err := startReplicas(ctx, a.rateReplicas, b.replicaOpts(kindDeskkit, dsn), b.env())
	if err != nil {
		return nil, err
	}
	defer set.stop(b.stopGrace())
	if err := set.start(); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, func() (bool, error) { return !l.first().IsZero(), nil }); err != nil {
		return nil, fmt.Errorf("wait for the first delivery: %w", err)
	}
	first := l.first()
	select {
	case <-time.After(time.Until(first.Add(a.rateDuration))): // the measurement's length
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.mu.Lock()
	ts := slices.Clone(l.arrivals)
	l.mu.Unlock()
	// Requests are logged as they take the lock, in nearly their order.
	slices.SortFunc(ts, time.Time.Compare)
	first = ts[0]
	ts = within(ts, first, a.rateDuration)
	return &rateResult{Limit: a.rateLimit, Duration: a.rateDuration, Arrived: len(ts),
		Mean: float64(len(ts)) / a.rateDuration.Seconds(), MaxWindow: maxInWindow(ts, time.Second),
		PerSecond: perSecond(ts, first, a.rateDuration),
		RanOut:    b.rcv.uniqueOf(tenantA) >= int64(a.rateEvents)}, nil
}
