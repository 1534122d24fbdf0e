package channel

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/outbox"
)

// The public statuses are the outbox's, which the log stores.
func TestDeliveryStatuses(t *testing.T) {
	for _, c := range [][2]string{
		{DeliveryPending, outbox.Pending},
		{DeliverySucceeded, outbox.Succeeded},
		{DeliveryFailed, outbox.Failed},
	} {
		if c[0] != c[1] {
			t.Errorf("status %q, the outbox's %q", c[0], c[1])
		}
	}
}

// An event that another writer put in the outbox malformed fails for good
// at its first attempt, without a send.
func TestMalformedEventFails(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := newStoreFixture(t, db)
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
		t.Cleanup(srv.Close)
		r, err := New(db, storeSecret, nil, &Config{Now: f.clock.Now, AllowPrivateNetworks: true})
		if err != nil {
			t.Fatal(err)
		}
		hook, err := r.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: "hook", Address: srv.URL + "/h"})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = outbox.NewEnqueuer(db, outboxKind, outbox.OneTarget).Enqueue(ctx, db, outbox.Event{TenantID: 10, ID: "msg_bad", Type: "x.y", Time: f.clock.Now(),
			Title: "bad", Data: json.RawMessage(`[1]`)}, []any{hook.ID, nil}, f.clock.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := r.runOnce(ctx); n != 1 || err != nil {
			t.Fatalf("run once: %d, %v", n, err)
		}
		page, err := r.Deliveries(ctx, f.ann, hook.ID, DeliveryFilter{Status: DeliveryFailed}, 1, 10)
		if err != nil || page.Total != 1 || !strings.HasPrefix(page.List[0].LastError, "the event is malformed") || hits.Load() != 0 {
			t.Errorf("deliveries %+v, %v; %d sends", page, err, hits.Load())
		}
	})
}
