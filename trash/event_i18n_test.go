package trash_test

import (
	"encoding/json"
	"testing"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// The trash's events render in Simplified Chinese from their data.
func TestEventRenderChinese(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := msgs.Match("zh-CN")
	renderers := map[string]deskkit.EventRenderer{}
	for _, et := range trash.EventTypes() {
		renderers[et.Name] = et.Render
	}
	for _, tc := range []struct {
		typ         string
		data        any
		title, text string
	}{
		{trash.EventTaskTrashed, trash.EntryEventData{Actor: &deskkit.Actor{ID: 7, Name: "Ada"}, ProjectID: 3, TrashID: 41, TargetType: trash.TargetTask, TargetID: 1200, TargetName: "Fix *login*"},
			`任务 "Fix \*login\*" 已移入回收站`, `Ada 将项目 3 的任务 "Fix \*login\*" 移入了回收站。`},
		{trash.EventTaskRestored, trash.RestoredEventData{EntryEventData: trash.EntryEventData{Actor: &deskkit.Actor{ID: 7}, ProjectID: 3, TargetType: trash.TargetTask, TargetName: "Fix"},
			AlsoRestored: &trash.EventTarget{TargetType: trash.TargetSprint, TargetName: "Sprint 14"}},
			`任务 "Fix" 已从回收站恢复`, `用户 7 从回收站恢复了项目 3 的任务 "Fix"，并一同恢复了其所属迭代 "Sprint 14"。`},
		{trash.EventSprintCleared, trash.ClearedEventData{EntryEventData: trash.EntryEventData{Actor: &deskkit.Actor{ID: 7, Name: "Ada"}, ProjectID: 3, TargetType: trash.TargetSprint, TargetName: "Sprint 14"},
			AlsoCleared: []trash.EventTarget{{}, {}}},
			`迭代 "Sprint 14" 已彻底删除`, `Ada 从回收站彻底删除了项目 3 的迭代 "Sprint 14"，连同其中 2 个已删除的任务。`},
		{trash.EventTrashCleared, trash.ProjectEventData{Actor: &deskkit.Actor{ID: 7, Name: "Ada"}, ProjectID: 3, Count: 25},
			`已从项目 3 的回收站彻底删除 25 条记录`, `Ada 从项目 3 的回收站彻底删除了 25 条记录。`},
		{trash.EventTrashPurged, trash.ProjectEventData{ProjectID: 3, Count: 1},
			`项目 3 的回收站中有 1 条记录已自动删除`, `项目 3 的回收站中 1 条超过保留期限的记录已自动删除。`},
	} {
		data, err := json.Marshal(tc.data)
		if err != nil {
			t.Fatal(err)
		}
		title, text, err := renderers[tc.typ](msgs, zh, data)
		if err != nil || title != tc.title || text != tc.text {
			t.Errorf("%s: %q / %q (%v), want %q / %q", tc.typ, title, text, err, tc.title, tc.text)
		}
	}
	// trash.purged states the retention period its data carry, in both
	// languages; English is the text published.
	for _, tc := range []struct {
		data        trash.ProjectEventData
		tag         language.Tag
		title, text string
	}{
		{trash.ProjectEventData{ProjectID: 3, Count: 12, RetentionSeconds: 30 * 24 * 60 * 60}, zh,
			`项目 3 的回收站中有 12 条记录已自动删除`, `项目 3 的回收站中删除超过 30 天的 12 条记录已自动删除。`},
		{trash.ProjectEventData{ProjectID: 3, Count: 12, RetentionSeconds: 30 * 24 * 60 * 60}, language.English,
			`12 entries purged from the trash of project 3`, `Retention purged 12 entries deleted more than 30 days ago from the trash of project 3: they are deleted for good.`},
		{trash.ProjectEventData{ProjectID: 3, Count: 1, RetentionSeconds: 24 * 60 * 60}, zh,
			`项目 3 的回收站中有 1 条记录已自动删除`, `项目 3 的回收站中删除超过 1 天的 1 条记录已自动删除。`},
		{trash.ProjectEventData{ProjectID: 3, Count: 1, RetentionSeconds: 36 * 60 * 60}, language.English,
			`1 entry purged from the trash of project 3`, `Retention purged 1 entry deleted more than 1 day 12 hours ago from the trash of project 3: it is deleted for good.`},
	} {
		data, err := json.Marshal(tc.data)
		if err != nil {
			t.Fatal(err)
		}
		title, text, err := renderers[trash.EventTrashPurged](msgs, tc.tag, data)
		if err != nil || title != tc.title || text != tc.text {
			t.Errorf("trash.purged %v: %q / %q (%v), want %q / %q", tc.tag, title, text, err, tc.title, tc.text)
		}
	}
	if _, _, err := renderers[trash.EventTaskTrashed](msgs, zh, json.RawMessage(`[1]`)); err == nil {
		t.Error("rendered data that is no object")
	}
}
