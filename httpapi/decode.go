package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/deskkit/deskkit"
)

// DecodeJSON reads r's body, a single JSON object, into dst. Unknown fields,
// wrong types, numbers out of range, malformed JSON, a body over the
// server's limit (1 MiB by default) and a non-JSON content type are all
// *deskkit.InputError values naming the field where there is one.
func DecodeJSON(r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return deskkit.Invalid("Content-Type", "must be application/json")
		}
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err)
		}
		return deskkit.Invalid("body", "must hold exactly one JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return deskkit.Invalid("body", "is required: a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return deskkit.Invalid("body", "must be complete JSON; it ends early")
	case errors.As(err, &tooBig):
		return deskkit.Invalid("body", "must be at most %d bytes", tooBig.Limit)
	case errors.As(err, &syntax):
		return deskkit.Invalid("body", "must be valid JSON; error at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return deskkit.Invalid("body", "must be a JSON object")
		}
		return deskkit.Invalid(typ.Field, "must be %s", jsonKind(typ))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return deskkit.Invalid(name, "is not a field of this request")
	default:
		return deskkit.Invalid("body", "must be a valid JSON object")
	}
}

func jsonKind(e *json.UnmarshalTypeError) string {
	if e.Type == digitsType {
		return "digits, written as a number or a string"
	}
	switch e.Type.Kind().String() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		if strings.HasPrefix(e.Value, "number") {
			return fmt.Sprintf("an integer that fits %s", e.Type.Kind())
		}
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	default:
		return "a " + e.Type.Kind().String()
	}
}
