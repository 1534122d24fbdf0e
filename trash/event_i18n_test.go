package trash

import (
	"testing"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
)

// eventTexts are the heading and body published for an event of type typ
// with data d, as the publish functions build them.
func eventTexts(typ string, d any) (title, text deskkit.Text) {
	switch d := d.(type) {
	case ProjectEventData:
		return projectTexts(typ, d, time.Duration(d.RetentionSeconds)*time.Second)
	case RestoredEventData:
		also := ""
		if d.AlsoRestored != nil {
			also = d.AlsoRestored.TargetName
		}
		return entryTexts(typ, d.EntryEventData, also, 0)
	case ClearedEventData:
		return entryTexts(typ, d.EntryEventData, "", len(d.AlsoCleared))
	}
	return entryTexts(typ, d.(EntryEventData), "", 0)
}

// The trash's events are written in Simplified Chinese from their heading
// and body.
func TestEventRenderChinese(t *testing.T) {
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := msgs.Match("zh-CN")
	for _, tc := range []struct {
		typ         string
		data        any
		title, text string
	}{
		{EventTaskTrashed, EntryEventData{Actor: &deskkit.Actor{ID: 7, Name: "Ada"}, ProjectID: 3, TrashID: 41, TargetType: TargetTask, TargetID: 1200, TargetName: "Fix *login*"},
			`任务 "Fix \*login\*" 已移入回收站`, `Ada 将项目 3 的任务 "Fix \*login\*" 移入了回收站。`},
		{EventTaskRestored, RestoredEventData{EntryEventData: EntryEventData{Actor: &deskkit.Actor{ID: 7}, ProjectID: 3, TargetType: TargetTask, TargetName: "Fix"},
			AlsoRestored: &EventTarget{TargetType: TargetSprint, TargetName: "Sprint 14"}},
			`任务 "Fix" 已从回收站恢复`, `用户 7 从回收站恢复了项目 3 的任务 "Fix"，并一同恢复了其所属迭代 "Sprint 14"。`},
		{EventSprintCleared, ClearedEventData{EntryEventData: EntryEventData{Actor: &deskkit.Actor{ID: 7, Name: "Ada"}, ProjectID: 3, TargetType: TargetSprint, TargetName: "Sprint 14"},
			AlsoCleared: []EventTarget{{}, {}}},
			`迭代 "Sprint 14" 已彻底删除`, `Ada 从回收站彻底删除了项目 3 的迭代 "Sprint 14"，连同其中 2 个已删除的任务。`},
		{EventTrashCleared, ProjectEventData{Actor: &deskkit.Actor{ID: 7, Name: "Ada"}, ProjectID: 3, Count: 25},
			`已从项目 3 的回收站彻底删除 25 条记录`, `Ada 从项目 3 的回收站彻底删除了 25 条记录。`},
		{EventTrashPurged, ProjectEventData{ProjectID: 3, Count: 1},
			`项目 3 的回收站中有 1 条记录已自动删除`, `项目 3 的回收站中 1 条超过保留期限的记录已自动删除。`},
	} {
		h, b := eventTexts(tc.typ, tc.data)
		if title, text := h.LocalizedMessage(msgs, zh), b.LocalizedMessage(msgs, zh); title != tc.title || text != tc.text {
			t.Errorf("%s: %q / %q, want %q / %q", tc.typ, title, text, tc.title, tc.text)
		}
	}
	// trash.purged states the retention period, in both languages.
	for _, tc := range []struct {
		data        ProjectEventData
		tag         language.Tag
		title, text string
	}{
		{ProjectEventData{ProjectID: 3, Count: 12, RetentionSeconds: 30 * 24 * 60 * 60}, zh,
			`项目 3 的回收站中有 12 条记录已自动删除`, `项目 3 的回收站中删除超过 30 天的 12 条记录已自动删除。`},
		{ProjectEventData{ProjectID: 3, Count: 12, RetentionSeconds: 30 * 24 * 60 * 60}, language.English,
			`12 entries purged from the trash of project 3`, `Retention purged 12 entries deleted more than 30 days ago from the trash of project 3: they are deleted for good.`},
		{ProjectEventData{ProjectID: 3, Count: 1, RetentionSeconds: 24 * 60 * 60}, zh,
			`项目 3 的回收站中有 1 条记录已自动删除`, `项目 3 的回收站中删除超过 1 天的 1 条记录已自动删除。`},
		{ProjectEventData{ProjectID: 3, Count: 1, RetentionSeconds: 36 * 60 * 60}, language.English,
			`1 entry purged from the trash of project 3`, `Retention purged 1 entry deleted more than 1 day 12 hours ago from the trash of project 3: it is deleted for good.`},
	} {
		h, b := eventTexts(EventTrashPurged, tc.data)
		if title, text := h.LocalizedMessage(msgs, tc.tag), b.LocalizedMessage(msgs, tc.tag); title != tc.title || text != tc.text {
			t.Errorf("trash.purged %v: %q / %q, want %q / %q", tc.tag, title, text, tc.title, tc.text)
		}
	}
}
