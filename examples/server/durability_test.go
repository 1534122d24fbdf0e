package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/outbox"
)

// The durability tests of issue 13 ("Proof"): events published through the
// reference server, as a user runs it, reach real webhook receivers on
// loopback whatever happens to the server or its database: a kill -9 in a
// burst, two replicas, a database cut, a receiver that fails.

// durableSecret is the server secret of the servers these tests start:
// replicas and a restarted server must share it to open each other's
// channels, as in production, where DESKKIT_SECRET is set.
const durableSecret = "durability-test-secret-0123456789abcdef"

// durableChannelTimeout bounds one attempt. The lease of a claimed delivery
// is 2 x this + 1 min (channel's lease), so a delivery whose process died
// mid-attempt is attempted again about 66 s after its claim.
const durableChannelTimeout = 3 * time.Second

// durableVars are the environment of the servers these tests start: the
// shared PostgreSQL server gets a small pool from each, loopback receivers
// are allowed, and failed attempts are retried within seconds.
func durableVars(rawURL string) map[string]string {
	return map[string]string{
		envDatabaseURL:         rawURL,
		envSecret:              durableSecret,
		envDBMaxConns:          "6",
		envDBStatementTimeout:  "5s",
		envRequestTimeout:      "2s",
		envChannelAllowPrivate: "true",
		envChannelTimeout:      durableChannelTimeout.String(),
		envEventRetrySchedule:  "0,200ms,1s,2s,5s",
	}
}

// receiver is a webhook receiver on loopback: it verifies every request's
// Standard Webhooks signature and counts requests by webhook-id, the event
// id, which is what a receiver deduplicates on.
type receiver struct {
	*httptest.Server

	mu      sync.Mutex
	wh      *standardwebhooks.Webhook
	count   map[string]int             // webhook-id -> requests
	events  map[string]json.RawMessage // webhook-id -> the last body
	bad     []string                   // requests that failed verification
	ports   map[int]int                // the sender's port -> requests
	arrived chan struct{}              // a token after every request
	// status answers the n-th request (from 1) of a webhook-id; 204 if nil.
	status func(id string, n int) int
}

