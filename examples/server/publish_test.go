package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// catalogue returns the event types the holder of token reads from GET
// /api/v1/event/types, by name.
func (f *fixture) catalogue(token string) []string {
	f.t.Helper()
	var types []deskkit.EventType
	f.ok(token, http.MethodGet, "/api/v1/event/types", nil, &types)
	var names []string
	for _, e := range types {
		names = append(names, e.Name)
	}
	return names
}

// outboxRows returns the rows of the outbox's events and deliveries.
func (f *fixture) outboxRows() (events, deliveries int) {
	f.t.Helper()
	ctx := context.Background()
	if err := f.db.NewRaw("SELECT count(*) FROM deskkit_outbox_events").Scan(ctx, &events); err != nil {
		f.t.Fatal(err)
	}
	if err := f.db.NewRaw("SELECT count(*) FROM deskkit_outbox_deliveries").Scan(ctx, &deliveries); err != nil {
		f.t.Fatal(err)
	}
	return events, deliveries
}

// The catalogue is the server's code, the same for every tenant: an
// admin's publish of a type outside it is 400, naming "type" and listing
// the registered types, and registers nothing that another tenant (or
// the admin's own) then sees.
func TestDemoPublishCatalogue(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		other := f.token("other", "yuri", false)
		var want []string
		for _, e := range slices.Concat(channel.EventTypes(), trash.EventTypes(), verify.EventTypes(), demoEventTypes()) {
			want = append(want, e.Name)
		}
		slices.Sort(want)
		if d := cmp.Diff(want, f.catalogue(other)); d != "" {
			t.Fatalf("catalogue at start (-want +got):\n%s", d)
		}

		res := f.do(f.admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "acme.invoice.paid", "title": "mine"})
		wantMsg := `type "acme.invoice.paid" is not a registered event type; the registered types are ` + strings.Join(want, ", ")
		if res.Status != http.StatusBadRequest || res.Ext["eKey"] != "param_validation_error" || !strings.HasPrefix(res.Msg, wantMsg) {
			t.Errorf("publish of an unknown type: %d %v %q\nwant 400 param_validation_error %q...", res.Status, res.Ext["eKey"], res.Msg, wantMsg)
		}
		for _, token := range []string{other, f.outside, f.member, f.admin} {
			if d := cmp.Diff(want, f.catalogue(token)); d != "" {
				t.Errorf("catalogue after another tenant's publish (-want +got):\n%s", d)
			}
		}
		if ev, dl := f.outboxRows(); ev != 0 || dl != 0 {
			t.Errorf("a refused publish wrote %d events and %d deliveries", ev, dl)
		}

		// The demo's own type, registered in code, is published.
		var pub published
		f.ok(f.admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "Hello", "data": map[string]any{"n": 1}}, &pub)
		if !strings.HasPrefix(pub.EventID, "msg_") {
			t.Errorf("published %+v", pub)
		}
	})
}

// Data keys that fold to one deskkit sets are refused 400, naming the key,
// and nothing is written: no event, no delivery; nested, they are the
// host's and go through.
func TestDemoPublishFoldedKeys(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		// Stored, never sent: nothing runs the workers here.
		f.ok(f.admin, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "ops", "address": "https://hooks.example.com/ops"}, nil)
		for _, c := range []struct {
			data string
			key  string
		}{
			{`{"TenantID":999999,"TENANTID":424242}`, "TENANTID"},
			{`{"TENANTID":424242}`, "TENANTID"},
			{`{"Actor":{"id":1,"name":"Mallory"}}`, "Actor"},
			{`{"n":1,"tenant\u0049D":424242}`, "tenantID"},
		} {
			res := f.do(f.admin, http.MethodPost, "/api/v1/demo/event/publish", `{"type":"demo.hello","title":"x","data":`+c.data+`}`)
			if res.Status != http.StatusBadRequest || res.Ext["eKey"] != "param_validation_error" || !strings.HasPrefix(res.Msg, `data key "`+c.key+`" differs only in case from`) {
				t.Errorf("data %s: %d %v %q, want 400 naming %q", c.data, res.Status, res.Ext["eKey"], res.Msg, c.key)
			}
		}
		if ev, dl := f.outboxRows(); ev != 0 || dl != 0 {
			t.Fatalf("refused publishes wrote %d events and %d deliveries", ev, dl)
		}

		f.ok(f.admin, http.MethodPost, "/api/v1/demo/event/publish", `{"type":"demo.hello","title":"x","data":{"tenantId":9,"x":{"TenantID":9}}}`, nil)
		if ev, dl := f.outboxRows(); ev != 1 || dl != 1 {
			t.Fatalf("an accepted publish wrote %d events and %d deliveries, want 1 and 1", ev, dl)
		}
		var stored string
		if err := db.NewRaw("SELECT data FROM deskkit_outbox_events").Scan(context.Background(), &stored); err != nil {
			t.Fatal(err)
		}
		var data struct {
			TenantID int64          `json:"tenantId"`
			X        map[string]any `json:"x"`
		}
		if err := json.Unmarshal([]byte(stored), &data); err != nil || data.TenantID != f.adminP.TenantID || data.X["TenantID"] != 9.0 {
			t.Errorf("stored data %s (%v), want tenantId %d", stored, err, f.adminP.TenantID)
		}
	})
}
