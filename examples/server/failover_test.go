package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestFailover (issue 33): the reference server, as a user runs it on a
// pg_auto_failover formation's multi-host URL (target_session_attrs=
// read-write), survives its primary being killed (kill -9 of the node's
// pg_autoctl and postgres, as a crash) and the secondary promoted, under
// deletes (each publishing task.trashed) and a running drain to a
// webhook receiver: no delete answered 200 loses its effect, no committed
// event goes undelivered, duplicates are only what the delivery records
// explain, and the API answers 503 with Retry-After (never 500) while
// there is no primary, for no longer than the formation's own failover
// (kill to the first write the new primary commits, probed directly)
// plus 5 s.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a pg_auto_failover formation, fails it over, and may wait for a lease (over a minute)")
	}
	f := dbtest.StartFormation(t)
	checkConnector(t, f)
	var arrivalsMu sync.Mutex
	arrivals := map[string][]time.Time{} // webhook-id -> when each request came
	rcv := startReceiver(t, func(id string, n int) int {
		arrivalsMu.Lock()
		arrivals[id] = append(arrivals[id], time.Now())
		arrivalsMu.Unlock()
		return http.StatusNoContent
	})
	base, logs := startServer(t, durableVars(f.URL))
	ann, _ := issue(t, f.URL, "-tenant", "acme", "-username", "ann", "-admin")
	hook := addWebhook(t, base, ann, "sink", rcv, "/hook", nil)

	const (
		clients     = 4
		beforeKill  = 60 // acknowledged deletes
		afterServes = 60 // acknowledged deletes once the new primary serves
	)
	d := &deleter{base: base, token: ann, client: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true},
	}, acked: map[int64]bool{}, other: map[int]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !d.createAndDelete(t) {
					// A client backs off a little on 503 rather than
					// hammer a server whose database is gone.
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
		})
	}
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()

	waitFor(t, rcv, time.Minute, func() bool { return d.ackedCount() >= beforeKill }, func() string {
		return fmt.Sprintf("only %d deletes acknowledged before the kill", d.ackedCount())
	})
	old := f.Primary()
	if old < 0 {
		t.Fatal("the formation has no primary")
	}
	inFlight := deliveryTotal(t, base, ann, hook, channel.DeliveryPending)
	killedAt := time.Now()
	f.KillNode(old)
	// The formation's own failover time: until the other node commits a
	// write, probed with fresh connections.
	waitFor(t, nil, 2*time.Minute, func() bool { return f.Writable(1 - old) }, func() string {
		states, err := f.States()
		return fmt.Sprintf("no new primary: states %v %v", states, err)
	})
	formation := time.Since(killedAt)
	ackedAtPromotion := d.ackedCount()
	waitFor(t, rcv, 2*time.Minute, func() bool { return d.ackedCount() >= ackedAtPromotion+afterServes }, func() string {
		return fmt.Sprintf("only %d deletes acknowledged since the new primary took writes", d.ackedCount()-ackedAtPromotion)
	})
	halt()

	d.mu.Lock()
	first, last, n503, noRetryAfter := d.first503, d.last503, d.other[http.StatusServiceUnavailable], d.noRetryAfter
	for status, n := range d.other {
		if status != http.StatusServiceUnavailable {
			t.Errorf("%d requests answered %d, want 200 or (without a primary) 503", n, status)
		}
	}
	acked := make([]int64, 0, len(d.acked))
	for id := range d.acked {
		acked = append(acked, id)
	}
	d.mu.Unlock()
	if n503 == 0 {
		t.Error("no request answered 503 after the kill: the failover went unseen")
	}
	if noRetryAfter > 0 {
		t.Errorf("%d answers 503 without Retry-After", noRetryAfter)
	}
	var outage time.Duration
	if n503 > 0 {
		outage = last.Sub(first)
	}
	limit := formation + 5*time.Second

	// Every acknowledged delete has its effect on the new primary: the
	// task is gone from GET (trashed).
	lostAcked := 0
	for _, id := range acked {
		if status, _ := call(t, base, ann, http.MethodGet, fmt.Sprintf("/api/v1/demo/task/%d", id), nil); status != http.StatusNotFound {
			lostAcked++
			if lostAcked <= 3 {
				t.Errorf("task %d, whose delete answered 200, answers GET %d after the failover, want 404", id, status)
			}
		}
	}

	// Every event committed (a delivery of the hook on the new primary)
	// arrives; a delivery claimed on the old primary and never recorded
	// waits for its lease.
	committed := map[string]bool{}
	for id := range deliveriesByEvent(t, base, ann, hook) {
		committed[id] = true
	}
	if len(committed) < len(acked) {
		t.Errorf("%d deliveries on the new primary, fewer than the %d acknowledged deletes", len(committed), len(acked))
	}
	lease := 2*durableChannelTimeout + time.Minute
	waitFor(t, rcv, lease+30*time.Second, func() bool { return len(rcv.missing(committed)) == 0 }, func() string {
		m := rcv.missing(committed)
		return fmt.Sprintf("%d of %d committed events never arrived, e.g. %v", len(m), len(committed), m[:min(3, len(m))])
	})
	waitDrained(t, base, ann, hook, lease+30*time.Second)
	eventsLost := len(rcv.missing(committed))

	// Duplicates: each explained by a recorded failed attempt, by an
	// attempt in flight at the kill whose outcome was never recorded (its
	// delivery counts more attempts than its log), or by one whose claim
	// was lost with the old primary: a claim commits without waiting for
	// the secondary (synchronous_commit off: outbox's claim doc), so the
	// new primary may not have it, and claims the delivery again; such an
	// arrival came before the first attempt the records hold.
	distinct, dups, bad := rcv.tally()
	if len(bad) > 0 {
		t.Errorf("%d requests failed signature verification, e.g. %v", len(bad), bad[0])
	}
	arrivalsMu.Lock()
	dupFailed, dupUnrecorded, dupLostClaims, unexplained := explainFailover(t, base, ann, hook, duplicated(rcv), arrivals)
	arrivalsMu.Unlock()
	if len(unexplained) > 0 {
		t.Errorf("%d duplicates, %d not explained by the delivery records: %v", dups, len(unexplained), unexplained)
		t.Logf("server log:\n%s", tail(logs.String(), 20000))
	}
	if inFlightAtKill := dupUnrecorded + dupLostClaims; inFlightAtKill > maxUnrecorded {
		t.Errorf("%d duplicates from attempts in flight at the kill, want at most %d (what a worker holds claimed and unrecorded)", inFlightAtKill, maxUnrecorded)
	}
	// An event delivered from the old primary in the instant between its
	// local commit and the secondary's acknowledgement is not on the new
	// one (its delete did not answer 200): such a phantom is an attempt
	// in flight at the kill too.
	phantoms := 0
	for id := range rcv.counts() {
		if !committed[id] {
			phantoms++
		}
	}
	if phantoms > maxUnrecorded {
		t.Errorf("%d events arrived that the new primary has no delivery of, want at most %d (attempts in flight at the kill)", phantoms, maxUnrecorded)
	}

	t.Logf("failover: formation %.1fs, 503s %.1fs (limit %.1fs, ratio %.2f), acked lost %d, events lost %d, duplicates %d (explained %d: %d failed attempts, %d in flight at the kill of which %d claims lost), phantoms %d; %d deletes acknowledged, %d answered 503, %d events, %d pending at the kill",
		formation.Seconds(), outage.Seconds(), limit.Seconds(), outage.Seconds()/limit.Seconds(), lostAcked, eventsLost,
		dups, dupFailed+dupUnrecorded+dupLostClaims, dupFailed, dupUnrecorded+dupLostClaims, dupLostClaims, phantoms, len(acked), n503, distinct, inFlight)
	if outage > limit {
		t.Errorf("503s for %s, longer than the formation's failover (%s) + 5 s", outage.Round(time.Millisecond), formation.Round(time.Millisecond))
	}
	if got := deliveryTotal(t, base, ann, hook, channel.DeliveryFailed); got != 0 {
		t.Errorf("%d deliveries FAILED, want none", got)
	}
	// The delivery workers' LISTEN was rebuilt on the new primary: the
	// listener's confirmation is a NOTIFY sent through the pool (on the
	// primary) that came back on the listener's connection.
	if !strings.Contains(logs.String(), "outbox: listener connection established again") {
		t.Errorf("the listener was not established again after the failover:\n%s", tail(logs.String(), 4000))
	}
	if strings.Contains(logs.String(), `"status":500`) {
		t.Errorf("a 500 in the server's log:\n%s", tail(logs.String(), 8000))
	}
}

