package trash

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// The types of the events the trash publishes (see Events in the package
// documentation, and EventTypes).
const (
	EventTaskTrashed    = "task.trashed"
	EventSprintTrashed  = "sprint.trashed"
	EventTaskRestored   = "task.restored"
	EventSprintRestored = "sprint.restored"
	EventTaskCleared    = "task.cleared"
	EventSprintCleared  = "sprint.cleared"
	EventTrashRestored  = "trash.restored"
	EventTrashCleared   = "trash.cleared"
	EventTrashPurged    = "trash.purged"
)

// EntryEventData is the data of task.trashed and sprint.trashed, and the
// common part of the data of the restored and cleared events of one entry.
// The publisher adds "tenantId".
type EntryEventData struct {
	// Actor is who trashed, restored or cleared the entry, named through
	// Config.Users ("" without it, or for a user it does not know).
	Actor      *deskkit.Actor `json:"actor"`
	ProjectID  int64          `json:"projectId"`
	TrashID    int64          `json:"trashId"` // the entry's id (Entry.ID)
	TargetType TargetType     `json:"targetType"`
	TargetID   int64          `json:"targetId"`
	TargetName string         `json:"targetName"`
}

// EventTarget is another entry that an operation took out of the trash
// with the one it was asked for.
type EventTarget struct {
	TrashID    int64      `json:"trashId"`
	TargetType TargetType `json:"targetType"`
	TargetID   int64      `json:"targetId"`
	TargetName string     `json:"targetName"`
}

// RestoredEventData is the data of task.restored and sprint.restored.
type RestoredEventData struct {
	EntryEventData
	// AlsoRestored is the trashed sprint that a restored task brought back
	// with it; null otherwise.
	AlsoRestored *EventTarget `json:"alsoRestored"`
}

// ClearedEventData is the data of task.cleared and sprint.cleared.
type ClearedEventData struct {
	EntryEventData
	// AlsoCleared are the task entries of a cleared sprint, cleared with it,
	// in id order; empty (never null) for a task or a sprint without any.
	AlsoCleared []EventTarget `json:"alsoCleared"`
}

// ProjectEventData is the data of trash.restored, trash.cleared and
// trash.purged: how many entries one operation took out of a project's
// trash.
type ProjectEventData struct {
	// Actor is who restored or cleared; null for trash.purged (retention).
	Actor     *deskkit.Actor `json:"actor"`
	ProjectID int64          `json:"projectId"`
	// Count is how many entries left the trash, those taken with others
	// (the sprints of restored tasks, the tasks of cleared sprints)
	// included: what RestoreAll, ClearAll and PurgeExpired count.
	Count int `json:"count"`
	// RetentionSeconds is, for trash.purged, the retention period in
	// seconds: the purged entries were deleted longer ago than that. It is
	// absent from the other events and from trash.purged events published
	// before deskkit knew it.
	RetentionSeconds int64 `json:"retentionSeconds,omitempty"`
}

