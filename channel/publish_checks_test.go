package channel_test

// What Publish refuses before it writes anything: a type outside the
// host's catalogue, and data keys that a receiver matching keys without
// case would read in place of deskkit's.

import (
	"context"
	"encoding/json"
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
			`channel.disabled, channel.failing, channel.secret.revealed, channel.secret.rotated, sprint.trashed, task.restored, task.trashed, tasks.archived (GET /api/v1/event/types describes them)`
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
		if !isInputError(err, "type") || !strings.Contains(err.Error(), "bulk.t48, bulk.t49 and 18 more (") {
			t.Errorf("a long catalogue: %v", err)
		}
	})
}

// Top-level data keys that differ from "tenantId" or "actor" in case
// alone are refused, naming the key, and write nothing; the same keys
// deeper down are the host's, and delivered as they are. What a receiver
// decoding keys without case (encoding/json) reads as tenantId is always
// the tenant.
func TestPublishFoldedKeys(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		type shouting struct {
			ID int64 `json:"TENANTid"`
		}
		for _, c := range []struct {
			data any
			key  string
		}{
			{map[string]any{"TenantID": 999999, "TENANTID": 424242}, "TENANTID"},
			{map[string]any{"tenantid": 1}, "tenantid"},
			{map[string]any{"Actor": map[string]any{"id": 1, "name": "Mallory"}, "actor": nil}, "Actor"},
			{map[string]any{"ACTOR": "x"}, "ACTOR"},
			{shouting{ID: 7}, "TENANTid"},
			{json.RawMessage(`{"tenant\u0049D":424242}`), "tenantID"},
			{json.RawMessage(`{"n":1,"\u0041ctor":{"id":9}}`), "Actor"},
		} {
			for _, inTx := range []bool{false, true} {
				ev := newEvent("task.trashed")
				ev.Data = c.data
				err := f.r.Publish(ctx, db, 10, ev)
				if inTx { // the caller's transaction, which commits
					err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return f.r.Publish(ctx, tx, 10, ev) })
				}
				var ie *deskkit.InputError
				if !errors.As(err, &ie) || !errors.Is(err, deskkit.ErrInvalid) || ie.Field != "data" || !strings.Contains(ie.Rule.String(), fmt.Sprintf("key %q", c.key)) {
					b, _ := json.Marshal(c.data)
					t.Errorf("publish %s: %v; want an input error on data naming %q", b, err, c.key)
				}
			}
		}
		if ev, dl := countOutbox(t, db); ev != 0 || dl != 0 || f.run(t) != 0 {
			t.Errorf("refused publishes wrote %d events and %d deliveries", ev, dl)
		}
		if l := f.deliveries(t, hook.ID); len(l) != 0 {
			t.Errorf("refused publishes left %d deliveries", len(l))
		}
	})
}

// Accepted data: deskkit's own keys as they are ("tenantId" replaced by
// the tenant), folded keys below the top level, and an escaped
// "tenantId", which is "tenantId" once decoded and must not survive
// beside the tenant's (a receiver would read the last of the two).
func TestPublishDataKeys(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		for _, c := range []struct {
			data string
			want map[string]any
		}{
			{`{"tenantId":999999,"actor":{"id":1,"name":"Ann"},"x":{"TenantID":5,"ACTOR":6}}`,
				map[string]any{"tenantId": 10.0, "actor": map[string]any{"id": 1.0, "name": "Ann"}, "x": map[string]any{"TenantID": 5.0, "ACTOR": 6.0}}},
			{`{"tenant\u0049d":424242,"n":1}`, map[string]any{"tenantId": 10.0, "n": 1.0}},
			{`{"tenantId":1,"tenantId":2}`, map[string]any{"tenantId": 10.0}},
			{`{"name":"\u003cActor\u003e","TENANT":1}`, map[string]any{"tenantId": 10.0, "name": "<Actor>", "TENANT": 1.0}},
		} {
			ev := newEvent("task.trashed")
			ev.Data = json.RawMessage(c.data)
			f.publish(t, 10, ev)
			if n := f.run(t); n != 1 {
				t.Fatalf("%s: claimed %d, want 1", c.data, n)
			}
			_, body := f.recv.last(t)
			var got struct {
				Data map[string]any `json:"data"`
			}
			var folded struct {
				Data struct {
					TenantID int64 `json:"tenantId"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, &folded); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got.Data); d != "" || folded.Data.TenantID != 10 {
				t.Errorf("%s delivered %s: tenantId read without case %d (-want +got):\n%s", c.data, body, folded.Data.TenantID, d)
			}
		}
		if l := f.deliveries(t, hook.ID); len(l) != 4 {
			t.Errorf("%d deliveries, want 4", len(l))
		}
	})
}
