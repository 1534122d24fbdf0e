package channel

import (
	"context"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// cancelAfterEventInsert cancels a publish's context once the event's row
// is written, as a connection lost between two statements would end it.
type cancelAfterEventInsert struct{ cancel context.CancelFunc }

func (h cancelAfterEventInsert) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (h cancelAfterEventInsert) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	// On SQLite the event's INSERT is a statement of its own; on
	// PostgreSQL one statement (WITH ... INSERT) writes the event and its
	// deliveries, and the cancel comes before the commit.
	if h.cancel != nil && e.Err == nil && strings.Contains(e.Query, "INSERT INTO") && strings.Contains(e.Query, "deskkit_outbox_events") {
		h.cancel()
	}
}

// TestPublishOutsideTransactionIsAtomic: Publish given the database, not a
// transaction, writes the event and its deliveries together. Before, they
// were two statements: a publish that failed between them (the reference
// server's publish route answered 503 when the database went away) left
// the event without deliveries, and the client's retry with the same id,
// which publishing is idempotent on, answered 200 and added nothing: the
// event was never delivered.
func TestPublishOutsideTransactionIsAtomic(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		// On PostgreSQL the publish is one statement, atomic by itself;
		// the plain one (not prepared) shows the query hook where the
		// cancel comes, after it and before the commit.
		r, err := New(db, storeSecret, nil, &Config{Now: f.clock.Now, PlainStatements: true})
		if err != nil {
			t.Fatal(err)
		}
		f.r = r
		f.add(t, f.ann, Input{Type: string(Webhook), Name: "ops", Address: hookURL(1)})
		if err := f.r.RegisterEventTypes(deskkit.EventType{Name: "demo.atomic", Description: "A test event.", Example: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		ev := deskkit.Event{ID: deskkit.NewEventID(), Type: "demo.atomic", Title: "atomic"}

		ctx, cancel := context.WithCancel(context.Background())
		db.AddQueryHook(cancelAfterEventInsert{cancel})
		err = f.r.Publish(ctx, db, f.ann.TenantID, ev)
		cancel()
		if err == nil {
			t.Fatal("Publish succeeded with its context cancelled after the event's insert")
		}
		counts := func() (events, deliveries int) {
			ctx := context.Background()
			events, err := db.NewSelect().Table("deskkit_outbox_events").Where("event_id = ?", ev.ID).Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			deliveries, err = db.NewSelect().Table("deskkit_outbox_deliveries").Where("event_id = ?", ev.ID).Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return events, deliveries
		}
		if e, d := counts(); e != 0 || d != 0 {
			t.Errorf("after the failed publish: %d event rows and %d deliveries, want neither", e, d)
		}

		// The client retries with the same id: the event is delivered.
		if err := f.r.Publish(context.Background(), db, f.ann.TenantID, ev); err != nil {
			t.Fatal(err)
		}
		if e, d := counts(); e != 1 || d != 1 {
			t.Errorf("after the retry: %d event rows and %d deliveries, want 1 and 1", e, d)
		}
	})
}