// EventTypes returns the types of the events the trash publishes, each with
// a description and an example of its data, for the registry of event types
// (the composition root registers them). Each call returns a fresh slice
// with fresh examples. Each event says what happened as messages
// (deskkit.Event's Heading and Body), which a delivery writes in the
// receiving tenant's language.
//
// Every event gets a new id (deskkit.NewEventID) and the trash's clock as
// its time. The publisher receives the tenant as an argument and puts
// "tenantId" into the data itself; the trash's data have no such key. Data
// are JSON objects of typed structs, the same types as the examples:
//
//   - EntryEventData (the trashed events): actor, projectId, trashId (the
//     entry's id), targetType, targetId, targetName;
//   - RestoredEventData: the same and alsoRestored, an EventTarget
//     (trashId, targetType, targetId, targetName) or null;
//   - ClearedEventData: the same and alsoCleared, a list of EventTarget,
//     empty when nothing went with the entry;
//   - ProjectEventData (trash.restored, trash.cleared, trash.purged):
//     actor, projectId, count (entries that left the trash, those taken
//     with others included: what the call returns), and for trash.purged
//     retentionSeconds, the retention period its text states.
//
// actor is the principal as {"id", "name"}, the name from Config.Users (""
// without one, or for a user it does not know), and null for trash.purged,
// which nobody caused. The name is asked once per call, before the
// transaction (Add: before its insert, inside the host's transaction, which
// it hands the resolver to read through; see UserResolver), and only when
// there is a publisher; an error from Config.Users then fails the
// operation, as it fails a search.
//
// Heading and Body are short sentences, in English `Task "Fix login"
// moved to the trash` and `Ada moved task "Fix login" of project 3 to the
// trash.`, naming the actor ("User 7" when the name is unknown or holds
// control characters) and the project by id (the trash knows no project
// names). Robots render them as markdown and e-mail shows them as plain
// text. Names are typed by users and may hold markdown, so each name is
// quoted and the characters that start inline markdown (\ ` * _ ~ [ ] < >
// &) are escaped with a backslash: a robot shows the name as typed, never
// a link, emphasis or HTML of the user's making, and an e-mail shows the
// backslashes, the price of one text for both. Names cannot break lines
// (deskkit.CheckName), so nothing in them can start a heading or a list. A
// bare URL in a name may still be shown as a link by a robot that links
// URLs; it links where it says. Titles cut names to 60 characters ("…"), so
// that every title keeps within deskkit.Event's 200; texts carry names
// whole. The data carry every name as it is.
func EventTypes() []deskkit.EventType {
	actor := func() *deskkit.Actor { return &deskkit.Actor{ID: 7, Name: "Ada"} }
	task := func() EntryEventData {
		return EntryEventData{Actor: actor(), ProjectID: 3, TrashID: 41, TargetType: TargetTask, TargetID: 1200, TargetName: "Fix login"}
	}
	sprint := func() EntryEventData {
		return EntryEventData{Actor: actor(), ProjectID: 3, TrashID: 40, TargetType: TargetSprint, TargetID: 88, TargetName: "Sprint 14"}
	}
	return []deskkit.EventType{
		{Name: EventTaskTrashed, Service: deskkit.ServiceTrash, Example: task(),
			About: deskkit.Textf("A task was deleted. It is in the trash and can be restored from there.")},
		{Name: EventSprintTrashed, Service: deskkit.ServiceTrash, Example: sprint(),
			About: deskkit.Textf("A sprint was deleted. It is in the trash and can be restored from there.")},
		{
			Name:    EventTaskRestored,
			Service: deskkit.ServiceTrash,
			About:   deskkit.Textf("A task was restored from the trash. If its sprint was in the trash too, the sprint came back with it."),
			Example: RestoredEventData{EntryEventData: task(), AlsoRestored: &EventTarget{TrashID: 40, TargetType: TargetSprint, TargetID: 88, TargetName: "Sprint 14"}},
		},
		{
			Name:    EventSprintRestored,
			Service: deskkit.ServiceTrash,
			About:   deskkit.Textf("A sprint was restored from the trash, with the tasks deleted together with it."),
			Example: RestoredEventData{EntryEventData: sprint()},
		},
		{
			Name:    EventTaskCleared,
			Service: deskkit.ServiceTrash,
			About:   deskkit.Textf("A task was cleared from the trash for good. It can no longer be restored."),
			Example: ClearedEventData{EntryEventData: task(), AlsoCleared: []EventTarget{}},
		},
		{
			Name:    EventSprintCleared,
			Service: deskkit.ServiceTrash,
			About:   deskkit.Textf("A sprint was cleared from the trash for good, with the deleted tasks in it. They can no longer be restored."),
			Example: ClearedEventData{EntryEventData: sprint(), AlsoCleared: []EventTarget{{TrashID: 41, TargetType: TargetTask, TargetID: 1200, TargetName: "Fix login"}}},
		},
		{
			Name:    EventTrashRestored,
			Service: deskkit.ServiceTrash,
			About:   deskkit.Textf("A project's trash was restored all at once: every entry the person may manage came back."),
			Example: ProjectEventData{Actor: actor(), ProjectID: 3, Count: 25},
		},
		{
			Name:    EventTrashCleared,
			Service: deskkit.ServiceTrash,
			About:   deskkit.Textf("A project's trash was cleared all at once: every entry the person may manage is gone for good."),
			Example: ProjectEventData{Actor: actor(), ProjectID: 3, Count: 25},
		},
		{
			Name:    EventTrashPurged,
			Service: deskkit.ServiceTrash,
			About:   deskkit.Textf("Entries older than the retention period were deleted from a project's trash automatically."),
			Example: ProjectEventData{ProjectID: 3, Count: 12, RetentionSeconds: 30 * 24 * 60 * 60},
		},
	}
}

// publish hands an event to the publisher in db, the transaction that makes
// the change; nothing without a publisher.
func (t *Trash) publish(ctx context.Context, db bun.IDB, tenantID int64, typ string, now time.Time, title, text deskkit.Text, data any) error {
	if t.cfg.Publisher == nil {
		return nil
	}
	ev := deskkit.Event{ID: deskkit.NewEventID(), Type: typ, Time: now.UTC(), Heading: title, Body: text, Data: data}
	if err := t.cfg.Publisher.Publish(ctx, db, tenantID, ev); err != nil {
		return fmt.Errorf("trash: publish %s: %w", typ, err)
	}
	return nil
}

// actor returns p as the actor of the events it causes, named through
// Config.Users, which reads through db; nil when there is no publisher, as
// nothing needs it. Callers ask before they open a transaction or take a
// lock, as for every hook, and pass t.db; Add, which runs in the host's
// transaction, passes that transaction, so that the lookup needs no second
// connection (see Hooks and transactions in the package doc).
func (t *Trash) actor(ctx context.Context, db bun.IDB, p deskkit.Principal) (*deskkit.Actor, error) {
	if t.cfg.Publisher == nil {
		return nil, nil
	}
	a := &deskkit.Actor{ID: p.UserID}
	if t.cfg.Users == nil {
		return a, nil
	}
	users, err := t.cfg.Users.ResolveUsers(ctx, db, p.TenantID, []int64{p.UserID})
	if err != nil {
		return nil, fmt.Errorf("trash: resolve the actor's name: %w", err)
	}
	a.Name = users[p.UserID].Name
	return a, nil
}

