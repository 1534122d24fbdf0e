package channel

// The worker's cache of opened channels (cache.go), on SQLite and
// PostgreSQL: a change made between two claims is seen at the next one,
// an unchanged channel is not decrypted again, a batch's versions are read
// in one query whatever its tenants, and no tenant reaches another's
// channel through the cache. Deliveries go through Publish and runOnce
// under the injected clock; where a delivery must be claimed before its
// channel changes (a channel disabled or deleted after the claim), the
// test calls the handler's Open on the batch the claim would have
// returned, as the worker does.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/outbox"
)

// cacheReceiver is a loopback webhook and robot that records each
// request's path, query, headers and body, and answers status.
type cacheReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []cacheReq
	status int
	body   string
}

type cacheReq struct {
	path, query string
	header      http.Header
	body        []byte
}

func startCacheReceiver(t *testing.T) *cacheReceiver {
	rc := &cacheReceiver{status: http.StatusOK, body: `{"errcode":0,"errmsg":"ok"}`}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, cacheReq{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b})
		status, body := rc.status, rc.body
		rc.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, body) //nolint:errcheck // the client reads what it can
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *cacheReceiver) answer(status int, body string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.status, rc.body = status, body
}

// got returns the requests so far.
func (rc *cacheReceiver) got() []cacheReq {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]cacheReq(nil), rc.reqs...)
}

// countingHook counts the statements that read deskkit_channels.
// countingHook counts Open's reads of deskkit_channels: the statements
// that read it, but for the claim's (which reads the outbox's tables too).
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if strings.HasPrefix(e.Query, "SELECT") && strings.Contains(e.Query, "deskkit_channels") && !strings.Contains(e.Query, "deskkit_outbox") {
		h.n.Add(1)
	}
	return ctx
}

func (h *countingHook) AfterQuery(context.Context, *bun.QueryEvent) {}

type cacheFixture struct {
	r       *ChannelRegistry
	db      *bun.DB
	clock   *clocktest.Clock
	recv    *cacheReceiver
	reads   *countingHook
	ann     deskkit.Principal // tenant 10
	eve     deskkit.Principal // tenant 20
	tenants map[int64]deskkit.Principal
}

func newCacheFixture(t *testing.T, db *bun.DB) *cacheFixture {
	t.Helper()
	ctx := context.Background()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	f := &cacheFixture{
		db:    db,
		clock: clocktest.New(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)),
		recv:  startCacheReceiver(t),
		reads: &countingHook{},
		ann:   deskkit.Principal{UserID: 1, TenantID: 10, Admin: true},
		eve:   deskkit.Principal{UserID: 2, TenantID: 20, Admin: true},
	}
	f.tenants = map[int64]deskkit.Principal{10: f.ann, 20: f.eve}
	db.AddQueryHook(f.reads)
	f.r = f.registry(t, storeSecret, nil)
	return f
}

