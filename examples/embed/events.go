package main

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// The host's events. deskkit keeps the tenant's channels, the outbox and
// the worker that delivers from it; the trash publishes its own events
// (task.trashed, task.restored, ...) through the registry; the host
// publishes the events of its own domain the same way, in the transaction
// of the change they announce.

// eventTaskDeleted is the type of the host's own event: a task was
// deleted from the host's task list. The trash announces the same delete
// as task.trashed, about its entry (trashId, to restore it); task.deleted
// is about the task as the host knows it (its title and creator), and a
// receiver that only cares about the host's tasks subscribes to it alone.
const eventTaskDeleted = "task.deleted"

// taskDeleted is the data of a task.deleted event, what a webhook receiver
// gets as "data" (the registry adds "tenantId").
type taskDeleted struct {
	// Actor is who deleted the task, named from the host's users table.
	Actor     *deskkit.Actor `json:"actor"`
	TaskID    int64          `json:"taskId"`
	ProjectID int64          `json:"projectId"`
	Title     string         `json:"title"`
	CreatedBy int64          `json:"createdBy"`
}

// hostEventTypes are the types the host publishes itself, registered in
// newApp with the services' for the registry's catalogue (GET
// /api/v1/event/types) and the subscriptions checked against it: Publish
// refuses a type nobody registered.
func hostEventTypes() []deskkit.EventType {
	return []deskkit.EventType{{
		Name:    eventTaskDeleted,
		Service: "tasks",
		// English only: a host without a catalogue of its own writes
		// Description, which reads the same in every language.
		Description: "A task was deleted from the task list. It is in the trash, " +
			"where it can be restored until it is deleted for good.",
		Example: taskDeleted{
			Actor: &deskkit.Actor{ID: 1, Name: "Ada Lovelace"}, TaskID: 2, ProjectID: 1,
			Title: "Book the venue", CreatedBy: 1,
		},
	}}
}

// deletedEvent is the task.deleted event of actor deleting t. Its ID is
// made here, once: it is the idempotency key of the publish and the
// webhook-id of every attempt, on which receivers drop duplicates.
//
// Title and text name the task and the user by id only: robots render
// them as markdown, and titles are typed by users, so a title there could
// turn into a link or emphasis of the user's making. The data carries the
// names as they are (the trash's events quote and escape them instead).
func deletedEvent(t task, actor deskkit.Actor) deskkit.Event {
	return deskkit.Event{
		ID:    deskkit.NewEventID(),
		Type:  eventTaskDeleted,
		Title: fmt.Sprintf("Task %d of project %d deleted", t.ID, t.ProjectID),
		Text: fmt.Sprintf("User %d deleted task %d of project %d. It is in the trash, "+
			"from which it can be restored until it is purged.", actor.ID, t.ID, t.ProjectID),
		Data: taskDeleted{Actor: &actor, TaskID: t.ID, ProjectID: t.ProjectID, Title: t.Title, CreatedBy: t.CreatedBy},
	}
}

// actorOf is p as an event names it: id and full name, read through db
// (the delete's transaction); the name is "" for a user the host's table
// does not have.
func actorOf(ctx context.Context, db bun.IDB, p deskkit.Principal) (deskkit.Actor, error) {
	users, err := resolveUsers(ctx, db, p.TenantID, []int64{p.UserID})
	if err != nil {
		return deskkit.Actor{}, err
	}
	return deskkit.Actor{ID: p.UserID, Name: users[p.UserID].Name}, nil
}