func startReceiver(t *testing.T, status func(id string, n int) int) *receiver {
	t.Helper()
	r := &receiver{count: map[string]int{}, events: map[string]json.RawMessage{}, ports: map[int]int{}, arrived: make(chan struct{}, 1), status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// setSecret makes the receiver verify signatures under the webhook's
// secret, as the add answered it.
func (r *receiver) setSecret(t *testing.T, secret string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.wh = wh
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	switch {
	case err != nil:
		r.bad = append(r.bad, fmt.Sprintf("%s: reading the body: %v", id, err))
	case r.wh == nil:
		r.bad = append(r.bad, id+": came before the channel's secret was known")
	default:
		if verr := r.wh.Verify(body, req.Header); verr != nil {
			r.bad = append(r.bad, fmt.Sprintf("%s: %v", id, verr))
			err = verr
		}
	}
	if err != nil {
		r.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.count[id]++
	r.events[id] = body
	if _, port, err := net.SplitHostPort(req.RemoteAddr); err == nil {
		n, _ := strconv.Atoi(port)
		r.ports[n]++
	}
	n := r.count[id]
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	status := http.StatusNoContent
	if r.status != nil {
		status = r.status(id, n)
	}
	w.WriteHeader(status)
}

// tally returns the distinct webhook-ids received, the requests beyond the
// first of each (duplicates), and the requests that failed verification.
func (r *receiver) tally() (distinct, duplicates int, bad []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.count {
		duplicates += n - 1
	}
	return len(r.count), duplicates, append([]string(nil), r.bad...)
}

// missing returns the ids of want the receiver has not had yet.
func (r *receiver) missing(want map[string]bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for id := range want {
		if r.count[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// counts returns a copy of the requests per webhook-id.
func (r *receiver) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.count))
	for id, n := range r.count {
		out[id] = n
	}
	return out
}

// waitFor polls cond until it holds or timeout passes, then fails the test
// with what describe says. It wakes on the receiver's arrivals (if rcv is
// not nil) and every 50 ms, so it waits for a condition, not for time.
func waitFor(t *testing.T, rcv *receiver, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var arrived chan struct{}
	if rcv != nil {
		arrived = rcv.arrived
	}
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("after %s: %s", timeout, describe())
		case <-tick.C:
		case <-arrived:
		}
	}
}

// waitArrived waits until every event of ids has arrived at rcv.
func waitArrived(t *testing.T, rcv *receiver, ids map[string]bool, timeout time.Duration) {
	t.Helper()
	waitFor(t, rcv, timeout, func() bool { return len(rcv.missing(ids)) == 0 }, func() string {
		m := rcv.missing(ids)
		return fmt.Sprintf("%d of %d acknowledged events never arrived, e.g. %v", len(m), len(ids), m[:min(3, len(m))])
	})
}

// waitDrained waits until the channel has no PENDING delivery left.
func waitDrained(t *testing.T, base, token string, channelID int64, timeout time.Duration) {
	t.Helper()
	pending := func() int { return deliveryTotal(t, base, token, channelID, channel.DeliveryPending) }
	waitFor(t, nil, timeout, func() bool { return pending() == 0 }, func() string {
		return fmt.Sprintf("%d deliveries still pending", pending())
	})
}

// maxUnrecorded bounds the deliveries one server's worker holds claimed
// and unrecorded: its channel.DefaultConcurrency attempts, a batch claimed
// ahead (4 x the concurrency), and the outcomes handed to its flusher (its
// queue and the flush under way, outbox.DefaultFlushSize each).
const maxUnrecorded = 5*channel.DefaultConcurrency + 2*outbox.DefaultFlushSize

// checkReceived checks what rcv got of pub's events: every request signed,
// no event pub did not publish, and every duplicate explained by explain
// (nil: none may come), of them at most maxLost by an attempt whose
// outcome was lost. It returns the distinct events and the duplicates.
func checkReceived(t *testing.T, rcv *receiver, pub *publisher, maxLost int, explain func(map[string]int) duplicates) (distinct, dups int) {
	t.Helper()
	distinct, dups, bad := rcv.tally()
	if len(bad) > 0 {
		t.Errorf("%d requests failed signature verification, e.g. %v", len(bad), bad[0])
	}
	if u := pub.unknown(rcv); len(u) > 0 {
		t.Errorf("the receiver got %d events nobody published, e.g. %v", len(u), u[0])
	}
	if dups == 0 {
		return distinct, dups
	}
	if explain == nil {
		t.Errorf("%d duplicates, want none: %v", dups, duplicated(rcv))
		return distinct, dups
	}
	d := explain(duplicated(rcv))
	if len(d.unexplained) > 0 {
		t.Errorf("%d duplicates, of them %d explained by a recorded failed attempt and %d by an attempt whose outcome was lost; not explained: %v",
			dups, d.failed, d.lost, d.unexplained)
	}
	if d.lost > maxLost {
		t.Errorf("%d duplicates came from attempts whose outcome was lost, want at most %d", d.lost, maxLost)
	}
	return distinct, dups
}

// duplicates is what a channel's records say of the events that arrived
// more than once.
type duplicates struct {
	// failed is how many extra arrivals a recorded failed attempt
	// explains; lost, how many an attempt that was claimed and never
	// recorded explains.
	failed, lost int
	// unexplained maps an event id to its arrivals that neither explains.
	unexplained map[string]int
}

// attemptsExplain explains the duplicates dups (event id to arrivals) by
// the attempts of the channel's deliveries. An attempt that timed out
// under load (the receiver had the request, the answer came too late) is
// recorded as failed and made again, as at-least-once delivery wants. An
// attempt whose outcome was never recorded (its process killed, its
// database cut before the flush) counts in the delivery's attempts but
// not in its log, and is made again when its lease ends. Anything else
// would be a delivery sent twice by one attempt: a fault.
func attemptsExplain(t *testing.T, base, token string, channelID int64) func(map[string]int) duplicates {
	return func(dups map[string]int) duplicates {
		t.Helper()
		deliveryOf := deliveriesByEvent(t, base, token, channelID)
		out := duplicates{unexplained: map[string]int{}}
		for eventID, n := range dups {
			d, found := deliveryOf[eventID]
			if !found {
				out.unexplained[eventID] = n
				continue
			}
			var attempts []channel.Attempt
			ok(t, base, token, http.MethodGet, fmt.Sprintf("/api/v1/event/delivery/%d/attempts", d.ID), nil, &attempts)
			failed := 0
			for _, a := range attempts {
				if a.Error != "" {
					failed++
				}
			}
			extra := n - 1
			byFailed := min(extra, failed)
			byLost := min(extra-byFailed, max(0, d.Attempts-len(attempts)))
			out.failed += byFailed
			out.lost += byLost
			if extra > byFailed+byLost {
				out.unexplained[eventID] = n
			}
		}
		return out
	}
}

// addWebhook adds a webhook channel to rcv (at path) with the events it
// subscribes to (nil: every event), and gives rcv its secret.
func addWebhook(t *testing.T, base, token, name string, rcv *receiver, path string, events []string) int64 {
	t.Helper()
	var added struct {
		ID     int64
		Secret string
	}
	body := map[string]any{"channelType": "WEBHOOK", "name": name, "address": rcv.URL + path}
	if events != nil {
		body["events"] = events
	}
	ok(t, base, token, http.MethodPost, "/api/v1/event/channel", body, &added)
	if added.ID == 0 || !strings.HasPrefix(added.Secret, "whsec_") {
		t.Fatalf("added webhook %s: %+v", name, added)
	}
	rcv.setSecret(t, added.Secret)
	return added.ID
}

// deliveryTotal is how many of the channel's deliveries are in status
// ("" for all), as GET .../deliveries counts them.
func deliveryTotal(t *testing.T, base, token string, channelID int64, status string) int {
	t.Helper()
	var page struct{ Total int }
	ok(t, base, token, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries?status=%s&pageSize=1", channelID, status), nil, &page)
	return page.Total
}

// publisher publishes events through the demo host's publish route, with
// ids of its own making so that the test knows every id it tried.
type publisher struct {
	client *http.Client
	token  string

	mu      sync.Mutex
	tried   map[string]bool // every id sent
	acked   map[string]bool // ids answered 200 with that eventId
	other   map[int]int     // status -> answers other than 200
	unacked map[string]int  // ids answered 503 or not at all -> their event's number
}

func newPublisher(token string, clients int) *publisher {
	return &publisher{
		client: &http.Client{
			Timeout:   10 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true},
		},
		token:   token,
		tried:   map[string]bool{},
		acked:   map[string]bool{},
		other:   map[int]int{},
		unacked: map[string]int{},
	}
}

// publish publishes event i, under a new id, to the server at base. It
// returns the status (0 when the request failed without an answer) and a
// transport error.
func (p *publisher) publish(base string, i int) (int, error) {
	return p.publishID(base, deskkit.NewEventID(), i)
}

// publishID publishes event i under id, as publish does: a client retrying
// a publish sends the same id, on which publishing is idempotent.
func (p *publisher) publishID(base, id string, i int) (int, error) {
	body, _ := json.Marshal(map[string]any{
		"id": id, "type": "demo.hello", "title": "burst event " + strconv.Itoa(i), "data": map[string]any{"i": i},
	})
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/demo/event/publish", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	p.mu.Lock()
	p.tried[id] = true
	p.mu.Unlock()
	res, err := p.client.Do(req)
	if err != nil {
		p.mu.Lock()
		p.unacked[id] = i
		p.mu.Unlock()
		return 0, err
	}
	defer res.Body.Close()
	var env struct {
		Code string
		Data struct{ EventID string }
	}
	derr := json.NewDecoder(res.Body).Decode(&env)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case res.StatusCode == http.StatusOK && derr == nil && env.Code == "S" && env.Data.EventID == id:
		p.acked[id] = true
		delete(p.unacked, id)
	case res.StatusCode == http.StatusServiceUnavailable:
		p.other[res.StatusCode]++
		p.unacked[id] = i
	case res.StatusCode == http.StatusOK:
		// An answer that does not acknowledge the id is a failure of the
		// route, not an unacknowledged publish.
		p.other[-1]++
	default:
		p.other[res.StatusCode]++
	}
	return res.StatusCode, nil
}

