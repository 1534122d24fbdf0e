package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// Issue 28, fault 5: a JSON body holding bytes that are not UTF-8 was
// answered 200 by the demo, profile and channel routes, and stored with
// each bad byte as U+FFFD; the same bytes in a query were refused. Every
// body route now answers 400 naming the field, with the query's rule, and
// stores nothing; an escape of half a surrogate pair likewise.
func TestInvalidUTF8BodiesStoreNothing(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db)
		ctx := context.Background()
		var before json.RawMessage
		f.ok(f.admin, http.MethodGet, "/api/v1/user/current", nil, &before)

		bad := "bad \xff\xfe"
		cases := []struct {
			name, method, path, body, msg string
		}{
			{"demo task", http.MethodPost, "/api/v1/demo/task", `{"projectId": 4, "name": "` + bad + `"}`, "name must be valid UTF-8"},
			{"demo sprint", http.MethodPost, "/api/v1/demo/sprint", `{"projectId": 4, "name": "` + bad + `"}`, "name must be valid UTF-8"},
			{"demo task, surrogate", http.MethodPost, "/api/v1/demo/task", `{"projectId": 4, "name": "bad \udc00"}`, `name must be valid UTF-8; \udc00 alone is half of a surrogate pair, no character`},
			{"profile first name", http.MethodPatch, "/api/v1/user/current", `{"firstName": "` + bad + `"}`, "firstName must be valid UTF-8"},
			{"profile title after a good field", http.MethodPatch, "/api/v1/user/current", `{"lastName": "Li", "title": "` + bad + `"}`, "title must be valid UTF-8"},
			{"profile address, surrogate", http.MethodPatch, "/api/v1/user/current", `{"address": "\ud800 Road"}`, `address must be valid UTF-8; \ud800 alone is half of a surrogate pair, no character`},
			{"channel add", http.MethodPost, "/api/v1/event/channel", `{"channelType": "EMAIL", "name": "` + bad + `", "address": "ops@example.com"}`, "name must be valid UTF-8"},
			{"channel add, address", http.MethodPost, "/api/v1/event/channel", "{\"channelType\": \"EMAIL\", \"name\": \"Ops\", \"address\": \"ops\xff@example.com\"}", "address must be valid UTF-8"},
			{"channel replace", http.MethodPut, "/api/v1/event/channel", `{"id": 1, "channelType": "EMAIL", "name": "` + bad + `", "address": "ops@example.com"}`, "name must be valid UTF-8"},
			{"channel test", http.MethodPost, "/api/v1/event/channel/test", `{"channelType": "EMAIL", "name": "` + bad + `", "address": "ops@example.com"}`, "name must be valid UTF-8"},
			{"e-mail code", http.MethodPost, "/api/v1/user/current/email/send", "{\"bizKey\": \"BIND_EMAIL\", \"toAddress\": [[\"ann\xff@example.com\"]]}", "toAddress must be valid UTF-8"},
		}
		for _, c := range cases {
			res := f.do(f.admin, c.method, c.path, c.body)
			if res.Status != http.StatusBadRequest || res.Code != "E0" || res.Msg != c.msg {
				t.Errorf("%s: %d %s %q, want 400 E0 %q", c.name, res.Status, res.Code, res.Msg, c.msg)
			}
		}
		// The query's rule, for the record: the same words.
		if res := f.do(f.admin, http.MethodGet, "/api/v1/task/trash/search?targetType=TASK&targetName=bad+%FF%FE", nil); res.Status != http.StatusBadRequest || res.Msg != "targetName must be valid UTF-8" {
			t.Errorf("the same bytes in a query: %d %q", res.Status, res.Msg)
		}

		for _, table := range []string{"deskkit_demo_tasks", "deskkit_demo_sprints", "deskkit_channels"} {
			n, err := db.NewSelect().Table(table).Count(ctx)
			if err != nil || n != 0 {
				t.Errorf("%s holds %d rows (%v), want none", table, n, err)
			}
		}
		var after json.RawMessage
		f.ok(f.admin, http.MethodGet, "/api/v1/user/current", nil, &after)
		if string(after) != string(before) {
			t.Errorf("the profile changed:\nbefore %s\nafter  %s", before, after)
		}
		// What is valid is stored as written, a surrogate pair included.
		var c created
		f.ok(f.admin, http.MethodPost, "/api/v1/demo/task", `{"projectId": 4, "name": "ok \ud83d\ude00 \u4e2d"}`, &c)
		var task demoTask
		f.ok(f.admin, http.MethodGet, "/api/v1/demo/task/"+strconv.FormatInt(c.ID, 10), nil, &task)
		if task.Name != "ok 😀 中" {
			t.Errorf("stored %q", task.Name)
		}
	})
}
