package httpapi

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

func (s *Server) mountTrash(t *trash.Trash) {
	h := trashHandlers{t}
	s.handle(http.MethodGet, "/task/trash/search", h.search)
	s.handle(http.MethodGet, "/task/trash/count", h.count)
	s.handle(http.MethodDelete, "/task/trash", h.clearAll)
	s.handle(http.MethodDelete, "/task/trash/{id}", h.clear)
	s.handle(http.MethodPatch, "/task/trash/{id}/back", h.restore)
	// httprouter v1.3.0 panics when a static segment and a wildcard share a
	// position, so PATCH /task/trash/back is served by the wildcard route and
	// told apart by its value.
	restoreAll := s.endpoint(h.restoreAll)
	s.router.PATCH(Prefix+routerPath("/task/trash/{id}"), func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if ps.ByName("id") != "back" {
			s.methodNotAllowed(w, r) // PATCH /task/trash/7: only DELETE serves that path
			return
		}
		restoreAll(w, r, ps)
	})
	s.phantoms = append(s.phantoms, func(method, path string) bool {
		rest, ok := strings.CutPrefix(path, Prefix+"/task/trash/")
		return ok && method == http.MethodPatch && rest != "back" && !strings.Contains(rest, "/")
	})
	s.routes = append(s.routes, Route{http.MethodPatch, Prefix + "/task/trash/back"})
}

type trashHandlers struct{ t *trash.Trash }

func (h trashHandlers) search(r *http.Request, p deskkit.Principal) (any, error) {
	v, err := query(r)
	if err != nil {
		return nil, err
	}
	q, err := parseSearchQuery(v)
	if err != nil {
		return nil, err
	}
	return h.t.Search(r.Context(), p, q)
}

// projectID reads the one query parameter of the project-wide operations.
func projectID(r *http.Request) (int64, error) {
	v, err := query(r)
	if err != nil {
		return 0, err
	}
	if err := only(v, "projectId"); err != nil {
		return 0, err
	}
	return requiredID(v, "projectId")
}

func (h trashHandlers) count(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := projectID(r)
	if err != nil {
		return nil, err
	}
	return h.t.Count(r.Context(), p, id)
}

func (h trashHandlers) clearAll(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := projectID(r)
	if err != nil {
		return nil, err
	}
	return h.t.ClearAll(r.Context(), p, id)
}

func (h trashHandlers) restoreAll(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := projectID(r)
	if err != nil {
		return nil, err
	}
	return h.t.RestoreAll(r.Context(), p, id)
}

func (h trashHandlers) clear(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := pathID("id", r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return nil, h.t.Clear(r.Context(), p, id)
}

func (h trashHandlers) restore(r *http.Request, p deskkit.Principal) (any, error) {
	id, err := pathID("id", r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return nil, h.t.Restore(r.Context(), p, id)
}
