package trash

import (
	"time"

	"github.com/deskkit/deskkit"
)

// The headings and bodies of the trash's events, as deskkit.Texts: keys
// and arguments, published as the event's Heading and Body and written in
// the language of each tenant the event is delivered to. Each sentence is
// one format, so that a language orders its words its own way; the names
// in it are quoted and escaped as titleName and textName say.

// actorText names the actor in a text: their name, "User 7" when it is
// unknown or not a name deskkit would accept.
func actorText(a *deskkit.Actor) any {
	if a == nil || a.Name == "" || deskkit.CheckName("name", a.Name, len(a.Name)) != nil {
		id := int64(0)
		if a != nil {
			id = a.ID
		}
		return deskkit.Textf("User %d", id)
	}
	return escapeMarkdown(cut(a.Name, maxActorName))
}

// entryTexts are the title and text of task.trashed, sprint.trashed and
// their restored and cleared events. also is the sprint a task brought
// back (restored), or the number of tasks cleared with a sprint.
func entryTexts(typ string, d EntryEventData, alsoSprint string, alsoCleared int) (title, text deskkit.Text) {
	who, name, tname, p := actorText(d.Actor), textName(d.TargetName), titleName(d.TargetName), d.ProjectID
	sprint := d.TargetType == TargetSprint
	switch typ {
	case EventTaskTrashed, EventSprintTrashed:
		if sprint {
			return deskkit.Textf("Sprint %s moved to the trash", tname), deskkit.Textf("%s moved sprint %s of project %d to the trash.", who, name, p)
		}
		return deskkit.Textf("Task %s moved to the trash", tname), deskkit.Textf("%s moved task %s of project %d to the trash.", who, name, p)
	case EventTaskRestored, EventSprintRestored:
		if sprint {
			title = deskkit.Textf("Sprint %s restored from the trash", tname)
			if alsoSprint != "" {
				return title, deskkit.Textf("%s restored sprint %s of project %d from the trash, and with it its sprint %s.", who, name, p, textName(alsoSprint))
			}
			return title, deskkit.Textf("%s restored sprint %s of project %d from the trash.", who, name, p)
		}
		title = deskkit.Textf("Task %s restored from the trash", tname)
		if alsoSprint != "" {
			return title, deskkit.Textf("%s restored task %s of project %d from the trash, and with it its sprint %s.", who, name, p, textName(alsoSprint))
		}
		return title, deskkit.Textf("%s restored task %s of project %d from the trash.", who, name, p)
	}
	// Cleared.
	if sprint {
		title = deskkit.Textf("Sprint %s deleted for good", tname)
		switch alsoCleared {
		case 0:
			return title, deskkit.Textf("%s cleared sprint %s of project %d from the trash: it is deleted for good.", who, name, p)
		case 1:
			return title, deskkit.Textf("%s cleared sprint %s of project %d from the trash: it is deleted for good, with the 1 trashed task in it.", who, name, p)
		}
		return title, deskkit.Textf("%s cleared sprint %s of project %d from the trash: it is deleted for good, with the %d trashed tasks in it.", who, name, p, alsoCleared)
	}
	title = deskkit.Textf("Task %s deleted for good", tname)
	switch alsoCleared {
	case 0:
		return title, deskkit.Textf("%s cleared task %s of project %d from the trash: it is deleted for good.", who, name, p)
	case 1:
		return title, deskkit.Textf("%s cleared task %s of project %d from the trash: it is deleted for good, with the 1 trashed task in it.", who, name, p)
	}
	return title, deskkit.Textf("%s cleared task %s of project %d from the trash: it is deleted for good, with the %d trashed tasks in it.", who, name, p, alsoCleared)
}

// projectTexts are the title and text of trash.restored, trash.cleared and
// trash.purged. retention is the age of the purged entries; 0 leaves it
// out.
func projectTexts(typ string, d ProjectEventData, retention time.Duration) (title, text deskkit.Text) {
	who, n, p := actorText(d.Actor), d.Count, d.ProjectID
	one := n == 1
	switch typ {
	case EventTrashRestored:
		if one {
			return deskkit.Textf("1 entry restored from the trash of project %d", p), deskkit.Textf("%s restored 1 entry from the trash of project %d.", who, p)
		}
		return deskkit.Textf("%d entries restored from the trash of project %d", n, p), deskkit.Textf("%s restored %d entries from the trash of project %d.", who, n, p)
	case EventTrashCleared:
		if one {
			return deskkit.Textf("1 entry deleted for good from the trash of project %d", p), deskkit.Textf("%s cleared 1 entry from the trash of project %d: it is deleted for good.", who, p)
		}
		return deskkit.Textf("%d entries deleted for good from the trash of project %d", n, p), deskkit.Textf("%s cleared %d entries from the trash of project %d: they are deleted for good.", who, n, p)
	}
	if one {
		title = deskkit.Textf("1 entry purged from the trash of project %d", p)
		if retention <= 0 {
			return title, deskkit.Textf("Retention purged 1 entry from the trash of project %d: it is deleted for good.", p)
		}
		return title, deskkit.Textf("Retention purged 1 entry deleted more than %s ago from the trash of project %d: it is deleted for good.", deskkit.DurationText(retention), p)
	}
	title = deskkit.Textf("%d entries purged from the trash of project %d", n, p)
	if retention <= 0 {
		return title, deskkit.Textf("Retention purged %d entries from the trash of project %d: they are deleted for good.", n, p)
	}
	return title, deskkit.Textf("Retention purged %d entries deleted more than %s ago from the trash of project %d: they are deleted for good.", n, deskkit.DurationText(retention), p)
}
