package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/deskkit/deskkit"
)

// QueryDecoder is implemented by (a pointer to) a request struct that reads
// the whole query string itself, such as the trash search with its
// filters[n].key family. QueryParams declares what it reads, for the
// unknown-parameter check and the OpenAPI walk.
type QueryDecoder interface {
	QueryParams() []Param
	DecodeQuery(v url.Values) error
}

// Validator is implemented by (a pointer to) a request struct with rules
// beyond its fields' types; Validate returns *deskkit.InputError values (or
// other errors of the table).
type Validator interface {
	Validate() error
}

// Op declares the operation id (the operationId of the OpenAPI document)
// at method and path (a template under Prefix), whose request is decoded
// into a Req before fn runs, and whose answer is a success envelope with
// fn's Resp as data (a nil *None is data null). Req and Resp are what the
// OpenAPI document is generated from; Operation.Doc adds what types do not
// say. Req is a struct whose tagged fields say where
// their values come from:
//
//	ID        int64  `path:"id"`                    // a path parameter
//	ProjectID int64  `query:"projectId,required"`   // a query parameter
//	Body      T      `body:"json"`                  // the body, through DecodeJSON
//
// int64 fields take positive integers (deskkit's ids), int fields
// integers, bool fields true or false, string fields anything. A Req that
// is a QueryDecoder reads the query string itself; one that is a Validator
// is validated after decoding. Every failure is a *deskkit.InputError
// naming the parameter, answered 400; so are query parameters Req does not
// declare. Op panics if Req is not such a struct: that is a programming
// error, found when the routes are declared.
func Op[Req, Resp any](id, method, path string, fn func(ctx context.Context, p deskkit.Principal, req Req) (Resp, error)) Operation {
	var zero Req
	t := reflect.TypeOf(zero)
	if t == nil || t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("httpapi.Op %s: request type %T is not a struct", id, zero))
	}
	var fields []fieldDecoder
	var params []Param
	var body reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		fd, p, ok := newFieldDecoder(id, f)
		if !ok {
			continue
		}
		fields = append(fields, fd)
		if p.Name != "" {
			params = append(params, p)
		}
		if fd.in == "body" {
			body = f.Type
		}
	}
	if qd, ok := any(&zero).(QueryDecoder); ok {
		params = append(params, qd.QueryParams()...)
	}
	return Operation{
		ID: id, Method: method, Path: path, Params: params,
		Endpoint: func(r *http.Request, p deskkit.Principal) (any, error) {
			var req Req
			if err := decodeRequest(r, &req, fields); err != nil {
				return nil, err
			}
			resp, err := fn(r.Context(), p, req)
			if err != nil {
				return nil, err
			}
			return resp, nil
		},
		types: &opTypes{body: body, resp: reflect.TypeFor[Resp]()},
	}
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
	if qd, ok := any(req).(QueryDecoder); ok {
		if err := qd.DecodeQuery(v); err != nil {
			return err
		}
	}
	if val, ok := any(req).(Validator); ok {
		return val.Validate()
	}
	return nil
}

// None is the Resp of an operation whose data is always null: it returns
// a nil *None.
type None struct{}

// opTypes are the Go types an Op was declared with.
type opTypes struct {
	body reflect.Type // the body:"json" field's type; nil if none
	resp reflect.Type // Resp
}

// fieldDecoder fills one field of a request struct.
type fieldDecoder struct {
	index    int
	in       string // "path", "query" or "body"
	name     string
	required bool
	kind     reflect.Kind
}

func newFieldDecoder(op string, f reflect.StructField) (fieldDecoder, Param, bool) {
	fd := fieldDecoder{index: f.Index[0], kind: f.Type.Kind()}
	if tag, ok := f.Tag.Lookup("path"); ok {
		fd.in, fd.name, fd.required = string(InPath), tag, true
	} else if tag, ok := f.Tag.Lookup("query"); ok {
		name, opts, _ := strings.Cut(tag, ",")
		fd.in, fd.name, fd.required = string(InQuery), name, opts == "required"
	} else if tag, ok := f.Tag.Lookup("body"); ok {
		if tag != "json" {
			panic(fmt.Sprintf("httpapi.Op %s: field %s: body tag must be \"json\"", op, f.Name))
		}
		fd.in = "body"
		return fd, Param{}, true
	} else {
		return fd, Param{}, false
	}
	typ := map[reflect.Kind]string{reflect.Int64: "integer", reflect.Int: "integer", reflect.String: "string", reflect.Bool: "boolean"}[fd.kind]
	if typ == "" || fd.name == "" {
		panic(fmt.Sprintf("httpapi.Op %s: field %s: a path or query field must be named and be int64, int, string or bool", op, f.Name))
	}
	return fd, Param{Name: fd.name, In: ParamIn(fd.in), Type: typ, Required: fd.required}, true
}

func (fd fieldDecoder) decode(r *http.Request, v url.Values, dst reflect.Value) error {
	var s string
	switch fd.in {
	case "body":
		return DecodeJSON(r, dst.Addr().Interface())
	case string(InPath):
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
		n, err := pathID(fd.name, s)
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
		b, err := strconv.ParseBool(s)
		if err != nil || (s != "true" && s != "false") {
			return deskkit.Invalid(fd.name, "must be true or false")
		}
		dst.SetBool(b)
	default:
		dst.SetString(s)
	}
	return nil
}

// pathID reads a positive int64.
func pathID(name, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, deskkit.Invalid(name, "must be a positive integer")
	}
	return n, nil
}
