package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestDeliveryFilterForm: the channel page's deliveries filter by status,
// event type (a select of the types the channel's subscription takes) and
// a creation range typed in the reader's zone (named beside the fields),
// in English and Chinese; the pager keeps the filter; a time that does not
// parse, or from at or after to, is the page again, answered 400, with the
// registry's message naming the field and the values as typed.
func TestDeliveryFilterForm(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f, reg := setupChannels(t, db)
		if err := reg.RegisterEventTypes(
			deskkit.EventType{Name: "task.trashed", Description: "A task was deleted.", Example: map[string]any{}},
			deskkit.EventType{Name: "task.restored", Description: "A task was restored.", Example: map[string]any{}},
			deskkit.EventType{Name: "sprint.trashed", Description: "A sprint was deleted.", Example: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		ada := deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}
		hook, err := reg.Add(ctx, ada, channel.Input{Type: "WEBHOOK", Name: "Ops hook", Address: "https://hooks.example.com/ops",
			Events: []string{"task.*", channel.EventChannelDisabled}})
		if err != nil {
			t.Fatal(err)
		}
		// 09:00, 10:00 and 11:00 UTC: trashed, restored, trashed.
		for _, typ := range []string{"task.trashed", "task.restored", "task.trashed"} {
			err := reg.Publish(ctx, db, 1, deskkit.Event{Type: typ, Title: "A task", Data: map[string]any{"projectId": 3}})
			if err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(time.Hour)
		}
		ck := f.signIn(f.token)
		page := fmt.Sprintf("/console/channels/%d", hook.ID)
		count := func(a answer) int {
			return strings.Count(a.body, `<tr id="delivery-`)
		}

		a := f.get(page, "en", ck)
		wantPage(t, "unfiltered", a, http.StatusOK, "en", `<select id="d-type" name="type">`, `<option value="task.restored">task.restored</option>`,
			`<option value="channel.disabled">channel.disabled</option>`, "Created from (UTC)", "Created before (UTC)", "Times are in the time zone UTC.",
			`<input id="d-from" name="from" type="datetime-local" value=""`)
		if strings.Contains(a.body, `<option value="sprint.trashed">`) {
			t.Error("the type filter offers types the channel does not subscribe to")
		}
		if n := count(a); n != 3 {
			t.Errorf("unfiltered: %d deliveries, want 3", n)
		}
		for _, c := range []struct {
			query string
			want  int
		}{
			{"?type=task.restored", 1},
			{"?type=task.trashed", 2},
			{"?from=2026-11-24T10:00", 2},
			{"?to=2026-11-24T10:00", 1},
			{"?from=2026-11-24T09:30&to=2026-11-24T10:30:00", 1},
			{"?from=2026-11-24T09:00&type=task.trashed&status=PENDING", 2},
			{"?from=2026-11-24T09:00:00Z", 3},
			{"?type=task.gone", 0},
		} {
			a := f.get(page+c.query, "en", ck)
			if a.StatusCode != http.StatusOK || count(a) != c.want {
				t.Errorf("%s: %d, %d deliveries, want %d", c.query, a.StatusCode, count(a), c.want)
			}
			if c.want == 0 && !strings.Contains(a.body, "No delivery matches the filter.") {
				t.Errorf("%s: the empty answer does not say the filter matched nothing", c.query)
			}
		}
		a = f.get(page+"?type=task.trashed&from=2026-11-24T09:00", "en", ck)
		wantPage(t, "filtered", a, http.StatusOK, "en", `<option value="task.trashed" selected>`, `value="2026-11-24T09:00"`)

		for _, c := range []struct{ query, want string }{
			{"?from=yesterday", "from must be a date and time such as 2026-11-24T09:00"},
			{"?from=2026-11-24T11:00&to=2026-11-24T10:00", "from must be before to"},
			{"?to=2026-02-30T10:00", "to must be a date and time such as 2026-11-24T09:00"},
			{"?type=Task", "eventType has"},
		} {
			a := f.get(page+c.query, "en", ck)
			wantPage(t, c.query, a, http.StatusBadRequest, "en", c.want, `<select id="d-type" name="type">`)
		}
		a = f.get(page+"?from=2026-11-24T11:00&to=2026-11-24T10:00", "en", ck)
		wantPage(t, "refused range", a, http.StatusBadRequest, "en", `value="2026-11-24T11:00"`, `value="2026-11-24T10:00"`)
		wantPage(t, "zh", f.get(page+"?from=yesterday", "zh-CN", ck), http.StatusBadRequest, "zh-CN",
			"事件类型", "全部事件类型", "创建时间起（UTC）", "时间按时区 UTC 填写。", "必须是日期和时间")
		wantPage(t, "zh empty", f.get(page+"?type=task.gone", "zh-CN", ck), http.StatusOK, "zh-CN", "没有符合筛选条件的推送。")
	})
}