// deleter creates demo tasks and deletes them through the API, recording
// the deletes answered 200 and, of the other answers, the 503s' times and
// whether they had a Retry-After.
type deleter struct {
	base, token string
	client      *http.Client

	mu           sync.Mutex
	acked        map[int64]bool // task ids whose delete answered 200
	other        map[int]int    // status -> answers other than 200 (0: no answer)
	first503     time.Time
	last503      time.Time
	noRetryAfter int
	seq          atomic.Int64
}

// createAndDelete creates a task and deletes it; it reports false when an
// answer was 503 (the client then backs off).
func (d *deleter) createAndDelete(t *testing.T) bool {
	var made struct{ ID int64 }
	if !d.do(t, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 1, "name": fmt.Sprintf("T%d", d.seq.Add(1))}, &made) {
		return false
	}
	var gone struct{ ID, TrashID int64 }
	if !d.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", made.ID), nil, &gone) {
		// A delete that answered 503 may have committed all the same
		// (its commit's answer lost): it is not counted either way.
		return false
	}
	if gone.ID != made.ID || gone.TrashID == 0 {
		t.Errorf("delete of task %d answered %+v", made.ID, gone)
		return false
	}
	d.mu.Lock()
	d.acked[made.ID] = true
	d.mu.Unlock()
	return true
}