// registry is a registry over the fixture's database, clock and
// receiver, with the server secret secret (and previous, if not nil).
func (f *cacheFixture) registry(t *testing.T, secret, previous []byte) *ChannelRegistry {
	t.Helper()
	r, err := New(f.db, secret, nil, &Config{
		Now: f.clock.Now, PreviousSecret: previous, AllowPrivateNetworks: true,
		Logger: slog.New(slog.DiscardHandler), RetrySchedule: []time.Duration{0, time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterEventTypes(deskkit.EventType{Name: "task.trashed", Description: "A task was trashed.", Example: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *cacheFixture) add(t *testing.T, p deskkit.Principal, in Input) Added {
	t.Helper()
	a, err := f.r.Add(context.Background(), p, in)
	if err != nil {
		t.Fatalf("add %+v: %v", in, err)
	}
	return a
}

// publish publishes a task.trashed event to the tenant's channels and
// returns its id.
func (f *cacheFixture) publish(t *testing.T, tenantID int64) string {
	t.Helper()
	ev := deskkit.Event{ID: deskkit.NewEventID(), Type: "task.trashed", Title: "Task 7 was trashed", Data: map[string]any{"taskId": 7}}
	if err := f.r.Publish(context.Background(), f.db, tenantID, ev); err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

// run makes one batch of due attempts and returns how many.
func (f *cacheFixture) run(t *testing.T) int {
	t.Helper()
	n, err := f.r.runOnce(context.Background())
	if err != nil {
		t.Fatalf("run once: %v", err)
	}
	return n
}

// open opens batch as the worker does after a claim, counting the reads
// of deskkit_channels, and returns the attempt function and that count.
func (f *cacheFixture) open(t *testing.T, batch ...outbox.Delivery) (func(context.Context, outbox.Delivery) outbox.Outcome, int64) {
	t.Helper()
	before := f.reads.n.Load()
	attempt, err := (*handler)(f.r).Open(context.Background(), batch)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return attempt, f.reads.n.Load() - before
}

// claimed is a claimed delivery of a fresh event to channel id of the
// tenant.
func claimed(tenantID, id int64) outbox.Delivery {
	return outbox.Delivery{ID: id*100 + tenantID, TenantID: tenantID, Kind: outboxKind, TargetID: id, Attempt: 1,
		Event: outbox.Event{TenantID: tenantID, ID: deskkit.NewEventID(), Type: "task.trashed",
			Time: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), Title: "Task 7 was trashed", Data: json.RawMessage(`{"taskId":7}`)}}
}

func (f *cacheFixture) version(t *testing.T, id int64) int64 {
	t.Helper()
	var v int64
	if err := f.db.NewRaw("SELECT version FROM deskkit_channels WHERE id = ?", id).Scan(context.Background(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// dingSign is DingTalk's signature of a message at ts (Unix ms) under
// secret, as the robot checks it.
func dingSign(secret, ts string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// A change of address, secret or enabled between two claims is seen by
// the next claim; an unchanged channel is not decrypted again, and a
// failed attempt (the failure clock) changes nothing that is cached.
func TestCacheSeesChanges(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newCacheFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/a"})
		decrypted := func() int64 { return f.r.chans.decrypted.Load() }

		f.publish(t, 10)
		if n := f.run(t); n != 1 || decrypted() != 1 {
			t.Fatalf("first batch: %d claimed, %d decrypted", n, decrypted())
		}
		// Unchanged: sent from the cache.
		for range 3 {
			f.publish(t, 10)
			if n := f.run(t); n != 1 {
				t.Fatalf("claimed %d", n)
			}
		}
		if decrypted() != 1 {
			t.Errorf("an unchanged channel was decrypted %d times in 4 batches, want 1", decrypted())
		}
		// A failed attempt moves the failure clock, not the version.
		v := f.version(t, hook.ID)
		f.recv.answer(http.StatusInternalServerError, "{}")
		f.publish(t, 10)
		f.run(t)
		f.recv.answer(http.StatusOK, `{"errcode":0,"errmsg":"ok"}`)
		if got := f.version(t, hook.ID); got != v {
			t.Errorf("a failed attempt moved the version from %d to %d", v, got)
		}
		f.clock.Advance(2 * time.Minute) // its retry is due
		f.publish(t, 10)
		if n := f.run(t); n != 2 || decrypted() != 1 {
			t.Errorf("after a failure: %d claimed, %d decrypted, want 2 and 1", n, decrypted())
		}

		// A new address: the next claim sends there.
		if _, err := f.r.Replace(ctx, f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/b"}); err != nil {
			t.Fatal(err)
		}
		id := f.publish(t, 10)
		if n := f.run(t); n != 1 || decrypted() != 2 {
			t.Fatalf("after a replace: %d claimed, %d decrypted, want 1 and 2", n, decrypted())
		}
		reqs := f.recv.got()
		last := reqs[len(reqs)-1]
		if last.path != "/b" || last.header.Get("webhook-id") != id {
			t.Errorf("after the address changed the event went to %s (%s)", last.path, last.header.Get("webhook-id"))
		}
		// The webhook keeps its secret across a replace.
		sig, err := notify.Sign(hook.Secret, id, f.clock.Now(), last.body)
		if err != nil || last.header.Get("webhook-signature") != sig {
			t.Errorf("signature %q, want %q (%v)", last.header.Get("webhook-signature"), sig, err)
		}

		// A new DingTalk secret: the next claim signs with it.
		ding := f.add(t, f.ann, Input{Type: "DINGTALK", Name: "ding", Address: f.recv.URL + "/robot/send?access_token=tok", Secret: str("SECfirst0123")})
		lastSign := func(t *testing.T) string {
			t.Helper()
			for _, r := range slices.Backward(f.recv.got()) {
				if r.path == "/robot/send" {
					return r.query
				}
			}
			t.Fatal("the robot got nothing")
			return ""
		}
		ts := strconv.FormatInt(f.clock.Now().UnixMilli(), 10)
		wantQuery := func(secret string) string {
			return "access_token=tok&timestamp=" + ts + "&sign=" + url.QueryEscape(dingSign(secret, ts))
		}
		f.publish(t, 10)
		f.run(t)
		if q := lastSign(t); q != wantQuery("SECfirst0123") {
			t.Errorf("the robot's query %q, want %q", q, wantQuery("SECfirst0123"))
		}
		if _, err := f.r.Replace(ctx, f.ann, Input{ID: ding.ID, Type: "DINGTALK", Name: "ding", Address: f.recv.URL + "/robot/send?access_token=tok", Secret: str("SECsecond456")}); err != nil {
			t.Fatal(err)
		}
		f.publish(t, 10)
		f.run(t)
		if q := lastSign(t); q != wantQuery("SECsecond456") {
			t.Errorf("after the secret changed, the robot's query %q, want %q", q, wantQuery("SECsecond456"))
		}

		// Disabled after the claim (the claim and the disabling race):
		// the attempt fails "channel disabled" and sends nothing.
		d := claimed(10, hook.ID)
		attempt, _ := f.open(t, d)
		if o := attempt(ctx, d); !o.OK {
			t.Fatalf("before the disabling: %+v", o)
		}
		if _, err := f.r.Disable(ctx, f.ann, hook.ID); err != nil {
			t.Fatal(err)
		}
		sent := len(f.recv.got())
		attempt, _ = f.open(t, d)
		if o := attempt(ctx, d); o.Error.Key() != reasonDisabled.Key() || !o.Final {
			t.Errorf("a disabled channel's attempt: %+v", o)
		}
		// Enabled again: sent.
		if _, err := f.r.Enable(ctx, f.ann, hook.ID); err != nil {
			t.Fatal(err)
		}
		attempt, _ = f.open(t, d)
		if o := attempt(ctx, d); !o.OK {
			t.Errorf("enabled again: %+v", o)
		}
		if got := len(f.recv.got()); got != sent+1 {
			t.Errorf("%d requests while disabled and after, want 1", got-sent)
		}

		// Disabled by the worker itself (a 410): the next claim sees it.
		f.recv.answer(http.StatusGone, "{}")
		f.publish(t, 10)
		f.run(t)
		attempt, _ = f.open(t, d)
		if o := attempt(ctx, d); o.Error.Key() != reasonDisabled.Key() {
			t.Errorf("after the 410 disabled the channel: %+v", o)
		}
	})
}

// Every statement that changes what a delivery uses adds one to the
// version: Replace (of the name alone too), Enable, Disable.
func TestCacheVersionBumps(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newCacheFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/a"})
		steps := []struct {
			name string
			do   func() error
		}{
			{"replace the name", func() error {
				_, err := f.r.Replace(ctx, f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "renamed", Address: f.recv.URL + "/a"})
				return err
			}},
			{"replace the address", func() error {
				_, err := f.r.Replace(ctx, f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "renamed", Address: f.recv.URL + "/b"})
				return err
			}},
			{"disable", func() error { _, err := f.r.Disable(ctx, f.ann, hook.ID); return err }},
			{"enable", func() error { _, err := f.r.Enable(ctx, f.ann, hook.ID); return err }},
		}
		want := f.version(t, hook.ID)
		if want != 1 {
			t.Errorf("a new channel's version %d, want 1", want)
		}
		for _, s := range steps {
			if err := s.do(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			want++
			if got := f.version(t, hook.ID); got != want {
				t.Errorf("after %s: version %d, want %d", s.name, got, want)
			}
		}
	})
}

// A batch the worker claims brings its channels' versions from the claim
// (stateSQL): Open reads deskkit_channels only for the rows of the
// channels that changed, and not at all when none did. A channel changed
// or disabled after the publish is opened again or not sent to; a
// delivery of one tenant naming another's channel finds it gone, and
// sends nothing.
func TestCacheStatesFromClaim(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newCacheFixture(t, db)
		ctx := context.Background()
		a1 := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "a1", Address: f.recv.URL + "/a1"})
		e1 := f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "e1", Address: f.recv.URL + "/e1"})
		// run publishes to both tenants, runs one batch, and returns
		// Open's reads of deskkit_channels and the paths sent to.
		run := func(step string, want int) (int64, []string) {
			t.Helper()
			f.publish(t, 10)
			f.publish(t, 20)
			sent := len(f.recv.got())
			before := f.reads.n.Load()
			if n := f.run(t); n != want {
				t.Fatalf("%s: %d attempts, want %d", step, n, want)
			}
			var paths []string
			for _, r := range f.recv.got()[sent:] {
				paths = append(paths, r.path)
			}
			slices.Sort(paths)
			return f.reads.n.Load() - before, paths
		}
		if reads, paths := run("first", 2); reads != 1 || !slices.Equal(paths, []string{"/a1", "/e1"}) {
			t.Errorf("first batch: %d reads, sent to %v; want 1 read (the rows), /a1 and /e1", reads, paths)
		}
		if reads, paths := run("unchanged", 2); reads != 0 || !slices.Equal(paths, []string{"/a1", "/e1"}) {
			t.Errorf("unchanged: %d reads, sent to %v; want none, /a1 and /e1", reads, paths)
		}
		if _, err := f.r.Replace(ctx, f.eve, Input{ID: e1.ID, Type: "WEBHOOK", Name: "e1", Address: f.recv.URL + "/e1b"}); err != nil {
			t.Fatal(err)
		}
		if reads, paths := run("replaced", 2); reads != 1 || !slices.Equal(paths, []string{"/a1", "/e1b"}) {
			t.Errorf("after a replace: %d reads, sent to %v; want 1, /a1 and /e1b", reads, paths)
		}

		// Disabled by hand between the publish and the claim, its
		// version left as it was (Disable ends its deliveries itself):
		// the claim's state says so, and nothing is sent.
		f.publish(t, 10)
		if _, err := db.NewRaw("UPDATE deskkit_channels SET enabled = ? WHERE id = ?", false, a1.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		sent := len(f.recv.got())
		if n := f.run(t); n != 1 || len(f.recv.got()) != sent {
			t.Errorf("disabled after the publish: %d attempts, %d requests; want 1 and none", n, len(f.recv.got())-sent)
		}
		if _, err := db.NewRaw("UPDATE deskkit_channels SET enabled = ? WHERE id = ?", true, a1.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}

		// A delivery of tenant 20 to tenant 10's channel, written by hand.
		_, _, err := outbox.NewEnqueuer(db, outboxKind, outbox.OneTarget).Enqueue(ctx, db, outbox.Event{TenantID: 20, ID: "msg_cross", Type: "task.trashed",
			Time: f.clock.Now(), Title: "Task 7 was trashed", Data: json.RawMessage(`{"taskId":7}`)}, []any{a1.ID, nil}, f.clock.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		sent = len(f.recv.got())
		if n := f.run(t); n != 1 || len(f.recv.got()) != sent {
			t.Errorf("another tenant's channel: %d attempts, %d requests; want 1 and none", n, len(f.recv.got())-sent)
		}
		var reason string
		if err := db.NewRaw("SELECT last_error FROM deskkit_outbox_deliveries WHERE tenant_id = 20 AND target_id = ?", a1.ID).Scan(ctx, &reason); err != nil || reason != reasonDeleted.String() {
			t.Errorf("another tenant's channel: last error %q (%v), want %q", reason, err, reasonDeleted.String())
		}
	})
}

