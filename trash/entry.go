package trash

import (
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// TargetType is the kind of thing a trash entry holds.
type TargetType string

// The target types.
const (
	TargetTask   TargetType = "TASK"
	TargetSprint TargetType = "TASK_SPRINT"
)

// Valid reports whether t is one of the target types.
func (t TargetType) Valid() bool { return t == TargetTask || t == TargetSprint }

// Entry is one deleted task or sprint waiting in the trash.
//
// PurgeDate is when retention purges the entry: DeletedDate plus
// Config.Retention, computed on every read (not stored), so that a changed
// retention applies to the entries already there; nil when Config.Retention
// is 0 (the entry stays until cleared). PurgeExpired, run on a timer, purges
// it at its first run after that time.
//
// DeletedByName is how the deleter is shown, filled by every search from the
// Config.Users hook; it is always in the JSON, "" when there is no hook or the
// hook knows no such user (one deleted since, say). The creator's name and
// both avatars are filled only by a search with InfoScope InfoDetail, and are
// empty (and left out of JSON) otherwise. Get fills all four, as InfoDetail
// does; Add fills none.
type Entry struct {
	_           struct{}   `additionalProperties:"false" description:"One deleted task or sprint waiting in the trash."`
	ID          int64      `json:"id" minimum:"1" description:"Trash id."`
	TenantID    int64      `json:"tenantId" minimum:"1" description:"Tenant of the entry."`
	ProjectID   int64      `json:"projectId" minimum:"1" description:"Project the entry belongs to."`
	TargetType  TargetType `json:"targetType"`
	TargetID    int64      `json:"targetId" minimum:"1" description:"Id of the deleted task or sprint."`
	TargetName  string     `json:"targetName" minLength:"1" maxLength:"512" description:"Name of the deleted task or sprint."`
	SprintID    *int64     `json:"sprintId" minimum:"1" description:"The sprint a task belonged to; null for sprints and sprint-less tasks."` // the sprint a task belonged to; nil for sprints and sprint-less tasks
	CreatedBy   int64      `json:"createdBy" minimum:"1" description:"User who created the task or sprint."`
	DeletedBy   int64      `json:"deletedBy" minimum:"1" description:"Id of the user who deleted it."`
	DeletedDate time.Time  `json:"deletedDate" description:"Time of deletion, UTC, to the second."`
	PurgeDate   *time.Time `json:"purgeDate" description:"When retention purges the entry: deletedDate plus the server's retention, computed when read (a changed retention applies at once); the first purge run after it removes the entry. Null when the server keeps entries until cleared (no retention)."` // DeletedDate + Config.Retention; nil without retention

	DeletedByName   string `json:"deletedByName" description:"How the user who deleted it is shown, in every search result (with either infoScope); empty when the server has no source of user names or does not know the user (one deleted since, say)."`
	CreatedByName   string `json:"createdByName,omitempty" description:"In detail views (infoScope DETAIL, and one entry read by its id), when known."`
	CreatedByAvatar string `json:"createdByAvatar,omitempty" description:"In detail views (infoScope DETAIL, and one entry read by its id), when known: address of an image."`
	DeletedByAvatar string `json:"deletedByAvatar,omitempty" description:"In detail views (infoScope DETAIL, and one entry read by its id), when known: address of an image."`
}

// row is an entry as stored.
type row struct {
	bun.BaseModel `bun:"table:deskkit_trash,alias:t"`

	ID               int64      `bun:"id,pk,autoincrement"`
	TenantID         int64      `bun:"tenant_id,notnull"`
	ProjectID        int64      `bun:"project_id,notnull"`
	TargetType       TargetType `bun:"target_type,notnull"`
	TargetID         int64      `bun:"target_id,notnull"`
	TargetName       string     `bun:"target_name,notnull"`
	TargetNameFolded string     `bun:"target_name_folded,notnull"`
	SprintID         *int64     `bun:"sprint_id"`
	CreatedBy        int64      `bun:"created_by,notnull"`
	DeletedBy        int64      `bun:"deleted_by,notnull"`
	DeletedDate      time.Time  `bun:"deleted_date,notnull"`
}

// entry is r as the trash returns it, with its purge date under retention
// (0: none).
func (r *row) entry(retention time.Duration) Entry {
	var purge *time.Time
	if retention > 0 {
		p := r.DeletedDate.UTC().Add(retention)
		purge = &p
	}
	return Entry{
		ID:          r.ID,
		TenantID:    r.TenantID,
		ProjectID:   r.ProjectID,
		TargetType:  r.TargetType,
		TargetID:    r.TargetID,
		TargetName:  r.TargetName,
		SprintID:    r.SprintID,
		CreatedBy:   r.CreatedBy,
		DeletedBy:   r.DeletedBy,
		DeletedDate: r.DeletedDate.UTC(),
		PurgeDate:   purge,
	}
}

func entries(rows []row, retention time.Duration) []Entry {
	out := make([]Entry, len(rows))
	for i := range rows {
		out[i] = rows[i].entry(retention)
	}
	return out
}

// FoldName is the case folding of names for search: the stored
// target_name_folded column and every search term go through it. Code that
// writes deskkit_trash rows without Add (a bulk load) must fill
// target_name_folded with it, or substring search will miss those rows.
func FoldName(name string) string { return strings.ToLower(name) }
