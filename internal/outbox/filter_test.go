package outbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestListFilters: List keeps the deliveries of a target that its filter
// picks (status, event types, a creation range from inclusive to
// exclusive, each alone and together), counts them, and no other target's
// or tenant's, on both databases.
func TestListFilters(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		// Six events an hour apart, alternating types; each to target 7,
		// and the first to target 8 and to another tenant's target 7.
		for i, id := range []string{"msg_a", "msg_b", "msg_c", "msg_d", "msg_e", "msg_f"} {
			ev := event(id)
			if i%2 == 1 {
				ev.Type = "task.restored"
			}
			enqueue(t, db, ev, clock.Now(), 7)
			if i == 0 {
				enqueue(t, db, event("msg_other_target"), clock.Now(), 8)
				enqueue(t, db, tenantEvent(2, "msg_other_tenant"), clock.Now(), 7)
			}
			clock.Advance(time.Hour)
		}
		at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
		for _, c := range []struct {
			name string
			f    Filter
			want string // event ids, newest first
		}{
			{"none", Filter{}, "msg_f msg_e msg_d msg_c msg_b msg_a"},
			{"type", Filter{Types: []string{"task.restored"}}, "msg_f msg_d msg_b"},
			{"two types", Filter{Types: []string{"task.restored", "task.trashed"}}, "msg_f msg_e msg_d msg_c msg_b msg_a"},
			{"unknown type", Filter{Types: []string{"task.gone"}}, ""},
			{"from", Filter{From: at(4)}, "msg_f msg_e"},
			{"to", Filter{To: at(2)}, "msg_b msg_a"},
			{"range", Filter{From: at(1), To: at(3)}, "msg_c msg_b"},
			{"range and type", Filter{From: at(1), To: at(4), Types: []string{"task.trashed"}}, "msg_c"},
			{"status", Filter{Status: Failed}, ""},
			{"status and range", Filter{Status: Pending, From: at(5)}, "msg_f"},
		} {
			total, list, err := List(ctx, db, 1, "test", 7, c.f, 0, 10)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var got []string
			for _, in := range list {
				got = append(got, in.EventID)
			}
			if strings.Join(got, " ") != c.want || total != len(got) {
				t.Errorf("%s: %d deliveries %v, want %q", c.name, total, got, c.want)
			}
		}
		// A page past the first counts them all.
		total, list, err := List(ctx, db, 1, "test", 7, Filter{Types: []string{"task.trashed"}}, 2, 2)
		if err != nil || total != 3 || len(list) != 1 || list[0].EventID != "msg_a" {
			t.Errorf("second page: %d %v %v", total, list, err)
		}
	})
}

// TestSQLiteListRangeUsesItsIndex: on SQLite a target's deliveries in a
// creation range are counted through deskkit_outbox_target_created_idx,
// its range included, not by walking every delivery of the target, and a
// page of them, newest first, is read in the index's order (no sort), with
// and without ANALYZE's statistics.
func TestSQLiteListRangeUsesItsIndex(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	migrated(t, db)
	seedBacklog(t, db, 200, 2, 4, true)
	from, to := t0.UnixMilli(), t0.Add(time.Hour).UnixMilli()
	count := "SELECT count(*) FROM deskkit_outbox_deliveries AS d WHERE d.tenant_id = ? AND d.kind = ? AND d.target_id = ? AND d.created_at_ms >= ? AND d.created_at_ms < ?"
	page := "SELECT d.id FROM deskkit_outbox_deliveries AS d WHERE d.tenant_id = ? AND d.kind = ? AND d.target_id = ? AND d.created_at_ms >= ? ORDER BY d.created_at_ms DESC, d.id DESC LIMIT 10 OFFSET 20"
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := db.ExecContext(context.Background(), "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		plan := strings.Join(sqlitePlan(t, db, true, count, 1, "test", 7, from, to), "\n")
		if !strings.Contains(plan, "deskkit_outbox_target_created_idx (tenant_id=? AND kind=? AND target_id=? AND created_at_ms>? AND created_at_ms<?)") {
			t.Errorf("analyzed %v: the range count does not seek the range in its index:\n%s", analyzed, plan)
		}
		plan = strings.Join(sqlitePlan(t, db, true, page, 1, "test", 7, from), "\n")
		if !strings.Contains(plan, "deskkit_outbox_target_created_idx (tenant_id=? AND kind=? AND target_id=? AND created_at_ms>?)") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("analyzed %v: a page is not read in the index's order:\n%s", analyzed, plan)
		}
	}
}

// TestPostgresListRangeUsesItsIndex: on PostgreSQL a target's deliveries in
// a creation range are counted and paged through
// deskkit_outbox_target_created_idx with the range in its index condition,
// the page in the index's order (no sort). Sequential scans are turned off
// for the statement's session, so that the plan shows what the index
// offers rather than what a small test table invites.
func TestPostgresListRangeUsesItsIndex(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	migrated(t, db)
	ctx := context.Background()
	clock := clocktest.New(t0)
	for i := range 50 {
		enqueue(t, db, event(fmt.Sprintf("msg_%02d", i)), clock.Now(), 7, 8)
		clock.Advance(time.Minute)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	from, to := t0.Add(10*time.Minute).UnixMilli(), t0.Add(20*time.Minute).UnixMilli()
	for _, q := range []string{
		"EXPLAIN SELECT count(*) FROM deskkit_outbox_deliveries AS d WHERE d.tenant_id = 1 AND d.kind = 'test' AND d.target_id = 7 AND d.created_at_ms >= ? AND d.created_at_ms < ?",
		"EXPLAIN SELECT d.id FROM deskkit_outbox_deliveries AS d WHERE d.tenant_id = 1 AND d.kind = 'test' AND d.target_id = 7 AND d.created_at_ms >= ? AND d.created_at_ms < ? ORDER BY d.created_at_ms DESC, d.id DESC LIMIT 10",
	} {
		var plan []string
		if err := conn.NewRaw(q, from, to).Scan(ctx, &plan); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "deskkit_outbox_target_created_idx") || !strings.Contains(text, "created_at_ms >=") || strings.Contains(text, "Sort") {
			t.Errorf("%s\ndoes not read the range through its index in order:\n%s", q, text)
		}
	}
	if _, err := conn.ExecContext(ctx, "RESET enable_seqscan"); err != nil {
		t.Fatal(err)
	}
}
