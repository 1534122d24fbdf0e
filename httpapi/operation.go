package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/swaggest/jsonschema-go"

	"github.com/deskkit/deskkit"
)

// operation is one route as data: what registration, Allow, the
// unknown-parameter check, Routes and the OpenAPI document need. op builds
// deskkit's own from a typed handler; Handle builds a host's.
type operation struct {
	id     string // the operationId of the OpenAPI document
	method string
	path   string  // the template under Prefix, with {name} wildcards
	params []param // path and query parameters; other query parameters are 400
	fn     Endpoint

	// serve, if set, answers instead of fn without authentication or
	// envelope (the OpenAPI document).
	serve http.HandlerFunc
	host  bool   // added with Handle: not among Routes
	route string // Prefix+path, the http.route of metrics and spans

	doc    *doc
	req    any // a zero Req: its path and query fields, for the document
	body   any // a zero body (the body:"json" field), nil if none
	resp   any // a zero Resp
	result any // a zero result[Resp], the success envelope
}

// param is a path or query parameter.
type param struct {
	name     string
	in       string // "path" or "query"
	integer  bool   // checked for its one spelling
	required bool
}

// doc is what the OpenAPI document says of an operation besides its types.
type doc struct {
	tag, summary, description string
	ok                        string   // what a success means
	errors                    []errDoc // besides the ones every operation answers
	example                   example  // a request that succeeds, and its data
	more                      map[string]example
}

// errDoc is one error an operation answers: a key of the error table,
// what it means here ("" for the table's words) and, when several
// operations give it alike, the name of the one response they refer to.
type errDoc struct {
	key, when, name string
}

// example is a request body and the data of its answer.
type example struct {
	summary    string
	body, data any
}

// queryDecoder is a request that reads the whole query string itself, as
// the trash search does; its query fields only declare the parameters.
type queryDecoder interface {
	decodeQuery(v url.Values) error
}

// validator is a request with rules beyond its fields' types.
type validator interface {
	validate() error
}

// none is the Resp of an operation whose data is always null.
type none struct{}

// JSONSchema is null: data is always null.
func (none) JSONSchema() (jsonschema.Schema, error) {
	var s jsonschema.Schema
	s.AddType(jsonschema.Null)
	return *s.WithDescription("Always null."), nil
}

// op declares the operation id at method and path. Its request is decoded
// into a Req, a struct whose tagged fields say where their values come
// from, before fn runs; fn's Resp is the data of the success envelope.
//
//	ID        int64  `path:"id"`                       // a path parameter
//	ProjectID int64  `query:"projectId" required:"true"` // a query parameter
//	Body      T      `body:"json"`                     // the body, through DecodeJSON
//
// int64 fields take positive integers, int fields integers, bool fields
// true or false, string fields anything. The same tags, with
// jsonschema-go's (description, example, enum, minimum...), give the
// document's parameters. Every failure is a *deskkit.InputError naming
// the parameter. op panics if Req is no such struct.
func op[Req, Resp any](id, method, path string, d *doc, fn func(ctx context.Context, p deskkit.Principal, req Req) (Resp, error)) operation {
	var zero Req
	t := reflect.TypeOf(zero)
	if t == nil || t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("httpapi: %s: request type %T is not a struct", id, zero))
	}
	_, ownQuery := any(&zero).(queryDecoder)
	o := operation{id: id, method: method, path: path, doc: d, req: zero, resp: *new(Resp), result: result[Resp]{}}
	var fields []fieldDecoder
	for i := range t.NumField() {
		f := t.Field(i)
		fd, ok := newFieldDecoder(id, f)
		if !ok {
			continue
		}
		if fd.in == "body" {
			o.body = reflect.Zero(f.Type).Interface()
		} else {
			o.params = append(o.params, param{name: fd.name, in: fd.in, integer: fd.kind == reflect.Int64 || fd.kind == reflect.Int, required: fd.required})
		}
		if !(ownQuery && fd.in == "query") {
			fields = append(fields, fd)
		}
	}
	o.fn = func(r *http.Request, p deskkit.Principal) (any, error) {
		var req Req
		if err := decodeRequest(r, &req, fields); err != nil {
			return nil, err
		}
		return fn(r.Context(), p, req)
	}
	return o
}

func decodeRequest[Req any](r *http.Request, req *Req, fields []fieldDecoder) error {
	v, err := query(r)
	if err != nil {
		return err
	}
	rv := reflect.ValueOf(req).Elem()
	for _, fd := range fields {
		if err := fd.decode(r, v, rv.Field(fd.index)); err != nil {
			return err
		}
	}
	if qd, ok := any(req).(queryDecoder); ok {
		if err := qd.decodeQuery(v); err != nil {
			return err
		}
	}
	if val, ok := any(req).(validator); ok {
		return val.validate()
	}
	return nil
}

// fieldDecoder fills one field of a request struct.
type fieldDecoder struct {
	index    int
	in       string // "path", "query" or "body"
	name     string
	required bool
	kind     reflect.Kind
}

func newFieldDecoder(op string, f reflect.StructField) (fieldDecoder, bool) {
	fd := fieldDecoder{index: f.Index[0], kind: f.Type.Kind(), required: f.Tag.Get("required") == "true"}
	if tag, ok := f.Tag.Lookup("path"); ok {
		fd.in, fd.name, fd.required = "path", tag, true
	} else if tag, ok := f.Tag.Lookup("query"); ok {
		fd.in, fd.name = "query", tag
	} else if tag, ok := f.Tag.Lookup("body"); ok {
		if tag != "json" {
			panic(fmt.Sprintf("httpapi: %s: field %s: body tag must be \"json\"", op, f.Name))
		}
		fd.in = "body"
		return fd, true
	} else {
		return fd, false
	}
	switch fd.kind {
	case reflect.Int64, reflect.Int, reflect.String, reflect.Bool:
	default:
		panic(fmt.Sprintf("httpapi: %s: field %s: a path or query field must be int64, int, string or bool", op, f.Name))
	}
	return fd, fd.name != ""
}

func (fd fieldDecoder) decode(r *http.Request, v url.Values, dst reflect.Value) error {
	var s string
	switch fd.in {
	case "body":
		return DecodeJSON(r, dst.Addr().Interface())
	case "path":
		s = r.PathValue(fd.name)
	default:
		vals := v[fd.name]
		if len(vals) > 1 {
			return deskkit.Invalid(fd.name, "must be given once")
		}
		if len(vals) == 0 || vals[0] == "" {
			if fd.required {
				return deskkit.Invalid(fd.name, "is required")
			}
			return nil
		}
		s = vals[0]
	}
	switch fd.kind {
	case reflect.Int64:
		n, err := ParseID(fd.name, s)
		if err != nil {
			return err
		}
		dst.SetInt(n)
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return deskkit.Invalid(fd.name, "must be an integer")
		}
		dst.SetInt(int64(n))
	case reflect.Bool:
		if s != "true" && s != "false" {
			return deskkit.Invalid(fd.name, "must be true or false")
		}
		dst.SetBool(s == "true")
	default:
		dst.SetString(s)
	}
	return nil
}

// wildcards lists the {name} segments of a template.
func wildcards(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			out = append(out, strings.TrimSuffix(name, "}"))
		}
	}
	return out
}
