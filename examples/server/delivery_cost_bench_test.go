package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/cputime"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// BenchmarkServerDeliveryCost drains the same backlog (4 tenants x 5
// webhooks, costDrain deliveries of task.trashed) through three registries
// over one PostgreSQL database, in turn in every iteration so that drift
// on a shared machine hits them alike: "bare", channel.New with its
// defaults and the trash's event types, as examples/bench's replica runs
// it; "server", the registry newApp wires (its TenantLanguage hook over
// the directory, kept for -event-language-ttl, its catalogue, its logger,
// its clock); and "server-uncached", the same with the hook asked once
// per tenant of every batch, as before -event-language-ttl. It reports
// this process's CPU (user and system, getrusage) per delivery of each,
// each server's CPU over bare's (what the wiring adds to a delivery), and
// bare's drain time over each one's (throughput: a hook on the claim loop
// costs there, in round trips). PostgreSQL's CPU is another process's and not counted; the
// receiver's (httptest, in this process) is the same for both.
func BenchmarkServerDeliveryCost(b *testing.B) {
	ctx := context.Background()
	db := dbtest.OpenPostgres(b)
	if err := migrateAll(ctx, db); err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	done := make(chan struct{}, 1)
	var want atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if got.Add(1) == want.Load() {
			done <- struct{}{}
		}
	}))
	defer recv.Close()
	secret := []byte("0123456789abcdef0123456789abcdef-bench")
	logger := slog.New(deskkit.LogHandler(slog.NewJSONHandler(discard{}, nil))) // as the server logs
	a, err := newApp(db, appConfig{Logger: logger, Verify: verifyConfig{secret: secret}, Channel: channelConfig{allowPrivate: true}})
	if err != nil {
		b.Fatal(err)
	}
	// uncached is the server's wiring as it was before
	// -event-language-ttl: the directory asked once per tenant of every
	// batch, on the claim loop.
	uncached, err := newApp(db, appConfig{Logger: logger, Verify: verifyConfig{secret: secret}, Channel: channelConfig{allowPrivate: true, languageTTL: -1}})
	if err != nil {
		b.Fatal(err)
	}
	bare, err := channel.New(db, secret, nil, &channel.Config{AllowPrivateNetworks: true, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	if err := bare.RegisterEventTypes(trash.EventTypes()...); err != nil {
		b.Fatal(err)
	}
	var tenants []int64
	for i := range 4 {
		t, err := a.dir.EnsureTenant(ctx, fmt.Sprintf("cost-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		u, err := a.dir.EnsureUser(ctx, t.ID, "admin", true)
		if err != nil {
			b.Fatal(err)
		}
		for j := range 5 {
			p := deskkit.Principal{TenantID: t.ID, UserID: u.ID, Admin: true}
			if _, err := a.channels.Add(ctx, p, channel.Input{Type: "WEBHOOK", Name: fmt.Sprintf("hook %d", j), Address: recv.URL + fmt.Sprintf("/t%d/h%d", i, j)}); err != nil {
				b.Fatal(err)
			}
		}
		tenants = append(tenants, t.ID)
	}
	// drain publishes n/5 events, to the tenants in turn (n deliveries), then
	// runs reg until the receiver has them, and returns the CPU it took.
	drain := func(reg *channel.ChannelRegistry, n int) (cpu, wall time.Duration) {
		got.Store(0)
		want.Store(int64(n))
		for i := range n / 5 {
			tenant := tenants[i%len(tenants)]
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return reg.Publish(ctx, tx, tenant, deskkit.Event{Type: trash.EventTaskTrashed, Title: "Task 7 was trashed", Text: "by Ann",
					Data: map[string]any{"trashId": i, "resourceType": "task", "resourceId": i, "name": "Login page"}})
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		stopped := make(chan struct{})
		before, start := cputime.Process(), time.Now()
		go func() { _ = reg.Run(runCtx); close(stopped) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			b.Fatalf("the receiver got %d of %d", got.Load(), n)
		}
		wall = time.Since(start)
		cancel()
		<-stopped
		return cputime.Process() - before, wall
	}
	const costDrain = 2000
	arms := []struct {
		name string
		reg  *channel.ChannelRegistry
		cpu  time.Duration
		wall time.Duration
	}{{"bare", bare, 0, 0}, {"server", a.channels, 0, 0}, {"server-uncached", uncached.channels, 0, 0}}
	for _, arm := range arms {
		drain(arm.reg, 200) // warm: connections, prepared statements, the channel and language caches
	}
	b.ResetTimer()
	for b.Loop() {
		for i := range arms {
			c, w := drain(arms[i].reg, costDrain)
			arms[i].cpu += c
			arms[i].wall += w
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*costDrain) }
	for _, arm := range arms {
		b.ReportMetric(per(arm.cpu), arm.name+"-cpu-ns/delivery")
		if arm.name != "bare" {
			b.ReportMetric(float64(arm.cpu)/float64(arms[0].cpu), arm.name+"/bare-cpu")
			b.ReportMetric(float64(arms[0].wall)/float64(arm.wall), arm.name+"/bare-deliveries/s")
		}
	}
}

// discard is an io.Writer that keeps nothing.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkServerPublishCost publishes demo.hello to a tenant with 5
// webhooks (5 deliveries an event) two ways over one PostgreSQL database,
// in turn in every iteration: "bare", channel.ChannelRegistry.Publish in a
// transaction of its own, as examples/bench's publisher does; and "api",
// POST /api/v1/demo/event/publish through the reference server's handler
// over loopback (the token's SELECT, the JSON, the access log, the
// envelope), as a host's client publishes through the server. Run is not
// running. It reports this process's CPU per event of each and api/bare:
// what the server's HTTP wiring adds to the publishing of an event.
func BenchmarkServerPublishCost(b *testing.B) {
	ctx := context.Background()
	db := dbtest.OpenPostgres(b)
	if err := migrateAll(ctx, db); err != nil {
		b.Fatal(err)
	}
	secret := []byte("0123456789abcdef0123456789abcdef-bench")
	logger := slog.New(deskkit.LogHandler(slog.NewJSONHandler(discard{}, nil))) // as the server logs
	a, err := newApp(db, appConfig{Logger: logger, Verify: verifyConfig{secret: secret}, Channel: channelConfig{allowPrivate: true}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(a.handler)
	defer srv.Close()
	t, err := a.dir.EnsureTenant(ctx, "cost")
	if err != nil {
		b.Fatal(err)
	}
	u, err := a.dir.EnsureUser(ctx, t.ID, "admin", true)
	if err != nil {
		b.Fatal(err)
	}
	token, err := a.dir.IssueToken(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	for j := range 5 {
		p := deskkit.Principal{TenantID: t.ID, UserID: u.ID, Admin: true}
		if _, err := a.channels.Add(ctx, p, channel.Input{Type: "WEBHOOK", Name: fmt.Sprintf("hook %d", j), Address: fmt.Sprintf("http://127.0.0.1:9/h%d", j)}); err != nil {
			b.Fatal(err)
		}
	}
	client := srv.Client()
	body := `{"type":"demo.hello","title":"Hello","data":{"n":1}}`
	viaAPI := func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/demo/event/publish", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("publish: %s", res.Status)
		}
	}
	bare := func() {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return a.channels.Publish(ctx, tx, t.ID, deskkit.Event{Type: eventDemoHello, Title: "Hello", Data: map[string]any{"n": 1}})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	const events = 500
	measure := func(fn func()) time.Duration {
		before := cputime.Process()
		for range events {
			fn()
		}
		return cputime.Process() - before
	}
	measure(viaAPI) // warm: connections, prepared statements
	measure(bare)
	var cpuBare, cpuAPI time.Duration
	b.ResetTimer()
	for b.Loop() {
		cpuBare += measure(bare)
		cpuAPI += measure(viaAPI)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*events) }
	b.ReportMetric(per(cpuBare), "bare-cpu-ns/event")
	b.ReportMetric(per(cpuAPI), "api-cpu-ns/event")
	b.ReportMetric(float64(cpuAPI)/float64(cpuBare), "api/bare-cpu")
}
