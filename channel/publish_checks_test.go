package channel_test

// What Publish refuses before it writes anything: a type outside the
// host's catalogue.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// countOutbox returns the rows of the outbox's events and deliveries.
func countOutbox(t *testing.T, db bun.IDB) (events, deliveries int) {
	t.Helper()
	ctx := context.Background()
	if err := db.NewRaw("SELECT count(*) FROM deskkit_outbox_events").Scan(ctx, &events); err != nil {
		t.Fatal(err)
	}
	if err := db.NewRaw("SELECT count(*) FROM deskkit_outbox_deliveries").Scan(ctx, &deliveries); err != nil {
		t.Fatal(err)
	}
	return events, deliveries
}

func typeNames(types []deskkit.EventType) []string {
	out := make([]string, 0, len(types))
	for _, e := range types {
		out = append(out, e.Name)
	}
	return out
}

// A type outside the catalogue is refused in every tenant, naming "type"
// and listing the registered types; publishing it registers nothing, so
// that another tenant's catalogue stays the host's.
func TestPublishUnknownType(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		before := typeNames(f.r.EventTypes())
		want := `type "tenant.x.own" is not a registered event type; the registered types are ` +
			`channel.disabled, sprint.trashed, task.restored, task.trashed, tasks.archived (GET /api/v1/event/types describes them)`
		for _, tenant := range []int64{10, 20, 10} {
			err := f.r.Publish(ctx, db, tenant, deskkit.Event{Type: "tenant.x.own", Title: "mine"})
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || !errors.Is(err, deskkit.ErrInvalid) || ie.Field != "type" || ie.ClientMessage() != want {
				t.Fatalf("tenant %d publishes an unknown type: %v\nwant %s", tenant, err, want)
			}
		}
		if d := cmp.Diff(before, typeNames(f.r.EventTypes())); d != "" {
			t.Errorf("the catalogue changed after a publish (-before +after):\n%s", d)
		}
		if ev, dl := countOutbox(t, db); ev != 0 || dl != 0 {
			t.Errorf("refused publishes wrote %d events and %d deliveries", ev, dl)
		}

		// A long catalogue is cut in the message, with how many more.
		var many []deskkit.EventType
		for i := range 60 {
			many = append(many, deskkit.EventType{Name: fmt.Sprintf("bulk.t%02d", i), Description: "One of many."})
		}
		if err := f.r.RegisterEventTypes(many...); err != nil {
			t.Fatal(err)
		}
		err := f.r.Publish(ctx, db, 10, deskkit.Event{Type: "tenant.x.own", Title: "mine"})
		if !isInputError(err, "type") || !strings.Contains(err.Error(), "bulk.t48, bulk.t49 and 15 more (") {
			t.Errorf("a long catalogue: %v", err)
		}
	})
}