// A state the claim read that is not stateSQL's fails the batch's open,
// naming the channel; "gone" is a deleted channel.
func TestParseState(t *testing.T) {
	k := channelKey{10, 7}
	if v, ok, err := parseState(k, "12 1 0"); err != nil || !ok || v != (versionRow{TenantID: 10, ID: 7, Version: 12, Enabled: true}) {
		t.Errorf("12 1 0: %+v, %v, %v", v, ok, err)
	}
	if _, ok, err := parseState(k, stateGone); err != nil || ok {
		t.Errorf("gone: %v, %v", ok, err)
	}
	for _, s := range []string{"", "12", "12 1", "x 1 0", "12 1 0 9", "12 2 0", "12  1 0", " 12 1 0"} {
		if _, _, err := parseState(k, s); err == nil || !strings.Contains(err.Error(), "channel 7") {
			t.Errorf("%q: %v, want an error naming channel 7", s, err)
		}
	}
}

// A batch without the claim's states (opened here as the worker would
// open one claimed without them) has its versions read in one query,
// whatever its tenants; the rows of the changed channels in one more; a channel deleted after the
// claim fails "channel deleted" and leaves the cache; two tenants never
// reach each other's channels through it.
func TestCacheQueriesAndTenants(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newCacheFixture(t, db)
		ctx := context.Background()
		a1 := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "a1", Address: f.recv.URL + "/a1"})
		a2 := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "a2", Address: f.recv.URL + "/a2"})
		e1 := f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "e1", Address: f.recv.URL + "/e1"})
		batch := []outbox.Delivery{claimed(10, a1.ID), claimed(20, e1.ID), claimed(10, a2.ID), claimed(10, a1.ID)}

		attempt, reads := f.open(t, batch...)
		if reads != 2 || f.r.chans.decrypted.Load() != 3 {
			t.Errorf("the first open: %d reads, %d decrypted; want 2 and 3", reads, f.r.chans.decrypted.Load())
		}
		for _, d := range batch {
			if o := attempt(ctx, d); !o.OK {
				t.Errorf("delivery to %d of tenant %d: %+v", d.TargetID, d.TenantID, o)
			}
		}
		if _, reads = f.open(t, batch...); reads != 1 || f.r.chans.decrypted.Load() != 3 {
			t.Errorf("unchanged: %d reads, %d decrypted; want 1 and 3", reads, f.r.chans.decrypted.Load())
		}
		if _, err := f.r.Replace(ctx, f.eve, Input{ID: e1.ID, Type: "WEBHOOK", Name: "e1", Address: f.recv.URL + "/e1b"}); err != nil {
			t.Fatal(err)
		}
		if _, reads = f.open(t, batch...); reads != 2 || f.r.chans.decrypted.Load() != 4 {
			t.Errorf("one changed: %d reads, %d decrypted; want 2 and 4", reads, f.r.chans.decrypted.Load())
		}

		// Tenant 20 naming tenant 10's channel, in a batch where tenant
		// 10's is cached: not found, nothing sent.
		sent := len(f.recv.got())
		cross := []outbox.Delivery{claimed(10, a1.ID), claimed(20, a1.ID), claimed(10, e1.ID)}
		attempt, _ = f.open(t, cross...)
		if o := attempt(ctx, cross[0]); !o.OK {
			t.Errorf("tenant 10's own channel: %+v", o)
		}
		for _, d := range cross[1:] {
			if o := attempt(ctx, d); o.Error.Key() != reasonDeleted.Key() || !o.Final {
				t.Errorf("tenant %d's delivery to another tenant's channel %d: %+v", d.TenantID, d.TargetID, o)
			}
		}
		if got := f.recv.got(); len(got) != sent+1 || got[len(got)-1].path != "/a1" {
			t.Errorf("cross-tenant batch sent %d requests, want 1 to /a1", len(got)-sent)
		}
		// A row moved to another tenant (by hand): the cached copy under
		// the old tenant is not used, and under the new tenant the row
		// does not decrypt (its ciphertext is bound to the old one).
		if _, err := db.NewRaw("UPDATE deskkit_channels SET tenant_id = 20 WHERE id = ?", a2.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		moved := []outbox.Delivery{claimed(10, a2.ID), claimed(20, a2.ID)}
		attempt, _ = f.open(t, moved...)
		if o := attempt(ctx, moved[0]); o.Error.Key() != reasonDeleted.Key() {
			t.Errorf("the old tenant's delivery to a moved channel: %+v", o)
		}
		if o := attempt(ctx, moved[1]); o.OK || !strings.Contains(o.Error.String(), "does not decrypt") {
			t.Errorf("the new tenant's delivery to a moved channel: %+v", o)
		}

		// Deleted after the claim: "channel deleted", and forgotten.
		n := f.r.chans.len()
		if err := f.r.Delete(ctx, f.ann, a1.ID); err != nil {
			t.Fatal(err)
		}
		d := claimed(10, a1.ID)
		attempt, _ = f.open(t, d)
		if o := attempt(ctx, d); o.Error.Key() != reasonDeleted.Key() || !o.Final {
			t.Errorf("a deleted channel's attempt: %+v", o)
		}
		if f.r.chans.len() != n-1 {
			t.Errorf("the cache holds %d channels after a delete, want %d", f.r.chans.len(), n-1)
		}
	})
}