// do sends one request and reports whether it answered 200 with code S,
// decoding data into out.
func (d *deleter) do(t *testing.T, method, path string, body, out any) bool {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	if err != nil {
		t.Error(err)
		return false
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	started := time.Now()
	res, err := d.client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v (the server must answer)", method, path, err)
		d.mu.Lock()
		d.other[0]++
		d.mu.Unlock()
		return false
	}
	defer res.Body.Close()
	var env struct {
		Code string
		Data json.RawMessage
	}
	derr := json.NewDecoder(res.Body).Decode(&env)
	if res.StatusCode == http.StatusOK && derr == nil && env.Code == "S" {
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Errorf("%s %s: data %s: %v", method, path, env.Data, err)
			return false
		}
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.other[res.StatusCode]++
	if res.StatusCode == http.StatusServiceUnavailable {
		if d.first503.IsZero() {
			d.first503 = started
		}
		d.last503 = time.Now()
		if res.Header.Get("Retry-After") == "" {
			d.noRetryAfter++
		}
	}
	return false
}

func (d *deleter) ackedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.acked)
}

// explainFailover explains the duplicates dups (event id to arrivals,
// arrivals their times) by the channel's delivery records, as
// attemptsExplain does, and by claims lost with the old primary: an
// arrival before the first attempt the records hold. It returns the
// extra arrivals each explains, and the events none explains.
func explainFailover(t *testing.T, base, token string, channelID int64, dups map[string]int, arrivals map[string][]time.Time) (failed, unrecorded, lostClaims int, unexplained map[string]string) {
	t.Helper()
	unexplained = map[string]string{}
	deliveryOf := deliveriesByEvent(t, base, token, channelID)
	for id, n := range dups {
		d, found := deliveryOf[id]
		if !found {
			unexplained[id] = fmt.Sprintf("%d arrivals, no delivery", n)
			continue
		}
		var attempts []channel.Attempt
		ok(t, base, token, http.MethodGet, fmt.Sprintf("/api/v1/event/delivery/%d/attempts", d.ID), nil, &attempts)
		nFailed := 0
		var first time.Time
		for _, a := range attempts {
			if a.Error != "" {
				nFailed++
			}
			if first.IsZero() || a.StartedDate.Before(first) {
				first = a.StartedDate
			}
		}
		extra := n - 1
		byFailed := min(extra, nFailed)
		byUnrecorded := min(extra-byFailed, max(0, d.Attempts-len(attempts)))
		rest := extra - byFailed - byUnrecorded
		early := 0 // arrivals before the first recorded attempt
		for _, at := range arrivals[id] {
			if !first.IsZero() && at.Before(first) {
				early++
			}
		}
		byLostClaim := min(rest, early)
		failed, unrecorded, lostClaims = failed+byFailed, unrecorded+byUnrecorded, lostClaims+byLostClaim
		if rest > byLostClaim {
			var b strings.Builder
			fmt.Fprintf(&b, "%d arrivals at", n)
			for _, at := range arrivals[id] {
				fmt.Fprintf(&b, " %s", at.Format("15:04:05.000"))
			}
			fmt.Fprintf(&b, "; delivery %d %s, %d attempts:", d.ID, d.Status, d.Attempts)
			for _, a := range attempts {
				fmt.Fprintf(&b, " [#%d %s %d %q]", a.AttemptNo, a.StartedDate.Format("15:04:05.000"), a.StatusCode, a.Error)
			}
			unexplained[id] = b.String()
		}
	}
	return failed, unrecorded, lostClaims, unexplained
}

// checkConnector checks the multi-host connector against the formation
// before the failover: its URL reaches the primary; the secondary alone
// with target_session_attrs=read-write answers ErrNoPrimary (an outage,
// 503); with any, it serves as the standby it is.
func checkConnector(t *testing.T, f *dbtest.Formation) {
	t.Helper()
	p := f.Primary()
	if p < 0 {
		t.Fatal("the formation has no primary")
	}
	ctx := context.Background()
	db, err := database.Open(f.URL, database.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recovery bool
	if err := db.NewRaw("SELECT pg_is_in_recovery()").Scan(ctx, &recovery); err != nil || recovery {
		t.Fatalf("through %s: in recovery %v, %v; want the primary", f.URL, recovery, err)
	}
	secondary, err := database.Open(f.NodeURL(1-p)+"&target_session_attrs=read-write", database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer secondary.Close()
	if err := secondary.PingContext(ctx); !errors.Is(err, database.ErrNoPrimary) || !database.Unavailable(err) {
		t.Errorf("the secondary alone, read-write: %v; want ErrNoPrimary, Unavailable", err)
	}
	standby, err := database.Open(f.NodeURL(1-p)+"&target_session_attrs=any", database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Close()
	if err := standby.NewRaw("SELECT pg_is_in_recovery()").Scan(ctx, &recovery); err != nil || !recovery {
		t.Errorf("the secondary alone, any: in recovery %v, %v; want the standby", recovery, err)
	}
}
