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
