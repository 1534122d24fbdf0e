// Package envelope is the response body of every deskkit operation, success
// or error:
//
//	{"code": "S", "msg": "Success", "data": ..., "datetime": "2026-11-22T01:00:00Z", "ext": {}}
//
// # Overview
//
// OK and Error build an envelope, and Write sends it with its HTTP status;
// the package's Example writes one of each. httpapi answers every request
// this way, and a host's own routes mounted on it (Server.Handle) do too.
//
// # Codes
//
// Code is "S" on success. Errors use "E0" for protocol and input errors, "E1"
// for business-rule errors, "E2" for system errors (the service is
// unavailable, 503, or failed unexpectedly, 500) and "E3" for quota errors;
// ext.eKey then carries a stable snake_case key such as
// "param_validation_error". The HTTP status travels beside the body, not in
// it: see package httpapi for which error gets which status.
package envelope

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Codes of the code field.
const (
	CodeSuccess  = "S"
	CodeProtocol = "E0" // malformed request, bad input, unknown route, no credential
	CodeBusiness = "E1" // forbidden, not found, conflict
	CodeSystem   = "E2" // service unavailable (retry later) or unexpected failure
	CodeQuota    = "E3" // rate limit
)

// KeyExt is the ext key that carries an error's machine-readable key.
const KeyExt = "eKey"

// RequestIDExt is the ext key that carries, in an error envelope, the id
// of the request (the X-Request-Id header of the answer), which the
// server's log lines of the request carry too.
const RequestIDExt = "requestId"

// Envelope is the JSON object every operation answers with.
type Envelope struct {
	Code     string         `json:"code"`
	Msg      string         `json:"msg"`
	Data     any            `json:"data"`
	Datetime string         `json:"datetime"`
	Ext      map[string]any `json:"ext"`
}

// OK is the envelope of a successful operation answered at now.
func OK(data any, now time.Time) Envelope {
	return Envelope{Code: CodeSuccess, Msg: "Success", Data: data, Datetime: stamp(now), Ext: map[string]any{}}
}

// Error is the envelope of a failed operation: code is one of the E codes,
// key the stable error key and msg a sentence for a person.
func Error(code, key, msg string, now time.Time) Envelope {
	return Envelope{Code: code, Msg: msg, Datetime: stamp(now), Ext: map[string]any{KeyExt: key}}
}

// Write sends env with the given HTTP status as application/json.
func Write(w http.ResponseWriter, status int, env Envelope) {
	if env.Ext == nil {
		env.Ext = map[string]any{}
	}
	// Encoded into a pooled buffer and written from it: no copy of the
	// body per answer, and nothing written before the whole body encoded.
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(env); err != nil {
		// Only data can fail to marshal; answer without it rather than with half a body.
		status = http.StatusInternalServerError
		fallback := Error(CodeSystem, "internal_error", "internal server error", time.Time{})
		fallback.Datetime = env.Datetime
		buf.Reset()
		_ = json.NewEncoder(buf).Encode(fallback)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// buffers holds Write's buffers.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled is the largest buffer kept for reuse: one that grew for a
// large page goes to the garbage collector rather than stay pinned.
const maxPooled = 64 << 10

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		buffers.Put(b)
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
