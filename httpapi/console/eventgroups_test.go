package console

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"regexp"
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

var (
	groupRE  = regexp.MustCompile(`(?s)<fieldset class="event-group" data-service="([^"]+)">\s*<legend>([^<]*)</legend>(.*?)</fieldset>`)
	choiceRE = regexp.MustCompile(`(?s)name="events" value="([^"]+)".*?<span id="ev-\d+-d" class="note">([^<]*)</span>\s*(<details class="example"><summary>([^<]*)</summary><pre class="reply"><code>([^<]*)</code></pre></details>)?`)
)

// formGroup is a group of the channel form's event checkboxes as the page
// shows it.
type formGroup struct {
	Service, Label string
	Types          []string
}

// The channel form groups the catalogue's types by service, deskkit's
// first, under headings in the page's language; each type has its
// description in that language and an example of the whole event behind a
// <details> (no script needed), on every backend.
func TestChannelFormGroupsEventsByService(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		if err := channel.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		reg, err := channel.New(db, []byte("0123456789abcdef0123456789abcdef-console-test"), nil, &channel.Config{})
		if err != nil {
			t.Fatal(err)
		}
		host := []deskkit.EventType{
			{Name: "invoice.paid", Service: "billing", Description: "An invoice was paid.", Example: map[string]any{"invoiceId": 9}},
			{Name: "demo.hello", Description: "Someone said hello."},
		}
		if err := reg.RegisterEventTypes(slices.Concat(trash.EventTypes(), verify.EventTypes(), host)...); err != nil {
			t.Fatal(err)
		}
		f := setup(t, db, func(c *Config) { c.Channels = reg }, false)
		ck := f.signIn(f.token)
		for _, c := range []struct {
			lang   string
			labels []string
			trashd string // task.trashed's description
			sum    string
		}{
			{"en", []string{"Trash", "Users", "Event channels", "deskkit", "billing"},
				"A task was deleted. It is in the trash and can be restored from there.", "Example of the event"},
			{"zh-CN", []string{"回收站", "用户", "事件通道", "deskkit", "billing"},
				"任务已删除并移入回收站，可从回收站恢复。", "事件示例"},
		} {
			a := f.do(http.MethodGet, "/console/channels/new?type=WEBHOOK&lang="+c.lang, nil, ck)
			if a.StatusCode != http.StatusOK {
				t.Fatalf("%s: GET channels/new: %d\n%s", c.lang, a.StatusCode, a.body)
			}
			var got []formGroup
			for _, m := range groupRE.FindAllStringSubmatch(a.body, -1) {
				g := formGroup{Service: m[1], Label: html.UnescapeString(m[2])}
				for _, ch := range choiceRE.FindAllStringSubmatch(m[3], -1) {
					g.Types = append(g.Types, ch[1])
					desc := html.UnescapeString(ch[2])
					if desc == "" {
						t.Errorf("%s: %s has no description", c.lang, ch[1])
					}
					if ch[1] == "task.trashed" && desc != c.trashd {
						t.Errorf("%s: task.trashed reads %q, want %q", c.lang, desc, c.trashd)
					}
					if c.lang == "zh-CN" && g.Service != "billing" && g.Service != "host" && !strings.ContainsRune(desc, '。') {
						t.Errorf("%s: %s reads %q, not Chinese", c.lang, ch[1], desc)
					}
					if ch[4] != c.sum {
						t.Errorf("%s: %s's example is behind %q, want %q", c.lang, ch[1], ch[4], c.sum)
					}
					var payload struct {
						Type string         `json:"type"`
						Data map[string]any `json:"data"`
					}
					if err := json.Unmarshal([]byte(html.UnescapeString(ch[5])), &payload); err != nil || payload.Type != ch[1] || payload.Data["tenantId"] != 1.0 {
						t.Errorf("%s: %s's example %q is not its event (%v)", c.lang, ch[1], ch[5], err)
					}
				}
				got = append(got, g)
			}
			want := []formGroup{
				{"trash", c.labels[0], []string{"sprint.cleared", "sprint.restored", "sprint.trashed", "task.cleared", "task.restored", "task.trashed", "trash.cleared", "trash.purged", "trash.restored"}},
				{"verify", c.labels[1], []string{"user.email.changed", "user.mobile.changed"}},
				{"channel", c.labels[2], channelEventNames()},
				{"host", c.labels[3], []string{"demo.hello"}},
				{"billing", c.labels[4], []string{"invoice.paid"}},
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: the form's groups (-want +got):\n%s", c.lang, d)
			}
		}
	})
}

// channelEventNames are the names of the registry's own event types, in
// its order.
func channelEventNames() []string {
	var out []string
	for _, t := range channel.EventTypes() {
		out = append(out, t.Name)
	}
	return out
}
