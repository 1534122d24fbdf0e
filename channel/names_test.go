package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	dkmigrate "github.com/deskkit/deskkit/internal/migrate"
)

// Channel names are unique within the tenant without case, and refuse
// invisible characters, spaces at the ends and bidirectional controls.
func TestNamesUniqueWithoutCase(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newStoreFixture(t, db)
		ctx := context.Background()
		f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "wh2", Address: hookURL(1)})
		other := f.add(t, f.ann, Input{Type: "EMAIL", Name: "mail", Address: "a@example.com"})
		for _, name := range []string{"WH2", "Wh2"} {
			// The folded index refuses it: Add has no check of its own.
			if _, err := f.r.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: name, Address: hookURL(2)}); err != ErrNameTaken {
				t.Errorf("add %q beside wh2: %v; want ErrNameTaken", name, err)
			}
			if _, err := f.r.Replace(ctx, f.ann, Input{ID: other.ID, Type: "EMAIL", Name: name, Address: "a@example.com"}); err != ErrNameTaken {
				t.Errorf("rename to %q beside wh2: %v; want ErrNameTaken", name, err)
			}
		}
		for _, c := range []struct{ name, rule string }{
			{"wh2\u200b", "invisible characters"},
			{"wh2 ", "must not begin or end with a space"},
			{"\u202Ewh2", "bidirectional control characters"},
		} {
			_, err := f.r.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: c.name, Address: hookURL(3)})
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != "name" || !strings.Contains(ie.Rule.String(), c.rule) {
				t.Errorf("add %q: %v; want name %s", c.name, err, c.rule)
			}
		}
		// The same name in another tenant, and an emoji with its style.
		f.add(t, f.eve, Input{Type: "WEBHOOK", Name: "WH2", Address: hookURL(4)})
		f.add(t, f.ann, Input{Type: "WEBHOOK", Name: "⚠️ alerts", Address: hookURL(5)})
		if _, err := f.r.Add(ctx, f.ann, Input{Type: "WEBHOOK", Name: "⚠ ALERTS", Address: hookURL(6)}); err != ErrNameTaken {
			t.Errorf("add ⚠ ALERTS beside ⚠️ alerts: %v; want ErrNameTaken", err)
		}
		list, err := f.r.List(ctx, f.ann, "WEBHOOK")
		if err != nil || len(list) != 2 {
			t.Fatalf("ann's webhooks: %+v, %v; want wh2 and the alerts", list, err)
		}
	})
}

// The migration that adds the folded names meets a table that already
// holds names folding to one key: the older channel keeps its name, the
// newer is renamed and reported.
func TestMigrationResolvesFoldedChannelNames(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := dkmigrate.Run(ctx, db, "deskkit_channel_migrations", migrationFiles); err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct {
			id, tenant, created int64
			name                string
		}{
			{1, 10, 500, "WH2"},
			{2, 10, 100, "wh2"},
			{3, 10, 900, "wh2 "},
			{4, 20, 50, "wh2"},
			{5, 10, 300, "other"},
		} {
			if _, err := db.ExecContext(ctx, `INSERT INTO deskkit_channels
    (id, tenant_id, channel_type, name, address_enc, created_at_ms, updated_at_ms) VALUES (?, ?, 'WEBHOOK', ?, 'v1:x', ?, ?)`,
				r.id, r.tenant, r.name, r.created, r.created); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if err := dkmigrate.Run(ctx, db, "deskkit_channel_migrations", migrationFiles, foldedNamesStep(slog.New(slog.NewJSONHandler(&buf, nil)))); err != nil {
			t.Fatalf("migrate over collisions: %v", err)
		}
		var got []struct {
			ID     int64  `bun:"id"`
			Name   string `bun:"name"`
			Folded string `bun:"name_folded"`
		}
		if err := db.NewRaw("SELECT id, name, name_folded FROM deskkit_channels ORDER BY id").Scan(ctx, &got); err != nil {
			t.Fatal(err)
		}
		want := []struct {
			ID     int64  `bun:"id"`
			Name   string `bun:"name"`
			Folded string `bun:"name_folded"`
		}{
			{1, "WH2 (2)", "wh2 (2)"},
			{2, "wh2", "wh2"},
			{3, "wh2 (3)", "wh2 (3)"},
			{4, "wh2", "wh2"},
			{5, "other", "other"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("channels (-want +got):\n%s", diff)
		}
		var renamed []string
		for line := range bytes.Lines(buf.Bytes()) {
			var r struct {
				Level   string `json:"level"`
				Kept    int64  `json:"kept_id"`
				ID      int64  `json:"renamed_id"`
				NewName string `json:"new_name"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			if r.Level != "WARN" || r.Kept != 2 {
				t.Errorf("report %s: want WARN, kept channel 2", line)
			}
			renamed = append(renamed, r.NewName)
		}
		if diff := cmp.Diff([]string{"WH2 (2)", "wh2 (3)"}, renamed); diff != "" {
			t.Errorf("reported renames (-want +got):\n%s", diff)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO deskkit_channels
    (id, tenant_id, channel_type, name, name_folded, address_enc, created_at_ms, updated_at_ms) VALUES (6, 10, 'EMAIL', 'Wh2', 'wh2', 'v1:x', 1, 1)`); !nameTaken(err) {
			t.Errorf("a second key wh2 in tenant 10: %v; want the folded index to refuse it", err)
		}
	})
}
