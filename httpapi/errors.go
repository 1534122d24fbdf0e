package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/envelope"
)

// Error keys of ext.eKey. They are part of the API: clients may switch on them.
const (
	KeyValidation       = "param_validation_error"
	KeyUnauthorized     = "unauthorized"
	KeyForbidden        = "forbidden"
	KeyNotFound         = "resource_not_found"
	KeyConflict         = "resource_conflict"
	KeyTooManyRequests  = "too_many_requests"
	KeyRouteNotFound    = "route_not_found"
	KeyMethodNotAllowed = "method_not_allowed"
	KeyInternal         = "internal_error"
)

// errorRow is how one kind of error is answered.
type errorRow struct {
	target error
	status int
	code   string
	key    string
	msg    string // for errors that carry no message of their own for the client
}

// errorTable is the one place that maps errors to HTTP. An error that matches
// no row is unexpected: it is logged and answered 500 without its text.
var errorTable = []errorRow{
	{deskkit.ErrInvalid, http.StatusBadRequest, envelope.CodeProtocol, KeyValidation, "the request is not valid"},
	{deskkit.ErrUnauthenticated, http.StatusUnauthorized, envelope.CodeProtocol, KeyUnauthorized, "a valid bearer token is required"},
	{deskkit.ErrForbidden, http.StatusForbidden, envelope.CodeBusiness, KeyForbidden, "you may not do this"},
	{deskkit.ErrNotFound, http.StatusNotFound, envelope.CodeBusiness, KeyNotFound, "the resource does not exist"},
	{deskkit.ErrConflict, http.StatusConflict, envelope.CodeBusiness, KeyConflict, "the request conflicts with the current state"},
	{deskkit.ErrRateLimited, http.StatusTooManyRequests, envelope.CodeQuota, KeyTooManyRequests, "too many requests"},
}

// WriteError answers err as an error envelope, with the status, code and key
// of its row in the error table. Only unexpected errors are logged, and their
// text never reaches the client.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	for _, row := range errorTable {
		if !errors.Is(err, row.target) {
			continue
		}
		msg := row.msg
		var input *deskkit.InputError
		var limit *deskkit.RateLimitError
		switch {
		case errors.As(err, &input):
			msg = input.Error()
		case errors.As(err, &limit):
			msg = limit.Message
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(limit)))
		}
		if row.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="deskkit"`)
		}
		s.writeError(w, row.status, row.code, row.key, msg)
		return
	}
	s.cfg.Logger.ErrorContext(r.Context(), "unexpected error", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
	s.writeError(w, http.StatusInternalServerError, envelope.CodeSystem, KeyInternal, "internal server error")
}

func retryAfterSeconds(e *deskkit.RateLimitError) int {
	return int(max(1, math.Ceil(e.RetryAfter.Seconds())))
}

func (s *Server) writeError(w http.ResponseWriter, status int, code, key, msg string) {
	envelope.Write(w, status, envelope.Error(code, key, msg, s.cfg.Now()))
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, http.StatusNotFound, envelope.CodeProtocol, KeyRouteNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
}

// methodNotAllowed answers 405 with the methods that really serve the path.
// httprouter's own Allow header would list OPTIONS, which is not served, and
// PATCH wherever the trash's wildcard PATCH route matches.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	allowed := s.allowed(r.URL.Path)
	if len(allowed) == 0 {
		w.Header().Del("Allow")
		s.notFound(w, r)
		return
	}
	allow := strings.Join(allowed, ", ")
	w.Header().Set("Allow", allow)
	s.writeError(w, http.StatusMethodNotAllowed, envelope.CodeProtocol, KeyMethodNotAllowed,
		fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow))
}

// allowed lists the methods with a route for path, leaving out routes that
// only stand in for another (see Server.phantom).
func (s *Server) allowed(path string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if h, _, _ := s.router.Lookup(m, path); h != nil && !s.phantom(m, path) {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) panicked(w http.ResponseWriter, r *http.Request, v any) {
	s.WriteError(w, r, fmt.Errorf("panic: %v", v))
}