func entryData(a *deskkit.Actor, r row) EntryEventData {
	return EntryEventData{Actor: a, ProjectID: r.ProjectID, TrashID: r.ID, TargetType: r.TargetType, TargetID: r.TargetID, TargetName: r.TargetName}
}

func eventTarget(r row) EventTarget {
	return EventTarget{TrashID: r.ID, TargetType: r.TargetType, TargetID: r.TargetID, TargetName: r.TargetName}
}

// publishTrashed publishes task.trashed or sprint.trashed for r, just added.
func (t *Trash) publishTrashed(ctx context.Context, db bun.IDB, a *deskkit.Actor, r row, now time.Time) error {
	typ := EventTaskTrashed
	if r.TargetType == TargetSprint {
		typ = EventSprintTrashed
	}
	data := entryData(a, r)
	title, text := entryTexts(typ, data, "", 0)
	return t.publish(ctx, db, r.TenantID, typ, now, title, text, data)
}

// publishRestored publishes task.restored or sprint.restored for self, and
// the sprint it brought back, if any.
func (t *Trash) publishRestored(ctx context.Context, tx bun.Tx, a *deskkit.Actor, self row, sprints []row, now time.Time) error {
	typ := EventTaskRestored
	if self.TargetType == TargetSprint {
		typ = EventSprintRestored
	}
	data := RestoredEventData{EntryEventData: entryData(a, self)}
	also := ""
	if len(sprints) > 0 {
		target := eventTarget(sprints[0])
		data.AlsoRestored = &target
		also = target.TargetName
	}
	title, text := entryTexts(typ, data.EntryEventData, also, 0)
	return t.publish(ctx, tx, self.TenantID, typ, now, title, text, data)
}

// publishCleared publishes task.cleared or sprint.cleared for self, with
// all, every entry the clear took (self among them).
func (t *Trash) publishCleared(ctx context.Context, tx bun.Tx, a *deskkit.Actor, self row, all []row, now time.Time) error {
	typ := EventTaskCleared
	if self.TargetType == TargetSprint {
		typ = EventSprintCleared
	}
	data := ClearedEventData{EntryEventData: entryData(a, self), AlsoCleared: []EventTarget{}}
	for _, r := range all {
		if r.ID != self.ID {
			data.AlsoCleared = append(data.AlsoCleared, eventTarget(r))
		}
	}
	title, text := entryTexts(typ, data.EntryEventData, "", len(data.AlsoCleared))
	return t.publish(ctx, tx, self.TenantID, typ, now, title, text, data)
}

// publishProject publishes trash.restored, trash.cleared or trash.purged:
// count entries of the project, by a (nil for retention).
func (t *Trash) publishProject(ctx context.Context, tx bun.IDB, typ string, a *deskkit.Actor, key projectKey, count int, now time.Time) error {
	data := ProjectEventData{Actor: a, ProjectID: key.projectID, Count: count}
	if typ == EventTrashPurged {
		data.RetentionSeconds = int64(t.cfg.Retention / time.Second)
	}
	title, text := projectTexts(typ, data, t.cfg.Retention)
	return t.publish(ctx, tx, key.tenantID, typ, now, title, text, data)
}

// The event texts. Heading and Body reach robots as markdown and e-mail as
// plain text, so the names in them (which users type, and which may hold
// "[", "*" or "<") are quoted and have markdown's inline punctuation
// escaped with a backslash: a robot shows the name as typed, and no name
// turns into a link, emphasis or HTML. E-mail then shows those backslashes;
// that is the price of one text for both. The data carries the names as
// they are.

// markdownInline are the characters that can start inline markdown in the
// middle of a line: code, emphasis, strikethrough, links and images
// ("!" needs "["), autolinks and HTML, entities (an entity can spell a
// character CheckName refuses), and the escape itself. Names hold no line
// breaks (CheckName), so line-start syntax (headings, lists, quotes) cannot
// occur.
const markdownInline = "\\`*_~[]<>&"

// escapeMarkdown escapes every character of markdownInline in s.
func escapeMarkdown(s string) string {
	if !strings.ContainsAny(s, markdownInline) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(markdownInline, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Lengths of names in event texts, in characters before escaping: a title
// keeps within the 200 characters of an event's title with every
// character escaped, a text within its 3000 with two full names.
const (
	maxTitleName = 60
	maxActorName = 100
)

// titleName is name quoted for a title: cut to maxTitleName characters
// ("…" marks the cut) and escaped.
func titleName(name string) string { return `"` + escapeMarkdown(cut(name, maxTitleName)) + `"` }

// textName is the whole name, quoted and escaped.
func textName(name string) string { return `"` + escapeMarkdown(name) + `"` }

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
