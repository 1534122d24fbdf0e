package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/cputime"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/outbox"
)

// BenchmarkSendStage measures the worker's send stage: batches of claimed
// deliveries (8, the default concurrency) opened (the channel read and
// decrypted once, each event checked once) and attempted, 8 at a time,
// against a loopback receiver answering 204; "plain" posts the same
// bodies with a plain net/http client at the same concurrency. The claim
// and the record (SQL) are not in it. The goal: ns/op of
// "worker" at most 1.25 times "plain" (0.8x the throughput).
//
//	go test -run '^$' -bench SendStage ./channel/
func BenchmarkSendStage(b *testing.B) {
	const batchSize = 8
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	data := json.RawMessage(`{"tenantId":10,"projectId":3,"trashId":42,"targetType":"TASK","targetName":"Fix the login"}`)

	b.Run("worker", func(b *testing.B) {
		db := dbtest.OpenSQLite(b)
		ctx := context.Background()
		if err := Migrate(ctx, db); err != nil {
			b.Fatal(err)
		}
		r, err := New(db, storeSecret, nil, &Config{AllowPrivateNetworks: true})
		if err != nil {
			b.Fatal(err)
		}
		hook, err := r.Add(ctx, deskkit.Principal{UserID: 1, TenantID: 10, Admin: true},
			Input{Type: "WEBHOOK", Name: "hook", Address: srv.URL + "/hook"})
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]outbox.Delivery, batchSize)
		for i := range batch {
			batch[i] = outbox.Delivery{ID: int64(i + 1), TenantID: 10, Kind: outboxKind, TargetID: hook.ID, Attempt: 1,
				Event: outbox.Event{TenantID: 10, ID: fmt.Sprintf("msg_bench_%d", i), Type: "task.trashed",
					Time: time.Now(), Title: "Task trashed", Data: data}}
		}
		h := (*handler)(r)
		b.ResetTimer()
		for i := 0; i < b.N; i += batchSize {
			attempt, err := h.Open(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, d := range batch {
				wg.Go(func() {
					if o := attempt(ctx, d); !o.OK {
						b.Errorf("attempt: %+v", o)
					}
				})
			}
			wg.Wait()
		}
	})

	b.Run("plain", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: batchSize}, Timeout: DefaultTimeout}
		body, _ := json.Marshal(map[string]any{"type": "task.trashed", "timestamp": time.Now(), "data": data})
		b.ResetTimer()
		for i := 0; i < b.N; i += batchSize {
			var wg sync.WaitGroup
			for range batchSize {
				wg.Go(func() {
					resp, err := client.Post(srv.URL+"/hook", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				})
			}
			wg.Wait()
		}
	})
}

// BenchmarkOpenChannels measures what a claimed batch costs to open its
// channels: 8 deliveries to 8 webhook channels of 2 tenants, on SQLite and
// PostgreSQL. "each-batch" is the read before the cache (a9392d3's Open:
// one query per tenant, every row decrypted and its target prepared, for
// every batch); "cached" is openChannels with no channel changed since the
// last batch (one query for the versions, nothing decrypted); "changed"
// is openChannels with every channel changed since (the versions, then the
// rows, all decrypted: the worst case). One op is one batch; cpu-ns/op is
// the process's CPU time per batch (the database's own is not in it), which
// a loaded machine disturbs less than the wall time.
//
//	go test -run '^$' -bench OpenChannels ./channel/
func BenchmarkOpenChannels(b *testing.B) {
	for _, backend := range []dbtest.Backend{dbtest.SQLite, dbtest.Postgres} {
		b.Run(string(backend), func(b *testing.B) {
			db := dbtest.Open(b, backend)
			ctx := context.Background()
			if err := Migrate(ctx, db); err != nil {
				b.Fatal(err)
			}
			r, err := New(db, storeSecret, nil, &Config{AllowPrivateNetworks: true})
			if err != nil {
				b.Fatal(err)
			}
			var keys []channelKey
			for i := range 8 {
				tenantID := int64(10 + i%2)
				a, err := r.Add(ctx, deskkit.Principal{UserID: 1, TenantID: tenantID, Admin: true},
					Input{Type: "WEBHOOK", Name: fmt.Sprintf("hook%d", i), Address: fmt.Sprintf("https://hooks.example.com/%d?token=tok%d", i, i)})
				if err != nil {
					b.Fatal(err)
				}
				keys = append(keys, channelKey{tenantID, a.ID})
			}
			b.Run("each-batch", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					if n, err := openEachBatch(ctx, r, keys); err != nil || n != len(keys) {
						b.Fatal(n, err)
					}
				}
			})
			b.Run("cached", func(b *testing.B) {
				if _, err := r.openChannels(ctx, keys, nil); err != nil {
					b.Fatal(err)
				}
				defer reportCPU(b)()
				for b.Loop() {
					if chans, err := r.openChannels(ctx, keys, nil); err != nil || len(chans) != len(keys) {
						b.Fatal(len(chans), err)
					}
				}
			})
			b.Run("changed", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					r.chans.mu.Lock()
					clear(r.chans.items)
					r.chans.lru.Init()
					r.chans.mu.Unlock()
					if chans, err := r.openChannels(ctx, keys, nil); err != nil || len(chans) != len(keys) {
						b.Fatal(len(chans), err)
					}
				}
			})
		})
	}
}

// openEachBatch is how Open read a batch's channels before the cache: one
// query per tenant, each row decrypted and its target prepared. It
// returns how many it opened.
func openEachBatch(ctx context.Context, r *ChannelRegistry, keys []channelKey) (int, error) {
	ids := map[int64][]int64{}
	for _, k := range keys {
		ids[k.tenantID] = append(ids[k.tenantID], k.id)
	}
	n := 0
	for tenantID, list := range ids {
		rows, err := r.rowsByIDs(ctx, tenantID, list)
		if err != nil {
			return n, err
		}
		for _, row := range rows {
			s, err := r.openRow(deskkit.Localizer{}, tenantID, row)
			if err != nil {
				return n, err
			}
			if t := kindOf(s.Type).Target(s.Name, s.Address, s.Secret); s.Type == Webhook && t.Parsed == nil {
				return n, fmt.Errorf("channel %d: the webhook's address or secret does not parse", s.ID)
			}
			n++
		}
	}
	return n, nil
}

// reportCPU starts counting the process's CPU time; the function it
// returns reports it per op as cpu-ns/op.
func reportCPU(b *testing.B) func() {
	start := cputime.Process()
	return func() { b.ReportMetric(float64(cputime.Process()-start)/float64(b.N), "cpu-ns/op") }
}