// retryUnacked publishes again, to the server at base, every event that
// was not acknowledged, under its id, as a client does after a 503 or a
// lost connection, and returns how many it retried. Each must answer 200
// now: the server is up.
func (p *publisher) retryUnacked(t *testing.T, base string) int {
	t.Helper()
	p.mu.Lock()
	retry := make(map[string]int, len(p.unacked))
	for id, i := range p.unacked {
		retry[id] = i
	}
	p.mu.Unlock()
	for id, i := range retry {
		if status, err := p.publishID(base, id, i); err != nil || status != http.StatusOK {
			t.Fatalf("publishing %s again: %d %v", id, status, err)
		}
	}
	return len(retry)
}

func (p *publisher) ackedIDs() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]bool, len(p.acked))
	for id := range p.acked {
		out[id] = true
	}
	return out
}

func (p *publisher) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// unknown returns the ids rcv got that p never sent: events nobody
// published.
func (p *publisher) unknown(rcv *receiver) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id := range rcv.counts() {
		if !p.tried[id] {
			out = append(out, id)
		}
	}
	return out
}

// burst publishes events from..to-1 from clients goroutines at once, each
// to the server bases[i % len(bases)], and returns the index of the first
// event not attempted: a client stops at its first transport error (the
// server is gone).
func (p *publisher) burst(bases []string, from, to, clients int) int {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if _, err := p.publish(bases[i%len(bases)], i); err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return min(int(next.Load()), to)
}

// buildServer builds the server's binary into a temporary directory of t,
// for tests that run it as a process of its own (and kill it).
func buildServer(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the server: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "server")
	start := time.Now()
	out, err := exec.Command(goCmd, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built the server in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// serverProc is the server running as a process of its own.
type serverProc struct {
	cmd    *exec.Cmd
	base   string
	stderr *lockedBuffer
	done   chan error // Wait's result, once it exits
}

// startProc starts the server binary with the environment vars (and none
// of the test's own DESKKIT_ variables) on a free loopback port, and
// returns once it listens. Cleanup stops it with SIGTERM if it still runs.
func startProc(t *testing.T, bin string, vars map[string]string) *serverProc {
	t.Helper()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-demo=false")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DESKKIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &serverProc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if base, found := strings.CutPrefix(sc.Text(), "deskkit is listening on "); found {
			p.base = base
			break
		}
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdout) // drain, until it exits
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { p.stop(t) })
	if p.base == "" {
		t.Fatalf("the server did not start: %v\n%s", <-p.done, p.stderr.String())
	}
	return p
}