// The cache is bounded: beyond its size the least recently used channel
// goes, and is decrypted again when a batch needs it.
func TestCacheEvicts(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	f := newCacheFixture(t, db)
	f.r.chans.max = 2
	var ids []int64
	for i := range 3 {
		ids = append(ids, f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "h" + strconv.Itoa(i), Address: f.recv.URL + "/h"}).ID)
	}
	f.open(t, claimed(10, ids[0]))
	f.open(t, claimed(10, ids[1]))
	f.open(t, claimed(10, ids[0])) // 0 is used more recently than 1
	f.open(t, claimed(10, ids[2])) // 1 goes
	if n, d := f.r.chans.len(), f.r.chans.decrypted.Load(); n != 2 || d != 3 {
		t.Fatalf("%d cached, %d decrypted; want 2 and 3", n, d)
	}
	f.open(t, claimed(10, ids[0]), claimed(10, ids[2]))
	if d := f.r.chans.decrypted.Load(); d != 3 {
		t.Errorf("the two cached were decrypted again: %d", d)
	}
	f.open(t, claimed(10, ids[1]))
	if d := f.r.chans.decrypted.Load(); d != 4 {
		t.Errorf("the evicted one: %d decrypted, want 4", d)
	}
}

// After a rotation of the server secret (Config.PreviousSecret) a channel
// stored under the old secret still delivers, signed with its own secret;
// without the previous secret it fails, saying why, and sends nothing.
func TestCacheSecretRotation(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newCacheFixture(t, db)
		ctx := context.Background()
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/a"})
		newSecret := []byte("a-new-server-secret-0123456789abcdef")
		for _, c := range []struct {
			name     string
			previous []byte
			ok       bool
		}{{"with the previous secret", storeSecret, true}, {"without it", nil, false}} {
			r := f.registry(t, newSecret, c.previous)
			d := claimed(10, hook.ID)
			attempt, err := (*handler)(r).Open(ctx, []outbox.Delivery{d})
			if err != nil {
				t.Fatal(err)
			}
			sent := len(f.recv.got())
			o := attempt(ctx, d)
			if o.OK != c.ok || (!c.ok && !strings.Contains(o.Error.String(), "does not decrypt")) {
				t.Errorf("%s: %+v", c.name, o)
			}
			got := f.recv.got()
			if !c.ok {
				if len(got) != sent {
					t.Errorf("%s: sent %d requests", c.name, len(got)-sent)
				}
				continue
			}
			last := got[len(got)-1]
			sig, err := notify.Sign(hook.Secret, d.Event.ID, f.clock.Now(), last.body)
			if err != nil || last.header.Get("webhook-signature") != sig {
				t.Errorf("%s: signature %q, want %q (%v)", c.name, last.header.Get("webhook-signature"), sig, err)
			}
		}
	})
}

