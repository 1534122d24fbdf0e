package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/deskkit/deskkit"
)

// DecodeJSON reads r's body, a single JSON object, into dst. Unknown fields,
// keys given twice at any depth, wrong types, numbers out of range,
// malformed JSON and a non-JSON content type are all *deskkit.InputError
// values naming the field where there is one. A body over the server's
// limit (Config.MaxBodyBytes, 1 MiB by default) is an error the server
// answers 413 request_too_large, naming the limit. Keys match field names exactly: encoding/json would
// take "MOBILE" for the field mobile, DecodeJSON answers that it is not a
// field of this request.
func DecodeJSON(r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return deskkit.Invalid("Content-Type", "must be application/json")
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return jsonError(err)
	}
	if err := checkKeys(body, reflect.TypeOf(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
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

// bodyTooLarge is a body over the server's limit, answered 413
// request_too_large with a message that names the limit.
type bodyTooLarge struct{ err *http.MaxBytesError }

func (e *bodyTooLarge) Error() string { return e.ClientMessage() }
func (e *bodyTooLarge) Unwrap() error { return e.err }
func (e *bodyTooLarge) ClientMessage() string {
	return fmt.Sprintf("body must be at most %d bytes", e.err.Limit)
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
		return &bodyTooLarge{tooBig}
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

// maxKeyDepth bounds checkKeys' recursion; deeper bodies are left to
// encoding/json, which refuses them.
const maxKeyDepth = 1000

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkKeys walks body's tokens beside dst's type, before encoding/json
// decodes it, for what encoding/json lets through: a key given twice in
// one object (the last would win) and a key that names a field of a struct
// only without regard to case. Objects decoded into maps, interfaces and
// json.Unmarshalers are checked for duplicates only. Malformed JSON is
// left to the decoder, which says where it is.
func checkKeys(body []byte, dst reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var in *deskkit.InputError
	if err := walkValue(dec, dst, "", 0); errors.As(err, &in) {
		return in
	}
	return nil
}

func walkValue(dec *json.Decoder, t reflect.Type, path string, depth int) error {
	if depth > maxKeyDepth {
		return errors.New("too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	t = plain(t)
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, t, path, depth)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkValue(dec, elem, path, depth+1); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return nil
}

func walkObject(dec *json.Decoder, t reflect.Type, path string, depth int) error {
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonFields(t, map[string]reflect.Type{})
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		name := key
		if path != "" {
			name = path + "." + key
		}
		if seen[key] {
			return deskkit.Invalid(name, "must be given once")
		}
		seen[key] = true
		var vt reflect.Type
		switch {
		case fields != nil:
			ft, ok := fields[key]
			if !ok {
				return deskkit.Invalid(name, "is not a field of this request")
			}
			vt = ft
		case t != nil && t.Kind() == reflect.Map:
			vt = t.Elem()
		}
		if err := walkValue(dec, vt, name, depth+1); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// plain is t without pointers; nil for a type that decodes JSON itself
// (json.Unmarshaler), whose keys are its own business.
func plain(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// jsonFields adds the JSON keys of struct t, as encoding/json names them
// (the json tag's name, else the Go name; embedded structs without a name
// promote theirs), with the types they decode into.
// A field of t shadows a promoted one of the same name, as in Go.
func jsonFields(t reflect.Type, out map[string]reflect.Type) map[string]reflect.Type {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := out[name]; !ok {
			out[name] = f.Type
		}
	}
	for _, et := range embedded {
		jsonFields(et, out)
	}
	return out
}