// kill kills the process with SIGKILL, as kill -9 does, and waits for it.
// It may run on any goroutine.
func (p *serverProc) kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	p.done = nil
	return nil
}

// stop stops the process with SIGTERM, as a deployment does, and checks
// that it shut down cleanly.
func (p *serverProc) stop(t *testing.T) {
	t.Helper()
	if p.done == nil {
		return // killed
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("the server exited with %v after SIGTERM\n%s", err, p.stderr.String())
		}
	case <-time.After(shutdownTimeout + 2*durableChannelTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("the server did not stop after SIGTERM\n%s", p.stderr.String())
	}
	p.done = nil
	if t.Failed() {
		t.Logf("server log (requests left out):\n%s", tail(p.stderr.String(), 8000))
	}
}

// tail is the end of a server log without its access log lines, at most n
// bytes.
func tail(log string, n int) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if !strings.Contains(line, `"msg":"request"`) {
			b.WriteString(line)
		}
	}
	s := b.String()
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// TestDurableKill9 kills the server with SIGKILL during a burst of 1,000
// published events, starts it again on the same database, and checks that
// every event whose publish was acknowledged reaches the receiver, with at
// most as many duplicates as deliveries could be in flight at the kill.
func TestDurableKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the lease of the deliveries in flight at the kill (over a minute)")
	}
	rawURL := dbtest.Database(t)
	durableKill9(t, rawURL, durableVars(rawURL))
}

