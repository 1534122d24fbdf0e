// Package httpapi serves deskkit's services over HTTP on
// github.com/julienschmidt/httprouter, every route under /api/v1.
//
// # Overview
//
// New builds a Server (an http.Handler) from a Config naming the services to
// mount and an Authenticator that turns a bearer token into a
// deskkit.Principal. Mount it wherever the host likes; it answers every path
// it is given, so give it /api/v1/ or everything. Hosts may add their own
// endpoints with Handle, which get the same authentication, body limit,
// envelope and error table.
//
// Every answer is an envelope (package envelope). The OpenAPI 3 document of
// the API is embedded and served without authentication at
// GET /api/v1/openapi.json.
//
// httprouter v1.3.0 panics when a static segment and a wildcard share a
// position, so PATCH /api/v1/task/trash/back is served by the route
// /api/v1/task/trash/:id, which answers it when the wildcard is "back" and
// 404 otherwise.
//
// # Errors
//
// One table maps errors to HTTP:
//
//	*deskkit.InputError      400  E0  param_validation_error  (msg names field and rule)
//	deskkit.ErrUnauthenticated 401 E0 unauthorized            (WWW-Authenticate: Bearer)
//	deskkit.ErrForbidden     403  E1  forbidden
//	deskkit.ErrNotFound      404  E1  resource_not_found
//	deskkit.ErrConflict      409  E1  resource_conflict
//	*deskkit.RateLimitError  429  E3  too_many_requests       (Retry-After)
//	deskkit.ErrUnavailable, database outages, request deadline
//	                         503  E2  service_unavailable     (Retry-After; logged once per interval)
//	unknown route            404  E0  route_not_found
//	wrong method             405  E0  method_not_allowed      (Allow)
//	anything else, panics    500  E2  internal_error          (logged; text never sent)
//
// Malformed query strings, unknown or repeated parameters, malformed JSON,
// unknown JSON fields, wrong types, numbers out of range and bodies over
// Config.MaxBodyBytes (1 MiB) are all 400 with a message naming the field.
//
// # Testing
//
// The tests drive every route on SQLite and PostgreSQL, and check real
// responses against the OpenAPI document with kin-openapi.
package httpapi
