package outbox

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// messagesSeen is a Handler that keeps each claimed event's Messages.
type messagesSeen struct {
	mu   sync.Mutex
	seen map[string]json.RawMessage
}

func (h *messagesSeen) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range batch {
		h.seen[d.Event.ID] = d.Event.Messages
	}
	return func(context.Context, Delivery) Outcome { return Outcome{OK: true} }, nil
}

func (h *messagesSeen) Recorded(context.Context, bun.Tx, []Result) error { return nil }

// An event's messages are stored with it, by the plain and the prepared
// statement alike, and a claim hands them to the handler; an event
// without (a host's strings, a row from before the column) has none.
func TestEventMessages(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		msgs := json.RawMessage(`{"title":{"k":"Task %s moved to the trash","a":[{"s":"x"}]}}`)
		plain := NewEnqueuer(db, "test", OneTarget)
		prepared := NewEnqueuer(db, "test", OneTarget)
		if err := prepared.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			e  *Enqueuer
			ev Event
		}{
			{plain, Event{TenantID: 1, ID: "msg_plain", Type: "task.trashed", Time: t0, Title: "Task x moved to the trash", Messages: msgs}},
			{prepared, Event{TenantID: 1, ID: "msg_prepared", Type: "task.trashed", Time: t0, Title: "Task x moved to the trash", Messages: msgs}},
			{prepared, Event{TenantID: 1, ID: "msg_strings", Type: "task.trashed", Time: t0, Title: "Hello"}},
		} {
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, _, err := c.e.Enqueue(ctx, tx, c.ev, []any{int64(7), nil}, t0, 0)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// A row written as before the column: no messages.
		if _, err := db.ExecContext(ctx, `INSERT INTO deskkit_outbox_events
    (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, created_at_ms)
VALUES (1, 'msg_old', 'task.trashed', ?, 'Old', '', '{}', ?)`, t0.UnixMilli(), t0.UnixMilli()); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO deskkit_outbox_deliveries
    (tenant_id, event_id, kind, target_id, status, attempts, step, due_at_ms, created_at_ms)
VALUES (1, 'msg_old', 'test', 8, 'PENDING', 0, 0, ?, ?)`, t0.UnixMilli(), t0.UnixMilli()); err != nil {
			t.Fatal(err)
		}
		h := &messagesSeen{seen: map[string]json.RawMessage{}}
		w := newWorker(t, db, h, clocktest.New(t0))
		for n := 0; n < 4; {
			got := runOnce(t, w)
			if got == 0 {
				t.Fatalf("claimed %d of 4", n)
			}
			n += got
		}
		for id, want := range map[string]string{"msg_plain": string(msgs), "msg_prepared": string(msgs), "msg_strings": "", "msg_old": ""} {
			got, ok := h.seen[id]
			if !ok || string(got) != want || (want == "" && got != nil) {
				t.Errorf("%s: messages %q (claimed %v), want %q", id, got, ok, want)
			}
		}
	})
}