// Opens of one registry at once, while the channel changes, are safe (run
// with -race) and each sends to an address the channel had.
func TestCacheConcurrentOpens(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	f := newCacheFixture(t, db)
	ctx := context.Background()
	hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/v0"})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				d := claimed(10, hook.ID)
				attempt, err := (*handler)(f.r).Open(ctx, []outbox.Delivery{d})
				if err != nil {
					t.Error(err)
					return
				}
				if o := attempt(ctx, d); !o.OK {
					t.Errorf("attempt: %+v", o)
				}
			}
		})
	}
	for i := 1; i <= 5; i++ {
		if _, err := f.r.Replace(ctx, f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/v" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for _, r := range f.recv.got() {
		if n, err := strconv.Atoi(strings.TrimPrefix(r.path, "/v")); err != nil || n < 0 || n > 5 {
			t.Errorf("a request to %s", r.path)
		}
	}
	// After the last change, a batch sends to the last address.
	d := claimed(10, hook.ID)
	attempt, _ := f.open(t, d)
	attempt(ctx, d)
	if got := f.recv.got(); got[len(got)-1].path != "/v5" {
		t.Errorf("after the changes the event went to %s, want /v5", got[len(got)-1].path)
	}
}

// A reply that echoes the address is masked at every attempt with the
// list made once for the channel's version: the batches share one opened
// channel until it changes, and its new address is masked after.
func TestCacheRedacts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newCacheFixture(t, db)
		ctx := context.Background()
		token := "tok-0123456789abcdef"
		hook := f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/hook?token=" + token})
		f.recv.answer(http.StatusNotFound, "Cannot POST /hook?token="+token)
		var first *opened
		for i := range 2 {
			d := claimed(10, hook.ID)
			attempt, _ := f.open(t, d)
			o := attempt(ctx, d)
			if strings.Contains(o.Response, token) || !strings.Contains(o.Response, "Cannot POST ***") {
				t.Errorf("batch %d: the reply %q", i, o.Response)
			}
			f.r.chans.mu.Lock()
			c := f.r.chans.items[channelKey{10, hook.ID}].Value.(*opened)
			f.r.chans.mu.Unlock()
			if first == nil {
				first = c
			} else if c != first {
				t.Errorf("batch %d opened the unchanged channel again", i)
			}
		}
		if diff := cmp.Diff(redactions(first.storedChannel), first.redactions); diff != "" {
			t.Errorf("the cached redactions (-want +got):\n%s", diff)
		}
		other := "other-fedcba9876543210"
		if _, err := f.r.Replace(ctx, f.ann, Input{ID: hook.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/hook?token=" + other}); err != nil {
			t.Fatal(err)
		}
		f.recv.answer(http.StatusNotFound, "Cannot POST /hook?token="+other)
		d := claimed(10, hook.ID)
		attempt, _ := f.open(t, d)
		if o := attempt(ctx, d); strings.Contains(o.Response, other) {
			t.Errorf("after the address changed, the reply %q", o.Response)
		}
	})
}