// durableKill9 is TestDurableKill9 on the database of rawURL (where
// tokens are issued), the servers started with vars.
func durableKill9(t *testing.T, rawURL string, vars map[string]string) {
	bin := buildServer(t)
	rcv := startReceiver(t, nil)
	first := startProc(t, bin, vars)
	ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
	hook := addWebhook(t, first.base, ann, "sink", rcv, "/hook", nil)

	const (
		events  = 1000
		clients = 8
		killAt  = 400 // acknowledged publishes
	)
	pub := newPublisher(ann, clients)
	// A watcher kills the server once killAt publishes were acknowledged,
	// while the clients keep publishing: the kill lands mid-burst, with
	// publishes and deliveries in flight.
	killed := make(chan struct{})
	var (
		killedAcks int
		killErr    error
	)
	go func() {
		defer close(killed)
		for pub.ackedCount() < killAt {
			<-time.After(time.Millisecond)
		}
		killErr = first.kill()
		killedAcks = pub.ackedCount()
	}()
	start := time.Now()
	next := pub.burst([]string{first.base}, 0, events, clients)
	<-killed
	if killErr != nil {
		t.Fatalf("kill: %v", killErr)
	}
	if next >= events {
		t.Fatalf("all %d events were published before the kill: the burst was too short to kill mid-way", events)
	}
	receivedAtKill, _, _ := rcv.tally()
	t.Logf("killed after %s: %d publishes acknowledged, %d attempted, %d events at the receiver", time.Since(start).Round(time.Millisecond), killedAcks, next, receivedAtKill)

	// The same server, started again on the same database, and the rest
	// of the burst published to it.
	restart := time.Now()
	second := startProc(t, bin, vars)
	if end := pub.burst([]string{second.base}, next, events, clients); end != events {
		t.Fatalf("the restarted server stopped answering after event %d\n%s", end, second.stderr.String())
	}
	pub.mu.Lock()
	tried := len(pub.tried)
	pub.mu.Unlock()
	if tried != events {
		t.Fatalf("%d events were published, want %d", tried, events)
	}
	ackedFirst := pub.ackedCount()
	// The client publishes again, with their ids, the events whose
	// publish the kill left unanswered: some may have been committed.
	retried := pub.retryUnacked(t, second.base)
	acked := pub.ackedIDs()
	t.Logf("%d of %d publishes acknowledged at the first try; %d left unanswered by the kill published again with their ids", ackedFirst, events, retried)
	if len(acked) != events {
		t.Fatalf("%d events acknowledged, want %d", len(acked), events)
	}

	// The deliveries the killed process had claimed and not recorded are
	// PENDING under its lease, their next attempt due when it ends: lease
	// after their claim, which came between the burst's start and the
	// kill (2 x the channel timeout + 1 min; a retry after a failed
	// attempt is due within seconds instead).
	lease := 2*durableChannelTimeout + time.Minute
	pending := func() []channel.Delivery {
		var page struct{ List []channel.Delivery }
		ok(t, second.base, ann, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries?status=%s&pageSize=%d", hook, channel.DeliveryPending, channel.MaxPageSize), nil, &page)
		return page.List
	}
	heldByDead := func(list []channel.Delivery) map[string]bool {
		held := map[string]bool{}
		for _, d := range list {
			if n := d.NextAttemptDate; d.Attempts > 0 && n != nil && n.After(start.Add(lease-time.Second)) && n.Before(restart.Add(lease)) {
				held[d.EventID] = true
			}
		}
		return held
	}
	// Every other event arrives at once, long before that lease ends.
	var held map[string]bool
	waitFor(t, rcv, 30*time.Second, func() bool {
		held = heldByDead(pending())
		for _, id := range rcv.missing(acked) {
			if !held[id] {
				return false
			}
		}
		return true
	}, func() string {
		list := pending()
		return fmt.Sprintf("%d events missing, %d of them held by the killed process's lease; %d pending, e.g. %+v",
			len(rcv.missing(acked)), len(heldByDead(list)), len(list), list[:min(3, len(list))])
	})
	counts := rcv.counts()
	sentBeforeKill := 0
	for id := range held {
		if counts[id] > 0 {
			sentBeforeKill++
		}
	}
	t.Logf("%s after the restart every event had arrived but those of the %d deliveries held by the killed process's lease that it had not sent (%d; it had sent %d before it died)",
		time.Since(restart).Round(time.Millisecond), len(held), len(held)-sentBeforeKill, sentBeforeKill)
	// A worker holds at most its channel.DefaultConcurrency slots' worth
	// of deliveries in flight and, claimed ahead, at most a batch waiting
	// for a slot (channel.Config.BatchSize, 4 x the concurrency by
	// default); a claim counts an attempt, so both are held here, and so
	// are the attempts that ended, their outcomes waiting for a flush.
	if len(held) > maxUnrecorded {
		t.Errorf("%d deliveries held by the killed process, want at most %d (its concurrency, a batch claimed ahead, and the outcomes waiting for a flush)", len(held), maxUnrecorded)
	}

	// Every acknowledged event arrives at least once: the held ones when
	// the lease ends. Then the outbox drains, when the lease ends even if
	// the killed process had sent all it held.
	waitArrived(t, rcv, acked, lease+30*time.Second)
	t.Logf("every event arrived %s after the restart", time.Since(restart).Round(time.Millisecond))
	waitDrained(t, second.base, ann, hook, lease+30*time.Second)
	drained := time.Since(restart)

	// Duplicates come only from attempts the killed process had started
	// (the request may have reached the receiver) but not recorded: such
	// a delivery is still PENDING under the dead process's lease and is
	// attempted again when the lease ends, so the held deliveries it had
	// sent come twice, and no other. An attempt that timed out on a
	// loaded machine is recorded as failed and made again: such a
	// duplicate is at-least-once working.
	distinct, dups := checkReceived(t, rcv, pub, sentBeforeKill, attemptsExplain(t, second.base, ann, hook))
	t.Logf("drained %s after the restart: %d distinct events at the receiver, %d duplicates", drained.Round(time.Millisecond), distinct, dups)
	if dups != sentBeforeKill {
		t.Logf("note: %d duplicates, where %d were expected from the held deliveries: other attempts were repeated (a timeout under load?): %v", dups, sentBeforeKill, duplicated(rcv))
	}
	if distinct != events {
		t.Errorf("%d distinct events arrived, want the %d published", distinct, events)
	}
	if got := deliveryTotal(t, second.base, ann, hook, channel.DeliverySucceeded); got != events {
		t.Errorf("%d deliveries SUCCEEDED, want one per event (%d)", got, events)
	}
	if got := deliveryTotal(t, second.base, ann, hook, channel.DeliveryFailed); got != 0 {
		t.Errorf("%d deliveries FAILED, want none", got)
	}
}

// duplicated lists the webhook-ids rcv got more than once, with their
// counts.
func duplicated(rcv *receiver) map[string]int {
	out := map[string]int{}
	for id, n := range rcv.counts() {
		if n > 1 {
			out[id] = n
		}
	}
	return out
}

// TestDurableTwoReplicas runs two server processes on one database and
// publishes 1,000 events across both: nobody dies, so every event reaches
// the receiver exactly once, each delivery attempted once.
func TestDurableTwoReplicas(t *testing.T) {
	rawURL := dbtest.Database(t)
	bin := buildServer(t)
	vars := durableVars(rawURL)
	rcv := startReceiver(t, nil)
	a := startProc(t, bin, vars)
	b := startProc(t, bin, vars)
	ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
	hook := addWebhook(t, a.base, ann, "sink", rcv, "/hook", nil)

	const events, clients = 1000, 8
	pub := newPublisher(ann, clients)
	start := time.Now()
	if end := pub.burst([]string{a.base, b.base}, 0, events, clients); end != events {
		t.Fatalf("publishing stopped at event %d\n%s\n%s", end, a.stderr.String(), b.stderr.String())
	}
	published := time.Since(start)
	acked := pub.ackedIDs()
	if len(acked) != events {
		t.Fatalf("%d of %d publishes acknowledged; other answers: %v", len(acked), events, pub.other)
	}
	waitArrived(t, rcv, acked, time.Minute)
	delivered := time.Since(start)
	// The last outcomes are recorded just after their requests arrived.
	// A second attempt of any delivery would show as a duplicate below or
	// as attempts > 1.
	waitDrained(t, b.base, ann, hook, 30*time.Second)
	var page struct {
		Total int
		List  []channel.Delivery
	}
	ok(t, b.base, ann, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries?pageSize=%d", hook, events), nil, &page)
	if page.Total != events || len(page.List) != events {
		t.Errorf("%d deliveries (%d listed), want %d", page.Total, len(page.List), events)
	}
	for _, d := range page.List {
		if d.Status != channel.DeliverySucceeded || d.Attempts != 1 || !acked[d.EventID] {
			t.Errorf("delivery %+v, want SUCCEEDED after one attempt of a published event", d)
			break
		}
	}
	distinct, dups := checkReceived(t, rcv, pub, 0, nil)
	t.Logf("2 replicas: %d events published in %s, all delivered %s after the first publish: %d distinct, %d duplicates",
		events, published.Round(time.Millisecond), delivered.Round(time.Millisecond), distinct, dups)
	if distinct != events {
		t.Errorf("the receiver got %d distinct events, want %d", distinct, events)
	}
	// Both replicas delivered, so that exactly once is the claim's doing
	// and not one idle replica's.
	if byPID, ok := requestsByProcess(t, rcv, a.cmd.Process.Pid, b.cmd.Process.Pid); ok {
		t.Logf("requests by replica (pid: requests, 0 for connections already closed): %v", byPID)
		if byPID[a.cmd.Process.Pid] == 0 || byPID[b.cmd.Process.Pid] == 0 {
			t.Errorf("requests by replica %v: want both to deliver", byPID)
		}
	}
}

// requestsByProcess attributes rcv's requests to the processes pids by the
// sockets they hold (Linux's /proc): a request came from the process whose
// open connection to rcv has its source port. It reports false where /proc
// cannot tell.
func requestsByProcess(t *testing.T, rcv *receiver, pids ...int) (map[int]int, bool) {
	t.Helper()
	_, rcvPort, err := net.SplitHostPort(rcv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// The inode of every socket each process holds.
	owner := map[string]int{}
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, err := os.ReadDir(dir)
		if err != nil {
			t.Logf("cannot attribute requests to processes: %v", err)
			return nil, false
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(link, "socket:[") {
				owner[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = pid
			}
		}
	}
	// The connections to the receiver: local port -> socket inode.
	byPort := map[int]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			fields := strings.Fields(line)
			if len(fields) < 10 {
				continue
			}
			_, local, _ := strings.Cut(fields[1], ":")
			_, remote, _ := strings.Cut(fields[2], ":")
			lp, err1 := strconv.ParseInt(local, 16, 32)
			rp, err2 := strconv.ParseInt(remote, 16, 32)
			if err1 == nil && err2 == nil && strconv.FormatInt(rp, 10) == rcvPort {
				byPort[int(lp)] = fields[9]
			}
		}
	}
	if len(byPort) == 0 {
		t.Log("cannot attribute requests to processes: no connection to the receiver in /proc/net/tcp")
		return nil, false
	}
	out := map[int]int{}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for port, n := range rcv.ports {
		out[owner[byPort[port]]] += n // pid 0: a connection closed since
	}
	return out, true
}

// TestDurableDatabaseCut cuts the server off PostgreSQL for 10 s in the
// middle of a burst: publishes during the cut answer 503, and every
// publish that answered 200, before, during or after the cut, reaches the
// receiver once the database is back, without a restart.
func TestDurableDatabaseCut(t *testing.T) {
	if testing.Short() {
		t.Skip("cuts the database for 10 s and may wait for leases (over a minute)")
	}
	durableDatabaseCut(t, dbtest.Database(t), durableVars)
}

// durableDatabaseCut is TestDurableDatabaseCut on the database of rawURL
// (where tokens are issued), the server started with varsOf(the URL of
// the database through the proxy that the test cuts).
func durableDatabaseCut(t *testing.T, rawURL string, varsOf func(proxied string) map[string]string) {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr()
	vars := varsOf(u.String())
	rcv := startReceiver(t, nil)
	base, logs := startServer(t, vars)
	ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
	hook := addWebhook(t, base, ann, "sink", rcv, "/hook", nil)

	const (
		clients   = 4
		cutAfter  = 300 // acknowledged publishes
		afterCut  = 300 // acknowledged publishes once the database is back
		cutLength = 10 * time.Second
	)
	pub := newPublisher(ann, clients)
	var (
		cut      atomic.Bool
		duringMu sync.Mutex
		during   = map[int]int{} // status -> answers while cut
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var i atomic.Int64
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				wasCut := cut.Load()
				status, err := pub.publish(base, int(i.Add(1)))
				if err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				if wasCut && cut.Load() {
					duringMu.Lock()
					during[status]++
					duringMu.Unlock()
				}
				if status == http.StatusServiceUnavailable {
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
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	waitFor(t, rcv, time.Minute, func() bool { return pub.ackedCount() >= cutAfter }, func() string {
		return fmt.Sprintf("only %d publishes acknowledged", pub.ackedCount())
	})
	ackedBefore := pub.ackedCount()
	proxy.cut(false)
	cut.Store(true)
	cutAt := time.Now()
	// The cut lasts cutLength by definition of the fault: this waits for
	// the outage to be long, not for a result.
	<-time.After(cutLength)
	cut.Store(false)
	proxy.restore()
	restored := time.Now()
	ackedDuringCut := pub.ackedCount() - ackedBefore
	waitFor(t, nil, time.Minute, func() bool { return pub.ackedCount() >= ackedBefore+ackedDuringCut+afterCut }, func() string {
		return fmt.Sprintf("only %d publishes acknowledged since the database came back", pub.ackedCount()-ackedBefore-ackedDuringCut)
	})
	backIn := time.Since(restored)
	close(stop)
	wg.Wait()

	duringMu.Lock()
	t.Logf("answers while cut (status: count): %v", during)
	for status, n := range during {
		// A request that began just before the cut may still answer 200;
		// nothing else but 503.
		if status != http.StatusServiceUnavailable && status != http.StatusOK {
			t.Errorf("%d publishes answered %d during the cut, want 503", n, status)
		}
	}
	if during[http.StatusServiceUnavailable] == 0 {
		t.Error("no publish answered 503 during the cut: the cut did not cut")
	}
	duringMu.Unlock()
	for status, n := range pub.other {
		if status != http.StatusServiceUnavailable {
			t.Errorf("%d publishes answered %d, want 200 or (during the cut) 503", n, status)
		}
	}

	// A client retries what answered 503, with the same ids, once the
	// database is back. A publish that answered 503 may have been written
	// all the same (its commit's answer lost in the cut): then the retry
	// adds nothing and answers 200, and the event is delivered once.
	retry := pub.retryUnacked(t, base)
	acked := pub.ackedIDs()
	if len(acked) != len(pub.tried) {
		t.Fatalf("%d publishes acknowledged, want all %d once retried", len(acked), len(pub.tried))
	}
	lease := 2*durableChannelTimeout + time.Minute
	// Deliveries claimed before the cut wait for their lease: not sent if
	// the cut came before their attempt, sent again if it came before
	// their record.
	waitArrived(t, rcv, acked, lease+30*time.Second)
	arrived := time.Since(restored)
	waitDrained(t, base, ann, hook, lease+30*time.Second)
	drained := time.Since(restored)
	// As at a kill: only attempts started before the cut whose outcome
	// could not be recorded are made again, at most those the worker had
	// claimed and not recorded.
	distinct, dups := checkReceived(t, rcv, pub, maxUnrecorded, attemptsExplain(t, base, ann, hook))
	t.Logf("cut %s after %d acknowledged publishes (%d more acknowledged during the cut); publishing again %s after the database came back; %d events, %d of them published again after a 503; every one arrived %s and the outbox drained %s after; %d distinct events, %d duplicates",
		restored.Sub(cutAt).Round(time.Millisecond), ackedBefore, ackedDuringCut, backIn.Round(time.Millisecond), len(acked), retry,
		arrived.Round(time.Millisecond), drained.Round(time.Millisecond), distinct, dups)
	if distinct != len(acked) {
		t.Errorf("%d distinct events arrived, want the %d published", distinct, len(acked))
	}
	if got := deliveryTotal(t, base, ann, hook, channel.DeliveryFailed); got != 0 {
		t.Errorf("%d deliveries FAILED, want none", got)
	}
	if strings.Contains(logs.String(), `"status":500`) {
		t.Errorf("a 500 in the server's log:\n%s", tail(logs.String(), 8000))
	}
}

// TestDurableFailingReceivers: a receiver that answers 500 twice and then
// 200 gets one delivery in three attempts, all logged, under one
// webhook-id; one that answers 410 has its channel disabled at once, and
// the tenant's other channel hears of it through channel.disabled.
func TestDurableFailingReceivers(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		vars := durableVars(rawURL)
		vars[envEventRetrySchedule] = "0,50ms,50ms"
		rcv := startReceiver(t, func(id string, n int) int {
			if n <= 2 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		base, _ := startServer(t, vars)
		ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")

		flaky := addWebhook(t, base, ann, "flaky", rcv, "/flaky", nil)
		var pubd struct{ EventID string }
		ok(t, base, ann, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "flaky", "data": map[string]any{"n": 1}}, &pubd)
		var page struct {
			Total int
			List  []channel.Delivery
		}
		waitFor(t, rcv, 30*time.Second, func() bool {
			ok(t, base, ann, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries", flaky), nil, &page)
			return page.Total == 1 && page.List[0].Status != channel.DeliveryPending
		}, func() string { return fmt.Sprintf("the delivery is not finished: %+v", page) })
		d := page.List[0]
		if d.Status != channel.DeliverySucceeded || d.Attempts != 3 || d.EventID != pubd.EventID || d.LastStatusCode != http.StatusOK || d.LastError != "" || d.FinishedDate == nil {
			t.Errorf("delivery %+v, want SUCCEEDED in 3 attempts with a 200", d)
		}
		var attempts []channel.Attempt
		ok(t, base, ann, http.MethodGet, fmt.Sprintf("/api/v1/event/delivery/%d/attempts", d.ID), nil, &attempts)
		var codes []int
		for i, a := range attempts {
			codes = append(codes, a.StatusCode)
			if a.AttemptNo != i+1 || (a.StatusCode == http.StatusInternalServerError) != (a.Error != "") {
				t.Errorf("attempt %d: %+v", i+1, a)
			}
		}
		if fmt.Sprint(codes) != "[500 500 200]" {
			t.Errorf("attempts answered %v, want [500 500 200]", codes)
		}
		if got := rcv.counts(); len(got) != 1 || got[pubd.EventID] != 3 {
			t.Errorf("the receiver got %v, want 3 requests under webhook-id %s", got, pubd.EventID)
		}
		ok(t, base, ann, http.MethodDelete, fmt.Sprintf("/api/v1/event/channel/%d", flaky), nil, nil)

		// A receiver that answers 410 Gone, and another channel of the
		// tenant that hears only of channels.
		gone := startReceiver(t, func(string, int) int { return http.StatusGone })
		ops := startReceiver(t, nil)
		goneID := addWebhook(t, base, ann, "gone", gone, "/gone", nil)
		opsID := addWebhook(t, base, ann, "ops", ops, "/ops", []string{"channel.*"})
		ok(t, base, ann, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "to a gone receiver"}, &pubd)

		var disabled struct {
			Type string
			Data struct {
				ChannelID int64
				Name      string
				Reason    string
			}
		}
		waitFor(t, ops, 30*time.Second, func() bool {
			ops.mu.Lock()
			defer ops.mu.Unlock()
			for _, body := range ops.events {
				if err := json.Unmarshal(body, &disabled); err == nil && disabled.Type == channel.EventChannelDisabled {
					return true
				}
			}
			return false
		}, func() string { return fmt.Sprintf("no channel.disabled event came to ops: %v", ops.counts()) })
		if disabled.Data.ChannelID != goneID || disabled.Data.Name != "gone" || !strings.Contains(disabled.Data.Reason, "410") {
			t.Errorf("channel.disabled data %+v, want channel %d, gone, a reason naming 410", disabled.Data, goneID)
		}
		if got := ops.counts(); len(got) != 1 {
			t.Errorf("ops got %v, want the channel.disabled event alone (it subscribes to channel.*)", got)
		}
		var list []channel.Channel
		ok(t, base, ann, http.MethodGet, "/api/v1/event/channel", nil, &list)
		found := false
		for _, c := range list {
			switch c.ID {
			case goneID:
				found = true
				if c.Enabled || !strings.Contains(c.DisabledReason, "410") || c.DisabledDate == nil {
					t.Errorf("the 410 channel is listed as %+v, want disabled with a reason and a date", c)
				}
			case opsID:
				if !c.Enabled {
					t.Errorf("ops is disabled: %+v", c)
				}
			}
		}
		if !found {
			t.Errorf("the 410 channel is not listed: %+v", list)
		}
		ok(t, base, ann, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries", goneID), nil, &page)
		if page.Total != 1 || page.List[0].Status != channel.DeliveryFailed || page.List[0].Attempts != 1 || page.List[0].LastStatusCode != http.StatusGone {
			t.Errorf("the 410 channel's deliveries: %+v, want one FAILED after its one attempt", page)
		}
		// Disabled at once: no retry came, and nothing new is queued for it.
		ok(t, base, ann, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "after the 410"}, nil)
		if n := deliveryTotal(t, base, ann, goneID, ""); n != 1 {
			t.Errorf("the disabled channel has %d deliveries, want 1", n)
		}
		if got := gone.counts(); len(got) != 1 {
			t.Errorf("the 410 receiver got %v, want one request", got)
		}
		for _, r := range []*receiver{rcv, gone, ops} {
			if _, _, bad := r.tally(); len(bad) > 0 {
				t.Errorf("requests failed verification: %v", bad)
			}
		}
	})
}

// deliveriesByEvent reads every delivery of the channel through the API,
// page by page, by its event's id.
func deliveriesByEvent(t *testing.T, base, token string, channelID int64) map[string]channel.Delivery {
	t.Helper()
	out := map[string]channel.Delivery{}
	for pageNo := 1; ; pageNo++ {
		var page struct {
			Total int
			List  []channel.Delivery
		}
		ok(t, base, token, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries?pageNo=%d&pageSize=%d", channelID, pageNo, channel.MaxPageSize), nil, &page)
		for _, d := range page.List {
			out[d.EventID] = d
		}
		if len(page.List) == 0 || len(out) >= page.Total {
			return out
		}
	}
}
