package deskkit

import (
	"context"
	"log/slog"
)

// requestIDKey is the context key of a request id.
type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id id. httpapi gives
// every request one (see its package documentation); a host serving
// deskkit's services otherwise (a queue consumer, a console) may set its
// own, so that the services' log lines carry it too.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id ctx carries, "" if none.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// LogKeyRequestID is the attribute LogHandler adds.
const LogKeyRequestID = "request_id"

// LogHandler wraps h so that every record logged with a context carrying
// a request id (WithRequestID) gets it as the attribute request_id; other
// records pass unchanged. deskkit's packages log through the context of
// the request they serve (Logger.ErrorContext and the like), so a host
// that wraps its handler finds every line a request wrote by the id the
// client saw in X-Request-Id:
//
//	logger := slog.New(deskkit.LogHandler(slog.NewJSONHandler(os.Stderr, nil)))
//
// The attribute goes where h puts the record's own attributes: inside the
// groups of a logger made with WithGroup.
func LogHandler(h slog.Handler) slog.Handler {
	if lh, ok := h.(logHandler); ok {
		return lh // wrapped once is enough
	}
	return logHandler{h}
}

type logHandler struct{ next slog.Handler }

func (h logHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" {
			r = r.Clone()
			r.AddAttrs(slog.String(LogKeyRequestID, id))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.next.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.next.WithGroup(name)}
}
