package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// trashRoutes are the trash's operations. PATCH /task/trash/back and
// PATCH /task/trash/{id}/back share a position httprouter cannot hold
// literally; Server.build works around it for every such pair.
func trashRoutes(t TrashService) []Operation {
	h := trashHandlers{t}
	return []Operation{
		Op("searchTrash", http.MethodGet, "/task/trash/search", h.search).With(searchTrashDoc),
		Op("countTrash", http.MethodGet, "/task/trash/count", h.count).With(countTrashDoc),
		Op("restoreTrash", http.MethodPatch, "/task/trash/{id}/back", h.restore).With(restoreTrashDoc),
		Op("restoreAllTrash", http.MethodPatch, "/task/trash/back", h.restoreAll).With(restoreAllTrashDoc),
		Op("clearTrash", http.MethodDelete, "/task/trash/{id}", h.clear).With(clearTrashDoc),
		Op("clearAllTrash", http.MethodDelete, "/task/trash", h.clearAll).With(clearAllTrashDoc),
	}
}

type trashHandlers struct{ t TrashService }

// searchRequest is the query string of a search; see parseSearchQuery.
type searchRequest struct{ q trash.Query }

func (r *searchRequest) QueryParams() []Param { return searchParams }

func (r *searchRequest) DecodeQuery(v url.Values) (err error) {
	r.q, err = parseSearchQuery(v)
	return err
}

// projectRequest names the project of the project-wide operations.
type projectRequest struct {
	ProjectID int64 `query:"projectId,required"`
}

// entryRequest names one entry.
type entryRequest struct {
	ID int64 `path:"id"`
}

func (h trashHandlers) search(ctx context.Context, p deskkit.Principal, req searchRequest) (trash.Page, error) {
	return h.t.Search(ctx, p, req.q)
}

func (h trashHandlers) count(ctx context.Context, p deskkit.Principal, req projectRequest) (int64, error) {
	return h.t.Count(ctx, p, req.ProjectID)
}

func (h trashHandlers) clearAll(ctx context.Context, p deskkit.Principal, req projectRequest) (int, error) {
	return h.t.ClearAll(ctx, p, req.ProjectID)
}

func (h trashHandlers) restoreAll(ctx context.Context, p deskkit.Principal, req projectRequest) (int, error) {
	return h.t.RestoreAll(ctx, p, req.ProjectID)
}

func (h trashHandlers) clear(ctx context.Context, p deskkit.Principal, req entryRequest) (*None, error) {
	return nil, h.t.Clear(ctx, p, req.ID)
}

func (h trashHandlers) restore(ctx context.Context, p deskkit.Principal, req entryRequest) (*None, error) {
	return nil, h.t.Restore(ctx, p, req.ID)
}

var restoreTrashDoc = &Doc{
	Tag:         "trash",
	Summary:     "Restore one entry",
	Description: "Takes the entry out of the trash and brings its task or sprint back through the host's Restorer. A task whose sprint is in the trash too brings the sprint back first. It all happens in one transaction: if the Restorer fails (500), the entries stay.\n\nWho may: the user who deleted the task or sprint, or who created it; an admin (the principal's admin flag); or a user the host's Authorizer names a manager of the entry's project. Anyone else of the tenant is answered 403. An id that is not in the caller's tenant's trash (never was, belongs to another tenant, or was just restored or cleared by someone else) is answered 404. Query parameters it does not define are answered 400. Restoring a task brings back its trashed sprint even if the caller did not delete that sprint: the task cannot live without it.",
	OK:          "OK. The entry is restored; data is null.",
	Errors: []ErrorDoc{
		mayNotManage,
		entryMissing,
	},
	Example: Example{Data: raw(`null`)},
	Params: []Param{
		{Name: "id", Description: "Trash id of the entry.", Example: 42, Schema: `{"type": "integer", "format": "int64", "minimum": 1}`},
	},
}

// projectParam is the one parameter of the project-wide operations.
var projectParam = []Param{
	{Name: "projectId", Description: "The project. It is the operation's only parameter.", Example: 10, Schema: `{"type": "integer", "format": "int64", "minimum": 1}`},
}

var restoreAllTrashDoc = &Doc{
	Tag:         "trash",
	Summary:     "Restore all tasks and sprints of a project",
	Description: "Restores, sprints first, every entry of the project that the caller may manage, and answers how many entries it restored (sprints brought back for their tasks included).\n\nWho may: any authenticated user; what is affected depends on who calls. An admin, or a user the host's Authorizer names a manager of the project, affects every entry of the project; anyone else only the entries they deleted or created (so never 403). Entries of other tenants are never touched. The work runs in batches, each its own transaction; if a batch fails (500), the batches before it stay done. Query parameters it does not define are answered 400. A host whose Authorizer also implements trash.ProjectViewer restricts what a user sees: to a user, the trash of a project they may not see does not exist (404).",
	OK:          "OK. data is the number of entries restored.",
	Errors: []ErrorDoc{
		entryMissing,
	},
	Example: Example{Data: raw(`3`)},
	Params:  projectParam,
}

