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
func trashRoutes(t TrashService) []operation {
	h := trashHandlers{t}
	return []operation{
		op("searchTrash", http.MethodGet, "/task/trash/search", searchTrashDoc, h.search),
		op("countTrash", http.MethodGet, "/task/trash/count", countTrashDoc, h.count),
		op("getTrash", http.MethodGet, "/task/trash/{id}", getTrashDoc, h.get),
		op("restoreTrash", http.MethodPatch, "/task/trash/{id}/back", restoreTrashDoc, h.restore),
		op("restoreAllTrash", http.MethodPatch, "/task/trash/back", restoreAllTrashDoc, h.restoreAll),
		op("clearTrash", http.MethodDelete, "/task/trash/{id}", clearTrashDoc, h.clear),
		op("clearAllTrash", http.MethodDelete, "/task/trash", clearAllTrashDoc, h.clearAll),
	}
}

type trashHandlers struct{ t TrashService }

// searchRequest is the query string of a search, which parseSearchQuery
// reads; its fields declare the parameters, for the unknown-parameter
// check and the document.
type searchRequest struct {
	TargetType  string `query:"targetType" required:"true" enum:"TASK,TASK_SPRINT" example:"TASK" description:"Search the trash of tasks or of sprints."`
	ProjectID   int64  `query:"projectId" minimum:"1" example:"10" description:"Only entries of this project; every project of the tenant if absent."`
	TargetName  string `query:"targetName" maxLength:"512" example:"login" description:"Case-insensitive substring of the task or sprint name; %, _ and \\ match themselves."`
	DeletedDate string `query:"deletedDate" pattern:"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])| ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])$" example:"2026-11-22T01:00:00Z" description:"Only entries deleted in exactly this second. RFC 3339 (2026-11-22T01:00:00Z; T and Z also in lower case; offsets up to ±23:59) or yyyy-MM-dd HH:mm:ss, read as UTC; fractions of a second are cut."`
	PageNo      int    `query:"pageNo" minimum:"1" maximum:"100000" default:"1" example:"1" description:"1-based page number."`
	PageSize    int    `query:"pageSize" minimum:"1" maximum:"2000" default:"10" example:"20" description:"Entries per page."`
	OrderBy     string `query:"orderBy" enum:"id,deletedDate,targetName" default:"id" example:"deletedDate" description:"Sort field; ties are broken by id in the same direction, so pages never overlap."`
	OrderSort   string `query:"orderSort" enum:"ASC,DESC" default:"DESC" example:"DESC" description:"Sort direction."`
	InfoScope   string `query:"infoScope" enum:"BASIC,DETAIL" default:"BASIC" example:"BASIC" description:"BASIC: the entries' own fields. DETAIL: also the names and avatars of creator and deleter, from the host's user resolver (without one, DETAIL answers like BASIC)."`
	// Filters 0 to trash.MaxFilters-1; all must hold.
	Key0   string `query:"filters[0].key" enum:"id,projectId,targetId,targetType,targetName,sprintId,createdBy,deletedBy,deletedDate" example:"targetName" description:"Field filter 0 compares. Required when any filters[0] parameter is given. All filters must hold."`
	Op0    string `query:"filters[0].op" enum:"GREATER_THAN,LESS_THAN,GREATER_THAN_EQUAL,LESS_THAN_EQUAL,EQUAL,NOT_EQUAL,MATCH,MATCH_END,NOT_MATCH,NOT_MATCH_END,IN,NOT_IN,IS_NULL,IS_NOT_NULL" example:"MATCH" description:"Operator of filter 0. GREATER_THAN, LESS_THAN, GREATER_THAN_EQUAL and LESS_THAN_EQUAL apply to numbers and dates; EQUAL and NOT_EQUAL to every key; MATCH (contains), MATCH_END (starts with), NOT_MATCH and NOT_MATCH_END, all ignoring case, only to targetName; IS_NULL and IS_NOT_NULL only to sprintId; IN and NOT_IN take a list. NOT_EQUAL and NOT_IN on sprintId also match entries without a sprint."`
	Value0 string `query:"filters[0].value" example:"docs" description:"Value of filter 0, as text: an integer (plain decimal digits, as ids are written: no plus sign, no leading zero), a date (RFC 3339 or yyyy-MM-dd HH:mm:ss, UTC, as deletedDate), a name (1 to 512 characters) or a target type, as the key needs; for IN and NOT_IN a comma-separated list of 1 to 500 of those, optionally in brackets. Must be empty or absent for IS_NULL and IS_NOT_NULL."`
	Key1   string `query:"filters[1].key" enum:"id,projectId,targetId,targetType,targetName,sprintId,createdBy,deletedBy,deletedDate" example:"sprintId" description:"Field filter 1 compares, as filters[0].key."`
	Op1    string `query:"filters[1].op" enum:"GREATER_THAN,LESS_THAN,GREATER_THAN_EQUAL,LESS_THAN_EQUAL,EQUAL,NOT_EQUAL,MATCH,MATCH_END,NOT_MATCH,NOT_MATCH_END,IN,NOT_IN,IS_NULL,IS_NOT_NULL" example:"IS_NOT_NULL" description:"Operator of filter 1, as filters[0].op."`
	Value1 string `query:"filters[1].value" example:"7" description:"Value of filter 1, as filters[0].value."`
	Key2   string `query:"filters[2].key" enum:"id,projectId,targetId,targetType,targetName,sprintId,createdBy,deletedBy,deletedDate" example:"deletedDate" description:"Field filter 2 compares, as filters[0].key."`
	Op2    string `query:"filters[2].op" enum:"GREATER_THAN,LESS_THAN,GREATER_THAN_EQUAL,LESS_THAN_EQUAL,EQUAL,NOT_EQUAL,MATCH,MATCH_END,NOT_MATCH,NOT_MATCH_END,IN,NOT_IN,IS_NULL,IS_NOT_NULL" example:"LESS_THAN_EQUAL" description:"Operator of filter 2, as filters[0].op."`
	Value2 string `query:"filters[2].value" example:"2026-11-22 01:00:00" description:"Value of filter 2, as filters[0].value."`

	q trash.Query
}

