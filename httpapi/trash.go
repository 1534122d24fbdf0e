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
		Op("searchTrash", http.MethodGet, "/task/trash/search", h.search),
		Op("countTrash", http.MethodGet, "/task/trash/count", h.count),
		Op("restoreTrash", http.MethodPatch, "/task/trash/{id}/back", h.restore),
		Op("restoreAllTrash", http.MethodPatch, "/task/trash/back", h.restoreAll),
		Op("clearTrash", http.MethodDelete, "/task/trash/{id}", h.clear),
		Op("clearAllTrash", http.MethodDelete, "/task/trash", h.clearAll),
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