var searchTrashDoc = &Doc{
	Tag:         "trash",
	Summary:     "Search the trash of tasks or sprints",
	Description: "Full-text search of the trash: a page of the caller's tenant's entries of one target type matching every given condition, and the number of all matches. Who may: any authenticated user. Without a ProjectViewer every entry of the tenant is visible to every user of the tenant (restoring and clearing are what is restricted); with one, a search of a project the user may not see is 404, and a search across projects covers only the visible ones, totals included. Every entry says who deleted it (deletedBy, and deletedByName, as the host's user directory names them) and when retention will purge it (purgeDate: deletedDate plus the server's retention; null when the server keeps entries until they are cleared); infoScope DETAIL adds the creator's name and both avatars. Unknown parameters, and parameters given twice, are 400.",
	OK:          "OK. data is one page of entries and the number of all matches.",
	Errors: []ErrorDoc{
		entryMissing,
	},
	Example: Example{Data: raw(`{"total": 1, "list": [{"id": 42, "tenantId": 1, "projectId": 10, "targetType": "TASK", "targetId": 200, "targetName": "Write docs", "sprintId": 100, "createdBy": 1, "deletedBy": 2, "deletedDate": "2026-11-22T01:00:00Z", "purgeDate": "2026-12-22T01:00:00Z", "deletedByName": "Alice"}]}`)},
}

var countTrashDoc = &Doc{
	Tag:         "trash",
	Summary:     "Count all task and sprint trash of a project",
	Description: "Counts the entries, tasks and sprints, that the project has in the caller's tenant's trash. Who may: any authenticated user of the tenant. Query parameters it does not define are answered 400. A host whose Authorizer also implements trash.ProjectViewer restricts what a user sees: to a user, the trash of a project they may not see does not exist (404).",
	OK:          "OK. data is the number of entries.",
	Errors: []ErrorDoc{
		entryMissing,
	},
	Example: Example{Data: raw(`4`)},
	Params:  projectParam,
}

var clearAllTrashDoc = &Doc{
	Tag:         "trash",
	Summary:     "Clear all trash of a project",
	Description: "Removes for good every entry of the project that the caller may manage and purges their tasks and sprints through the host's Restorer (tasks before their sprints), and answers how many entries it cleared (tasks of cleared sprints included).\n\nWho may: any authenticated user; what is affected depends on who calls. An admin, or a user the host's Authorizer names a manager of the project, affects every entry of the project; anyone else only the entries they deleted or created (so never 403). Entries of other tenants are never touched. The work runs in batches, each its own transaction; if a batch fails (500), the batches before it stay done. Query parameters it does not define are answered 400. A host whose Authorizer also implements trash.ProjectViewer restricts what a user sees: to a user, the trash of a project they may not see does not exist (404). A clear never purges an entry the caller could not clear by itself: if one of the caller's sprints holds a trashed task the caller may not clear, the call is refused with 403 before anything changes.",
	OK:          "OK. data is the number of entries cleared.",
	Errors: []ErrorDoc{
		mayNotManage,
		entryMissing,
	},
	Example: Example{Data: raw(`4`)},
	Params:  projectParam,
}

var clearTrashDoc = &Doc{
	Tag:         "trash",
	Summary:     "Clear one entry",
	Description: "Removes the entry from the trash for good and purges its task or sprint through the host's Restorer. Clearing a sprint first clears the entries of the tasks that belonged to it. One transaction: if the Restorer fails (500), nothing changes.\n\nWho may: the user who deleted the task or sprint, or who created it; an admin (the principal's admin flag); or a user the host's Authorizer names a manager of the entry's project. Anyone else of the tenant is answered 403. An id that is not in the caller's tenant's trash (never was, belongs to another tenant, or was just restored or cleared by someone else) is answered 404. Query parameters it does not define are answered 400. Clearing a sprint that holds a trashed task the caller could not clear by itself is refused with 403, and nothing changes.",
	OK:          "OK. The entry is cleared; data is null.",
	Errors: []ErrorDoc{
		mayNotManage,
		entryMissing,
	},
	Example: Example{Data: raw(`null`)},
	Params: []Param{
		{Name: "id", Description: "Trash id of the entry.", Example: 42, Schema: `{"type": "integer", "format": "int64", "minimum": 1}`},
	},
}

// The errors several operations answer alike, each described once in the
// OpenAPI document.
var (
	entryMissing = ErrorDoc{Name: "NotFound", Key: KeyNotFound, When: "No such entry in the caller's tenant's trash."}
	mayNotManage = ErrorDoc{Name: "Forbidden", Key: KeyForbidden, When: "The caller may not manage this entry."}
)