func (r *searchRequest) decodeQuery(v url.Values) (err error) {
	r.q, err = parseSearchQuery(v)
	return err
}

// projectRequest names the project of the project-wide operations.
type projectRequest struct {
	ProjectID int64 `query:"projectId" required:"true" minimum:"1" example:"10" description:"The project. It is the operation's only parameter."`
}

// entryRequest names one entry.
type entryRequest struct {
	ID int64 `path:"id" minimum:"1" example:"42" description:"Trash id of the entry."`
}

func (h trashHandlers) search(ctx context.Context, p deskkit.Principal, req searchRequest) (trash.Page, error) {
	return h.t.Search(ctx, p, req.q)
}

func (h trashHandlers) get(ctx context.Context, p deskkit.Principal, req entryRequest) (trash.Entry, error) {
	return h.t.Get(ctx, p, req.ID)
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

func (h trashHandlers) clear(ctx context.Context, p deskkit.Principal, req entryRequest) (*none, error) {
	return nil, h.t.Clear(ctx, p, req.ID)
}

func (h trashHandlers) restore(ctx context.Context, p deskkit.Principal, req entryRequest) (*none, error) {
	return nil, h.t.Restore(ctx, p, req.ID)
}

var restoreTrashDoc = &doc{
	tag:     "trash",
	summary: "Restore one entry",
	description: prose(`
		Takes the entry out of the trash and brings its task or sprint back through the host's
		Restorer. A task whose sprint is in the trash too brings the sprint back first. It all
		happens in one transaction: if the Restorer fails (500), the entries stay.

		Who may: the user who deleted the task or sprint, or who created it; an admin (the
		principal's admin flag); or a user the host's Authorizer names a manager of the entry's
		project. Anyone else of the tenant is answered 403. An id that is not in the caller's
		tenant's trash (never was, belongs to another tenant, or was just restored or cleared by
		someone else) is answered 404. Restoring a task brings back its trashed sprint even if the
		caller did not delete that sprint: the task cannot live without it.
	`),
	ok: "OK. The entry is restored; data is null.",
	errors: []errDoc{
		mayNotManage,
		entryMissing,
	},
	example: example{data: raw(`null`)},
}

// projectWho is who restoreAllTrash and clearAllTrash affect, as both
// documents say it.
const projectWho = `
		Who may: any authenticated user; what is affected depends on who calls. An admin, or a user
		the host's Authorizer names a manager of the project, affects every entry of the project;
		anyone else only the entries they deleted or created (so never 403). Entries of other
		tenants are never touched. The work runs in batches, each its own transaction; if a batch
		fails (500), the batches before it stay done. A host whose Authorizer also implements
		trash.ProjectViewer restricts what a user sees: to a user, the trash of a project they may
		not see does not exist (404).`

var restoreAllTrashDoc = &doc{
	tag:     "trash",
	summary: "Restore all tasks and sprints of a project",
	description: prose(`
		Restores, sprints first, every entry of the project that the caller may manage, and answers
		how many entries it restored (sprints brought back for their tasks included).

` + projectWho + `
	`),
	ok: "OK. data is the number of entries restored.",
	errors: []errDoc{
		entryMissing,
	},
	example: example{data: raw(`3`)},
}

var searchTrashDoc = &doc{
	tag:     "trash",
	summary: "Search the trash of tasks or sprints",
	description: prose(`
		Full-text search of the trash: a page of the caller's tenant's entries of one target type
		matching every given condition, and the number of all matches. Who may: any authenticated
		user. Without a ProjectViewer every entry of the tenant is visible to every user of the
		tenant (restoring and clearing are what is restricted); with one, a search of a project the
		user may not see is 404, and a search across projects covers only the visible ones, totals
		included. Every entry says who deleted it (deletedBy, and deletedByName, as the host's user
		directory names them) and when retention will purge it (purgeDate: deletedDate plus the
		server's retention; null when the server keeps entries until they are cleared); infoScope
		DETAIL adds the creator's name and both avatars.
	`),
	ok: "OK. data is one page of entries and the number of all matches.",
	errors: []errDoc{
		entryMissing,
	},
	example: example{data: raw(`{"total": 1, "list": [{"id": 42, "tenantId": 1, "projectId": 10, "targetType": "TASK", "targetId": 200, "targetName": "Write docs", "sprintId": 100, "createdBy": 1, "deletedBy": 2, "deletedDate": "2026-11-22T01:00:00Z", "purgeDate": "2026-12-22T01:00:00Z", "deletedByName": "Alice"}]}`)},
}

var getTrashDoc = &doc{
	tag:     "trash",
	summary: "Get one entry",
	description: prose(`
		One entry of the caller's tenant's trash, with the names and avatars of its creator and
		deleter as a search with infoScope DETAIL gives them. Who may: any authenticated user who
		may see the entry's project (every user of the tenant, unless the host's Authorizer is a
		trash.ProjectViewer). An id that is not in the caller's tenant's trash, or is in a project
		the caller may not see, is answered 404.
	`),
	ok: "OK. data is the entry.",
	errors: []errDoc{
		entryMissing,
	},
	example: example{data: raw(`{"id": 42, "tenantId": 1, "projectId": 10, "targetType": "TASK", "targetId": 200, "targetName": "Write docs", "sprintId": 100, "createdBy": 1, "deletedBy": 2, "deletedDate": "2026-11-22T01:00:00Z", "purgeDate": "2026-12-22T01:00:00Z", "createdByName": "Bob", "deletedByName": "Alice"}`)},
}

var countTrashDoc = &doc{
	tag:     "trash",
	summary: "Count all task and sprint trash of a project",
	description: prose(`
		Counts the entries, tasks and sprints, that the project has in the caller's tenant's trash.
		Who may: any authenticated user of the tenant. A host whose Authorizer also implements
		trash.ProjectViewer restricts what a user sees: to a user, the trash of a project they may
		not see does not exist (404).
	`),
	ok: "OK. data is the number of entries.",
	errors: []errDoc{
		entryMissing,
	},
	example: example{data: raw(`4`)},
}

var clearAllTrashDoc = &doc{
	tag:     "trash",
	summary: "Clear all trash of a project",
	description: prose(`
		Removes for good every entry of the project that the caller may manage and purges their
		tasks and sprints through the host's Restorer (tasks before their sprints), and answers how
		many entries it cleared (tasks of cleared sprints included).

` + projectWho + `
		A clear never purges an entry the caller could not clear by
		itself: if one of the caller's sprints holds a trashed task the caller may not clear, the
		call is refused with 403 before anything changes.
	`),
	ok: "OK. data is the number of entries cleared.",
	errors: []errDoc{
		mayNotManage,
		entryMissing,
	},
	example: example{data: raw(`4`)},
}

var clearTrashDoc = &doc{
	tag:     "trash",
	summary: "Clear one entry",
	description: prose(`
		Removes the entry from the trash for good and purges its task or sprint through the host's
		Restorer. Clearing a sprint first clears the entries of the tasks that belonged to it. One
		transaction: if the Restorer fails (500), nothing changes.

		Who may: the user who deleted the task or sprint, or who created it; an admin (the
		principal's admin flag); or a user the host's Authorizer names a manager of the entry's
		project. Anyone else of the tenant is answered 403. An id that is not in the caller's
		tenant's trash (never was, belongs to another tenant, or was just restored or cleared by
		someone else) is answered 404. Clearing a sprint that holds a trashed task the caller could
		not clear by itself is refused with 403, and nothing changes.
	`),
	ok: "OK. The entry is cleared; data is null.",
	errors: []errDoc{
		mayNotManage,
		entryMissing,
	},
	example: example{data: raw(`null`)},
}

// The errors several operations answer alike, each described once in the
// OpenAPI document.
var (
	entryMissing = errDoc{name: "NotFound", key: KeyNotFound, when: "No such entry in the caller's tenant's trash."}
	mayNotManage = errDoc{name: "Forbidden", key: KeyForbidden, when: "The caller may not manage this entry."}
)
