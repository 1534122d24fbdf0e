package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// launchNames names project 1 "Launch" and sprint 5 "Sprint A".
type launchNames struct{}

func (launchNames) ProjectNames(_ context.Context, _ int64, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	for _, id := range ids {
		if id == 1 {
			out[id] = "Launch"
		}
	}
	return out, nil
}

func (launchNames) SprintNames(_ context.Context, _ int64, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	for _, id := range ids {
		if id == 5 {
			out[id] = "Sprint A"
		}
	}
	return out, nil
}

// TestTrashOffersOnlyWhatTheReaderMay: a non-admin sees Restore… and
// Clear… only on the entries they deleted or created, a project's actions
// counting their own entries, and none for a project with nothing of
// theirs; a confirmation of what they may not do is refused before any
// button, and a project action that would do nothing says so, not as a
// success. Projects and sprints show by name. Both databases.
func TestTrashOffersOnlyWhatTheReaderMay(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Projects = launchNames{}; c.Sprints = launchNames{} }, false)
		ctx := context.Background()
		bobTok := f.issue("bob", false)
		ada := deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}
		bob := deskkit.Principal{TenantID: 1, UserID: 2}
		add := func(p deskkit.Principal, project, target int64, name string, sprint *int64) trash.Entry {
			t.Helper()
			e, err := f.trash.Add(ctx, db, p, trash.NewEntry{ProjectID: project, TargetType: trash.TargetTask, TargetID: target, TargetName: name, CreatedBy: p.UserID, SprintID: sprint})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		five := int64(5)
		adas := add(ada, 1, 10, "Ada's task", &five)
		bobs := add(bob, 1, 11, "Bob's task", nil)
		add(ada, 2, 12, "Ada's other task", nil)
		ck := f.signIn(bobTok)

		page := f.do(http.MethodGet, "/console/trash", nil, ck)
		row := func(e trash.Entry) string {
			i := strings.Index(page.body, `<tr id="entry-`+strconv.FormatInt(e.ID, 10)+`">`)
			if i < 0 {
				t.Fatalf("no row of %s:\n%s", e.TargetName, page.body)
			}
			return page.body[i : i+strings.Index(page.body[i:], "</tr>")]
		}
		if r := row(adas); strings.Contains(r, "/restore") || strings.Contains(r, "/clear") || !strings.Contains(r, "no-actions") {
			t.Errorf("ada's row offers bob actions: %s", r)
		}
		if r := row(adas); !strings.Contains(r, "in sprint “Sprint A”") || !strings.Contains(r, `<td data-label="Project">Launch</td>`) {
			t.Errorf("ada's row lacks its sprint's or project's name: %s", r)
		}
		if r := row(bobs); !strings.Contains(r, "/restore") || !strings.Contains(r, "/clear") {
			t.Errorf("bob's row lacks his actions: %s", r)
		}
		if !strings.Contains(page.body, `<option value="1">Launch (2 entries)</option>`) || !strings.Contains(page.body, `<option value="2">2 (1 entry)</option>`) {
			t.Errorf("the project picker lacks the named projects:\n%s", page.body)
		}
		// The refused confirmation: 403, why, and no button.
		c := f.do(http.MethodGet, "/console/trash/"+strconv.FormatInt(adas.ID, 10)+"/clear", nil, ck)
		if c.StatusCode != http.StatusForbidden || !strings.Contains(c.body, "You may not do this") || strings.Contains(c.body, `id="confirm"`) {
			t.Errorf("confirming ada's entry: %d\n%s", c.StatusCode, c.body)
		}
		// Project 1: bob's one entry; project 2: none of his.
		p1 := f.do(http.MethodGet, "/console/trash?project=1", nil, ck)
		if !strings.Contains(p1.body, "Restore your entries of project Launch&#39;s trash…") {
			t.Errorf("project 1's actions:\n%s", p1.body)
		}
		c = f.do(http.MethodGet, "/console/trash/project/1/clear", nil, ck)
		if c.StatusCode != http.StatusOK || !strings.Contains(c.body, "Clear 1 entry for good") || !strings.Contains(c.body, "You do not manage this project") {
			t.Errorf("project 1's confirmation: %d\n%s", c.StatusCode, c.body)
		}
		p2 := f.do(http.MethodGet, "/console/trash?project=2", nil, ck)
		if strings.Contains(p2.body, `id="clear-project"`) || !strings.Contains(p2.body, `id="project-no-actions"`) {
			t.Errorf("project 2 offers bob actions:\n%s", p2.body)
		}
		c = f.do(http.MethodGet, "/console/trash/project/2/clear", nil, ck)
		if c.StatusCode != http.StatusConflict || strings.Contains(c.body, `id="confirm"`) || !strings.Contains(c.body, "None of the entries") {
			t.Errorf("project 2's confirmation: %d\n%s", c.StatusCode, c.body)
		}
		a := f.do(http.MethodPost, "/console/trash/project/2/clear", url.Values{"csrf": {f.csrf(ck)}, "count": {"0"}}, ck)
		if a.StatusCode != http.StatusConflict || strings.Contains(a.body, `class="flash"`) || !strings.Contains(a.body, `class="notice"`) {
			t.Errorf("clearing nothing: %d\n%s", a.StatusCode, a.body)
		}
		if n, _ := f.trash.Count(ctx, ada, 2); n != 1 {
			t.Errorf("project 2 holds %d entries after bob's refused clear", n)
		}
		// Bob clears his own: the count he confirmed, by the project's name.
		a = f.do(http.MethodPost, "/console/trash/project/1/clear", url.Values{"csrf": {f.csrf(ck)}, "count": {"1"}}, ck)
		if a.StatusCode != http.StatusSeeOther {
			t.Fatalf("bob clears his entry: %d\n%s", a.StatusCode, a.body)
		}
		done := f.do(http.MethodGet, a.Header.Get("Location"), nil, append(a.Cookies(), ck)...)
		if !strings.Contains(done.body, "Cleared 1 entry of project Launch.") {
			t.Errorf("after clearing:\n%s", done.body)
		}
		// The admin sees every action.
		adaCk := f.signIn(f.token)
		page = f.do(http.MethodGet, "/console/trash", nil, adaCk)
		if r := row(adas); !strings.Contains(r, "/restore") || !strings.Contains(r, "/clear") {
			t.Errorf("the admin's row lacks actions: %s", r)
		}
		// In Chinese, the refusal is the glossary's.
		zh := f.do(http.MethodGet, "/console/trash?project=2&lang=zh-CN", nil, ck)
		if !strings.Contains(zh.body, "回收站中没有您可恢复或彻底删除的记录") {
			t.Errorf("the Chinese page lacks the refusal:\n%s", zh.body)
		}
	})
}
