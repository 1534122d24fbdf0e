package httpapi

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit"
)

// scope is the instrumentation scope of the server's meter and tracer.
const scope = "github.com/deskkit/deskkit/httpapi"

// RequestIDHeader carries the request id, both ways. Every request gets
// an id: its X-Request-Id if valid (ValidRequestID), otherwise a new one,
// 32 random hex digits (an invalid id is replaced, never refused). The
// answer echoes it in X-Request-Id, every error envelope carries it in
// ext.requestId, and the request's context carries it
// (deskkit.RequestID): every line deskkit logs for the request gets it as
// request_id once the host wraps its slog handler with
// deskkit.LogHandler, as the reference server does. A host that logs
// requests itself wraps its whole handler with RequestIDs.
const RequestIDHeader = "X-Request-Id"

// MaxRequestIDLength is the longest incoming request id kept.
const MaxRequestIDLength = 64

// Attribute keys of OpenTelemetry's HTTP semantic conventions.
const (
	attrMethod = "http.request.method"
	attrRoute  = "http.route"
	attrStatus = "http.response.status_code"
	attrClient = "client.address"
)

// ValidRequestID reports whether id, as a client sent it in X-Request-Id,
// is kept as the request's id: 1 to MaxRequestIDLength characters, each
// an ASCII letter or digit or one of . _ : - (what UUIDs, ULIDs, trace ids
// and the ids of common proxies are made of, and nothing that could forge
// a log line or a header). Another id is replaced, not refused.
func ValidRequestID(id string) bool {
	if len(id) == 0 || len(id) > MaxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// RequestIDs gives every request next serves its id as Server does (a
// valid X-Request-Id, else a new one), echoed in the answer's
// X-Request-Id and carried by the request's context (deskkit.RequestID).
// A host wraps its whole handler with it, outside its access log and
// other routes, so that their log lines carry the same id as deskkit's;
// a Server inside keeps the id it finds in the context.
func RequestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := requestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(deskkit.WithRequestID(r.Context(), id)))
	})
}

// requestID is the id of a request that came with X-Request-Id in: in
// if valid, else a new one, 128 random bits in hex. An id is no secret
// (the client sees it, the logs hold it), so it comes from math/rand/v2's
// generator (ChaCha8, seeded by the system), a few nanoseconds, not from
// crypto/rand's system call.
func requestID(in string) string {
	if ValidRequestID(in) {
		return in
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// methodOf is the request's method as the metric's attribute takes it:
// one of HTTP's methods, else _OTHER, so that a client cannot make up
// series.
func methodOf(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// spanName is a request's span name before its route is known.
func spanName(method string) string {
	if method == "_OTHER" {
		return "HTTP"
	}
	return method
}

// responseWriter remembers the status written and the route served.
type responseWriter struct {
	http.ResponseWriter
	status int
	route  string // the operation's template under Prefix; "" when none served
}

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap is for http.ResponseController.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// routed notes that the operation of template route (under Prefix)
// serves the request w answers.
func routed(w http.ResponseWriter, route string) {
	if rw, ok := w.(*responseWriter); ok {
		rw.route = route
	}
}

// finish records a request's duration and ends its span.
func (s *Server) finish(ctx context.Context, span trace.Span, w *responseWriter, r *http.Request, method string, start time.Time) {
	status := w.status
	if status == 0 {
		status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	recording, measured := span.IsRecording(), s.duration.Enabled(ctx)
	if !recording && !measured {
		span.End()
		return // no SDK: no attributes to build
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attribute.String(attrMethod, method), attribute.Int(attrStatus, status))
	if w.route != "" {
		attrs = append(attrs, attribute.String(attrRoute, w.route))
	}
	if measured {
		s.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
	if recording {
		if w.route != "" {
			span.SetName(spanName(method) + " " + w.route)
		}
		span.SetAttributes(attrs...)
		// The client's address (the span's, not the metric's: one series
		// per client would have no bound): the connection's peer, or what
		// a trusted proxy says (Config.TrustedProxies).
		if a := s.proxies.Client(r).Addr; a.IsValid() {
			span.SetAttributes(attribute.String(attrClient, a.String()))
		}
		if status >= 500 {
			// Server errors only: a 4xx is the client's, not a failure of
			// the server (OpenTelemetry's HTTP conventions).
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	span.End()
}
