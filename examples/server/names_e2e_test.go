package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// Names that look alike, through the reference server as a user reaches
// it: a username or channel name differing only in case is 409, invisible
// characters, spaces at the ends and bidirectional controls are 400 naming
// the field, and a task name keeps its ZWJ emoji but not an override.
func TestLookalikeNamesThroughTheServer(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		check := func(res response, status int, key, msg string) {
			t.Helper()
			got, _ := res.Ext["eKey"].(string)
			if res.Status != status || got != key || !strings.Contains(res.Msg, msg) {
				t.Errorf("answer %d %v %q, want %d %s with %q", res.Status, res.Ext["eKey"], res.Msg, status, key, msg)
			}
		}
		// The demo tenant has the users demo and member.
		check(f.do(f.member, http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "DEMO"}), 409, "resource_conflict", "username is already taken")
		check(f.do(f.member, http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "Demo"}), 409, "resource_conflict", "username is already taken")
		check(f.do(f.member, http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "member\u200b"}), 400, "param_validation_error", "username must not contain invisible characters")
		// The profile trims a username (verify's rule), so "member " stores no space.
		check(f.do(f.member, http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "member "}), 200, "", "")
		var u struct{ Username string }
		f.ok(f.member, http.MethodGet, "/api/v1/user/current", nil, &u)
		if u.Username != "member" {
			t.Errorf("username after PATCH \"member \": %q, want member", u.Username)
		}
		check(f.do(f.member, http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "\u202Eomed"}), 400, "param_validation_error", "username must not contain bidirectional control characters")
		check(f.do(f.member, http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "Member"}), 200, "", "")

		hook := func(name string) map[string]any {
			return map[string]any{"channelType": "WEBHOOK", "name": name, "address": "https://hooks.example.com/h"}
		}
		check(f.do(f.admin, http.MethodPost, "/api/v1/event/channel", hook("wh2")), 200, "", "")
		check(f.do(f.admin, http.MethodPost, "/api/v1/event/channel", hook("WH2")), 409, "channel_name_taken", "")
		check(f.do(f.admin, http.MethodPost, "/api/v1/event/channel", hook("wh2\u200b")), 400, "param_validation_error", "name must not contain invisible characters")
		check(f.do(f.admin, http.MethodPost, "/api/v1/event/channel", hook("wh2 ")), 400, "param_validation_error", "name must not begin or end with a space")

		check(f.do(f.admin, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 1, "name": "Fix 👩\u200d💻 laptop"}), 200, "", "")
		check(f.do(f.admin, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 1, "name": "invoice\u202Efdp.exe"}), 400, "param_validation_error", "name must not contain bidirectional control characters")
	})
}

// A trash search through the server names the deleter and the purge date,
// deletedDate plus the server's retention.
func TestSearchShowsDeleterAndPurgeDate(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		id := f.createTask(9, nil, "gone")
		f.delete("task", id)
		p := f.search("targetType=TASK&projectId=9")
		if len(p.List) != 1 {
			t.Fatalf("search: %+v", p)
		}
		e := p.List[0]
		if e.DeletedBy != f.adminP.UserID || e.DeletedByName != demoUsername || e.PurgeDate == nil || !e.PurgeDate.Equal(e.DeletedDate.Add(retention)) {
			t.Errorf("entry = %+v (purgeDate %v); want deleted by %d %q, purged %v after deletion", e, e.PurgeDate, f.adminP.UserID, demoUsername, retention)
		}
	})
}
