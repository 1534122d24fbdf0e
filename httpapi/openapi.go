package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/deskkit/deskkit/envelope"
	"github.com/deskkit/deskkit/verify"
)

// The OpenAPI document is generated from the operation lists: paths,
// methods, operationIds and parameters from the Operations; request and
// response schemas from the Go types of Op[Req, Resp] (through
// kin-openapi's openapi3gen, then schemaNotes for the words and
// constraints a Go type does not carry); error statuses, codes and headers
// from the error table, by the keys each operation's Doc names plus those
// every operation answers; summaries, descriptions and examples from Doc.
// The server generates it at New from the operations it mounts; the
// committed httpapi/openapi.json is the one of every service mounted, and
// a test checks that it equals what the code generates. Rewrite it with:
//
//go:generate go test -count=1 -run ^TestOpenAPIDocumentCommitted$ . -args -update

// openAPIVersion is the version of the OpenAPI Specification the document
// follows. 3.1, not 3.0: a 3.1 schema is a JSON Schema (2020-12), so
// kin-openapi (openapi3filter picks its 2020-12 validator for a 3.1
// document), Redocly, vacuum and contract testers all read a schema the
// same way. OAS 3.0 says "or null" with nullable: true, which JSON Schema
// does not know: vacuum's example check ignored it and read the null data
// of every error example as invalid. Notes and wire schemas may still
// write nullable: true; toOAS31 writes it the 3.1 way.
const openAPIVersion = "3.1.0"

// obj is a JSON object of the document.
type obj = map[string]any

// docExampleTime is the datetime of every example envelope.
const docExampleTime = "2026-11-22T01:00:00Z"

// commonErrors are the errors every authenticated operation answers.
var commonErrors = []string{KeyValidation, KeyUnauthorized, KeyMethodNotAllowed, KeyInternal, KeyServiceUnavailable}

// bodyErrors are the errors every operation with a JSON body answers
// besides, if the error table has their rows.
var bodyErrors = []string{KeyRequestTooLarge}

// errorRowOf is the status and envelope code of an error key: its row of
// the error table, or the router's own answers.
func errorRowOf(key string) (status int, code string, ok bool) {
	switch key {
	case KeyRouteNotFound:
		return http.StatusNotFound, envelope.CodeProtocol, true
	case KeyMethodNotAllowed:
		return http.StatusMethodNotAllowed, envelope.CodeProtocol, true
	case KeyInternal:
		return http.StatusInternalServerError, envelope.CodeSystem, true
	}
	for _, row := range errorTable {
		if row.key == key {
			return row.status, row.code, true
		}
	}
	return 0, "", false
}

// errorKeys lists every key the server answers: the table's, then the
// router's own.
func errorKeys() []string {
	var out []string
	for _, row := range errorTable {
		if !slices.Contains(out, row.key) {
			out = append(out, row.key)
		}
	}
	return append(out, KeyRouteNotFound, KeyMethodNotAllowed, KeyInternal)
}

// buildDocument generates the document of ops, deskkit's own operations.
func buildDocument(ops []*Operation) ([]byte, error) {
	g := &docGen{schemas: obj{}, responses: obj{}}
	for name, s := range wireSchemas {
		var v obj
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		g.schemas[name] = v
	}
	g.schemas["SmsBizKey"].(obj)["enum"] = bizKeyEnum(true)
	g.schemas["EmailBizKey"].(obj)["enum"] = bizKeyEnum(false)
	eKey := g.schemas["ErrorEnvelope"].(obj)["properties"].(obj)["ext"].(obj)["properties"].(obj)["eKey"].(obj)
	eKey["enum"] = errorKeys()

	paths := obj{}
	for _, op := range ops {
		o, err := g.operation(op)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", op.Method, op.Path, err)
		}
		item, _ := paths[Prefix+op.Path].(obj)
		if item == nil {
			item = obj{}
			paths[Prefix+op.Path] = item
		}
		item[strings.ToLower(op.Method)] = o
	}
	// Every answer carries the request id, success or error.
	for _, item := range paths {
		for _, o := range item.(obj) {
			for _, r := range o.(obj)["responses"].(obj) {
				addRequestIDHeader(r.(obj))
			}
		}
	}
	for _, r := range g.responses {
		addRequestIDHeader(r.(obj))
	}
	doc := obj{
		"openapi": openAPIVersion,
		"info": obj{
			"title":       "deskkit",
			"version":     "v1",
			"description": infoDescription(),
			"license":     obj{"name": "Apache-2.0", "url": "https://www.apache.org/licenses/LICENSE-2.0"},
		},
		"servers":  []any{obj{"url": "/", "description": "Relative to wherever the host mounts the handler."}},
		"security": []any{obj{"UserHttpBearer": []any{}}},
		"tags": []any{
			obj{"name": "trash", "description": "Recycle bin of deleted tasks and sprints. Where the host publishes events (the reference server does), every change publishes one to the tenant's channels (task.trashed, task.restored, trash.cleared...; see GET /event/types)."},
			obj{"name": "user", "description": "The current user: profile, tenant, verification codes, and changes of mobile number and e-mail address."},
			obj{"name": "channel", "description": "The tenant's event channels: webhooks, e-mail and chat robots, and test messages through them."},
			obj{"name": "event", "description": "The event catalogue, every channel with its state, and the deliveries of events to channels: their attempts, resends and recovery."},
			obj{"name": "meta", "description": "This document."},
		},
		"paths": paths,
		"components": obj{
			"securitySchemes": obj{"UserHttpBearer": obj{
				"type": "http", "scheme": "bearer",
				"description": "An existing opaque access token: `Authorization: Bearer <ACCESS_TOKEN>`.",
			}},
			"schemas":   g.schemas,
			"responses": g.responses,
			"headers":   obj{RequestIDHeader: requestIDHeaderDoc},
		},
	}
	if err := toOAS31(doc); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// docGen collects the components while the operations are generated.
type docGen struct {
	schemas   obj
	responses obj
}

func (g *docGen) operation(op *Operation) (obj, error) {
	d := op.Doc
	if d == nil {
		return nil, errors.New("no Doc")
	}
	if d.Summary == "" || d.Description == "" || d.OK == "" || d.Tag == "" {
		return nil, errors.New("Doc needs Tag, Summary, Description and OK")
	}
	o := obj{
		"tags":        []any{d.Tag},
		"operationId": op.ID,
		"summary":     d.Summary,
		"description": d.Description,
	}
	params, err := g.parameters(op)
	if err != nil {
		return nil, err
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	responses := obj{}
	errs := d.Errors
	if op.serve != nil {
		// The document itself: no credential, and no body.
		o["security"] = []any{}
		responses["200"] = obj{"description": d.OK, "content": obj{"application/json": obj{
			"schema":  documentSchema(),
			"example": obj{"openapi": openAPIVersion, "info": obj{"title": "deskkit", "version": "v1"}, "paths": obj{}},
		}}}
		errs = append([]ErrorDoc{{Key: KeyValidation}, {Key: KeyMethodNotAllowed}}, errs...)
	} else {
		if op.types == nil {
			return nil, errors.New("not declared with Op: no types to document")
		}
		data, err := g.schemaOf(op.types.resp)
		if err != nil {
			return nil, fmt.Errorf("response: %w", err)
		}
		result := g.resultSchema(op.types.resp, data)
		example := obj{"code": envelope.CodeSuccess, "msg": "Success", "data": d.Example.Data, "datetime": docExampleTime, "ext": obj{}}
		responses["200"] = obj{"description": d.OK, "content": obj{"application/json": obj{"schema": result, "example": example}}}
		if err := g.showExample(result, example); err != nil {
			return nil, fmt.Errorf("example data: %w", err)
		}
		var common []ErrorDoc
		for _, k := range commonErrors {
			common = append(common, ErrorDoc{Key: k})
		}
		if op.types.body != nil {
			body, err := g.requestBody(op)
			if err != nil {
				return nil, fmt.Errorf("request body: %w", err)
			}
			o["requestBody"] = body
			for _, k := range bodyErrors {
				if _, _, ok := errorRowOf(k); ok {
					common = append(common, ErrorDoc{Key: k})
				}
			}
		} else if d.Example.Body != nil || len(d.More) > 0 {
			return nil, errors.New("Doc has an example body, but the operation takes none")
		}
		// The operation's own words for a common key replace the generic ones.
		for _, c := range common {
			if !slices.ContainsFunc(errs, func(e ErrorDoc) bool { return e.Key == c.Key }) {
				errs = append(errs, c)
			}
		}
	}
	byStatus := map[int][]ErrorDoc{}
	for _, e := range errs {
		status, _, ok := errorRowOf(e.Key)
		if !ok {
			return nil, fmt.Errorf("error key %q is in no row of the error table", e.Key)
		}
		if _, ok := errorDocs[e.Key]; !ok {
			return nil, fmt.Errorf("error key %q has no errorDocs entry", e.Key)
		}
		byStatus[status] = append(byStatus[status], e)
	}
	for _, status := range slices.Sorted(maps.Keys(byStatus)) {
		es := byStatus[status]
		r, err := g.errorResponse(es)
		if err != nil {
			return nil, fmt.Errorf("status %d: %w", status, err)
		}
		responses[strconv.Itoa(status)] = r
	}
	o["responses"] = responses
	return o, nil
}

// resultSchema is the success envelope with data: a component named
// after data's (TrashPage: TrashPageResult) when data is a component or
// always null, inline otherwise.
func (g *docGen) resultSchema(t reflect.Type, data any) any {
	result := obj{"allOf": []any{
		ref("Envelope"),
		obj{"type": "object", "required": []any{"data"}, "properties": obj{
			"code": obj{"type": "string", "enum": []any{envelope.CodeSuccess}},
			"msg":  obj{"type": "string", "enum": []any{"Success"}},
			"data": data,
		}},
	}}
	name := ""
	if t == noneType {
		name = "Null"
	} else if d, ok := data.(obj); ok {
		if r, ok := d["$ref"].(string); ok {
			name = strings.TrimPrefix(r, "#/components/schemas/")
		}
	}
	if name == "" {
		return result
	}
	result["description"] = "The success envelope; data is a " + name + "."
	if t == noneType {
		result["description"] = "The success envelope; data is null."
	}
	g.schemas[name+"Result"] = result
	return ref(name + "Result")
}

// parameters documents op's path and query parameters; a name with "[n]"
// is listed once per index its Indexes allows.
func (g *docGen) parameters(op *Operation) ([]any, error) {
	var out []any
	docs := map[string]Param{}
	if op.Doc != nil {
		for _, p := range op.Doc.Params {
			if !slices.ContainsFunc(op.Params, func(q Param) bool { return q.Name == p.Name }) {
				return nil, fmt.Errorf("Doc documents parameter %s, which the operation does not declare", p.Name)
			}
			docs[p.Name] = p
		}
	}
	for _, p := range op.Params {
		if d, ok := docs[p.Name]; ok {
			p.Description, p.Example, p.Schema = d.Description, d.Example, d.Schema
		}
		if p.Description == "" || p.Example == nil {
			return nil, fmt.Errorf("parameter %s needs a description and an example", p.Name)
		}
		names := []string{p.Name}
		if strings.Contains(p.Name, "[n]") {
			names = nil
			for i := range p.Indexes {
				names = append(names, strings.Replace(p.Name, "[n]", fmt.Sprintf("[%d]", i), 1))
			}
		}
		for i, name := range names {
			schema := obj{"type": p.Type}
			if p.Schema != "" {
				if err := json.Unmarshal([]byte(p.Schema), &schema); err != nil {
					return nil, fmt.Errorf("parameter %s: schema: %w", p.Name, err)
				}
				if _, ok := schema["$ref"]; ok {
					schema = obj{"$ref": schema["$ref"]}
				}
			}
			example := p.Example
			if ex, ok := example.([]string); ok {
				example = ex[min(i, len(ex)-1)]
			}
			out = append(out, obj{
				"name": name, "in": string(p.In), "required": p.Required || p.In == InPath,
				"description": strings.ReplaceAll(p.Description, "{n}", strconv.Itoa(i)),
				"schema":      schema,
				"example":     example,
			})
		}
	}
	return out, nil
}

func (g *docGen) requestBody(op *Operation) (obj, error) {
	schema, err := g.schemaOf(op.types.body)
	if err != nil {
		return nil, err
	}
	d := op.Doc
	if d.Example.Body == nil {
		return nil, errors.New("Doc needs an example body")
	}
	if err := g.showExample(schema, d.Example.Body); err != nil {
		return nil, err
	}
	media := obj{"schema": schema}
	if len(d.More) == 0 {
		media["example"] = d.Example.Body
	} else {
		examples := obj{"default": obj{"summary": d.Example.Summary, "value": d.Example.Body}}
		for name, ex := range d.More {
			examples[name] = obj{"summary": ex.Summary, "value": ex.Body}
		}
		media["examples"] = examples
	}
	return obj{"required": true, "description": bodyDescription(schema), "content": obj{"application/json": media}}, nil
}

// bodyDescription is what every request body is: one JSON object, which
// DecodeJSON reads by the same rules for every operation.
func bodyDescription(schema any) string {
	what := "One JSON object"
	if s, ok := schema.(obj); ok {
		if r, ok := s["$ref"].(string); ok {
			what += ", a " + strings.TrimPrefix(r, "#/components/schemas/")
		}
	}
	return what + ". Keys match property names exactly, case included; an unknown key, a key given twice, or anything after the object is 400 " + KeyValidation + ", naming it."
}

// showExample gives each object schema of the components that schema
// shows, and that has no example yet, the part of value (an operation's
// example body or answer) it describes: a component carries the example
// of the first operation that shows it, and no example is written twice.
func (g *docGen) showExample(schema, value any) error {
	if value == nil {
		return nil
	}
	b, err := json.Marshal(value)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	g.showValue(schema, v)
	return nil
}

// ownPart is the part of v, a value of object schema s, that s's own
// properties describe: all of it if s takes other properties too. The
// Envelope component, say, shows its fields of an answer, not the
// operation's data.
func ownPart(s obj, v any) any {
	m, ok := v.(map[string]any)
	props, _ := s["properties"].(obj)
	if !ok || len(props) == 0 || s["additionalProperties"] != nil && s["additionalProperties"] != false {
		return v
	}
	own := make(map[string]any, len(props))
	for k, x := range m {
		if _, ok := props[k]; ok {
			own[k] = x
		}
	}
	return own
}

func (g *docGen) showValue(schema, v any) {
	s, ok := schema.(obj)
	if !ok || v == nil {
		return
	}
	if r, ok := s["$ref"].(string); ok {
		c, ok := g.schemas[strings.TrimPrefix(r, "#/components/schemas/")].(obj)
		if !ok {
			return
		}
		if _, done := c["example"]; !done && c["type"] == "object" {
			c["example"] = ownPart(c, v)
		}
		s = c
	}
	// A value of an allOf is one of each of its schemas (not so of
	// oneOf and anyOf).
	all, _ := s["allOf"].([]any)
	for _, b := range all {
		g.showValue(b, v)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(obj)
		for name, p := range props {
			g.showValue(p, v[name])
		}
	case []any:
		if len(v) > 0 {
			g.showValue(s["items"], v[0])
		}
	}
}

// toOAS31 writes the schemas of v, a document or a part of one, the OAS
// 3.1 way (JSON Schema 2020-12), so that notes, wire schemas and what
// openapi3gen generates may use OAS 3.0's words: nullable: true adds
// "null" to the schema's types, and to its enum if it has one, and a
// schema whose only value is null becomes type "null"; a boolean
// exclusiveMinimum or exclusiveMaximum becomes the bound it excludes.
// Values (example, examples, enum, const, default) are not schemas and are
// left as they are; a map of names (properties, schemas, ...) is walked
// by value, whatever its names.
func toOAS31(v any) error {
	switch v := v.(type) {
	case obj:
		if err := schemaToOAS31(v); err != nil {
			return err
		}
		for k, x := range v {
			switch k {
			case "example", "examples", "enum", "const", "default":
				continue
			case "properties", "patternProperties", "$defs", "schemas", "responses", "headers", "paths", "content":
				if m, ok := x.(obj); ok {
					for name, y := range m {
						if err := toOAS31(y); err != nil {
							return fmt.Errorf("%s %s: %w", k, name, err)
						}
					}
					continue
				}
			}
			if err := toOAS31(x); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		for i, x := range v {
			if err := toOAS31(x); err != nil {
				return fmt.Errorf("%d: %w", i, err)
			}
		}
	}
	return nil
}

func schemaToOAS31(s obj) error {
	for k, bound := range map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"} {
		if b, ok := s[k].(bool); ok {
			delete(s, k)
			if b {
				if _, ok := s[bound]; !ok {
					return fmt.Errorf("%s without %s", k, bound)
				}
				s[k] = s[bound]
				delete(s, bound)
			}
		}
	}
	n, ok := s["nullable"]
	if !ok {
		return nil
	}
	delete(s, "nullable")
	if n != true {
		return nil
	}
	if e, ok := s["enum"].([]any); ok {
		if len(e) == 1 && e[0] == nil {
			delete(s, "enum")
			s["type"] = "null"
			return nil
		}
		if !slices.Contains(e, nil) {
			s["enum"] = append(slices.Clip(e), nil)
		}
	}
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(slices.Clip(t), "null")
		}
	default:
		return errors.New("nullable without a type: name the type that may also be null")
	}
	return nil
}

// errorResponse is the answer of one status: one error key, or several.
func (g *docGen) errorResponse(es []ErrorDoc) (any, error) {
	name := ""
	if len(es) == 1 && es[0].When == "" {
		name = sharedResponses[es[0].Key]
	}
	for _, e := range es {
		if e.Name != "" && len(es) > 1 {
			return nil, fmt.Errorf("the answer named %s shares its status with other errors", e.Name)
		}
		if e.Name != "" {
			name = e.Name
		}
	}
	r := errorResponseOf(es)
	media := r["content"].(obj)["application/json"].(obj)
	if ex, ok := media["example"]; ok {
		if err := g.showExample(media["schema"], ex); err != nil {
			return nil, err
		}
	}
	if name == "" {
		return r, nil
	}
	if done, ok := g.responses[name]; ok && !reflect.DeepEqual(done, r) {
		return nil, fmt.Errorf("two different answers are named %s", name)
	}
	g.responses[name] = r
	return obj{"$ref": "#/components/responses/" + name}, nil
}

// sharedResponses are the single-key answers described once, in
// components.responses, by name.
var sharedResponses = map[string]string{
	KeyValidation:         "BadRequest",
	KeyUnauthorized:       "Unauthorized",
	KeyMethodNotAllowed:   "MethodNotAllowed",
	KeyInternal:           "InternalError",
	KeyServiceUnavailable: "ServiceUnavailable",
	KeyRequestTooLarge:    "RequestTooLarge",
}

func errorResponseOf(es []ErrorDoc) obj {
	var codes []string
	keysOf := map[string][]any{}
	var desc []string
	headers := obj{}
	headerCount := map[string]int{}
	for _, e := range es {
		_, code, _ := errorRowOf(e.Key)
		if keysOf[code] == nil {
			codes = append(codes, code)
		}
		keysOf[code] = append(keysOf[code], e.Key)
		ed := errorDocs[e.Key]
		when := e.When
		if when == "" {
			when = sentence(ed.when)
		}
		if len(es) == 1 {
			desc = append(desc, when)
		} else {
			desc = append(desc, fmt.Sprintf("- `%s` (%s): %s", e.Key, code, when))
		}
		if ed.header != "" {
			if _, ok := headers[ed.header]; !ok {
				headers[ed.header] = headerSchemas[ed.header]
			}
			headerCount[ed.header]++
		}
	}
	var variants []any
	for _, code := range codes {
		variants = append(variants, obj{"allOf": []any{
			ref("ErrorEnvelope"),
			obj{"type": "object", "properties": obj{
				"code": obj{"type": "string", "enum": []any{code}},
				"ext":  obj{"type": "object", "properties": obj{"eKey": obj{"type": "string", "enum": keysOf[code]}}},
			}},
		}})
	}
	media := obj{}
	if len(variants) == 1 {
		media["schema"] = variants[0]
	} else {
		media["schema"] = obj{"oneOf": variants}
	}
	example := func(key string) obj {
		_, code, _ := errorRowOf(key)
		return obj{"code": code, "msg": errorDocs[key].msg, "data": nil, "datetime": docExampleTime, "ext": obj{"eKey": key}}
	}
	description := strings.Join(desc, "\n")
	if len(es) == 1 {
		media["example"] = example(es[0].Key)
	} else {
		description = "One of:\n\n" + description
		examples := obj{}
		for _, e := range es {
			examples[e.Key] = obj{"summary": e.Key, "value": example(e.Key)}
		}
		media["examples"] = examples
	}
	r := obj{"description": description, "content": obj{"application/json": media}}
	if len(headers) > 0 {
		for name, h := range headers {
			h := copyObj(h.(obj))
			h["required"] = headerCount[name] == len(es)
			headers[name] = h
		}
		r["headers"] = headers
	}
	return r
}

// copyObj is a shallow copy of o.
func copyObj(o obj) obj {
	out := obj{}
	for k, v := range o {
		out[k] = v
	}
	return out
}

// bizKeyEnum lists the bizKeys of SMS codes, or of e-mail codes.
func bizKeyEnum(sms bool) []any {
	keys := verify.EmailBizKeys()
	if sms {
		keys = verify.SMSBizKeys()
	}
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

// sentence is s with a capital and a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// raw is JSON written out, for examples.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

var noneType = reflect.TypeFor[*None]()

// schemaOf is the schema of t; the structs of schemaNotes become
// components.
func (g *docGen) schemaOf(t reflect.Type) (any, error) {
	if t == noneType {
		return obj{"type": "null", "description": "Always null."}, nil
	}
	names := map[reflect.Type]string{}
	for _, n := range schemaNotes {
		names[n.typ] = n.name
	}
	gen := openapi3gen.NewGenerator(
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.CreateTypeNameGenerator(func(t reflect.Type) string { return names[t] }),
	)
	schemas := openapi3.Schemas{}
	top, err := gen.NewSchemaRefForValue(reflect.Zero(t).Interface(), schemas)
	if err != nil {
		return nil, err
	}
	for name, s := range schemas {
		if _, done := g.schemas[name]; done {
			continue
		}
		var note *schemaNote
		for i := range schemaNotes {
			if schemaNotes[i].name == name {
				note = &schemaNotes[i]
			}
		}
		v, err := toObj(s.Value)
		if err != nil {
			return nil, err
		}
		if err := note.apply(v); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		g.schemas[name] = v
	}
	return toObj(top)
}

func toObj(v any) (obj, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out obj
	return out, json.Unmarshal(b, &out)
}

// schemaNote names a Go type's component schema and adds what the type
// does not carry, as JSON: the schema's description, and per property its
// description, bounds, pattern, enum, example, or a $ref to a wire schema
// (which replaces the generated property). "required" lists the required
// properties of a request body; a response's are its fields without
// omitempty, which are always written. A property that may also be null
// says nullable: true, with its type (toOAS31 writes that as OAS 3.1
// does).
type schemaNote struct {
	typ     reflect.Type
	name    string
	overlay string
}

func (n *schemaNote) apply(v obj) error {
	var ov obj
	if err := json.Unmarshal([]byte(n.overlay), &ov); err != nil {
		return err
	}
	props, _ := v["properties"].(obj)
	for name, p := range ov["properties"].(obj) {
		gen, ok := props[name].(obj)
		if !ok {
			return fmt.Errorf("the note documents property %s, which %s does not have", name, n.typ)
		}
		p := p.(obj)
		if _, ok := p["$ref"]; ok {
			props[name] = obj{"$ref": p["$ref"]}
			continue
		}
		if _, ok := p["oneOf"]; ok {
			delete(gen, "type")
			delete(gen, "format")
		}
		_, typed := gen["type"]
		for k, x := range p {
			if _, ok := gen[k]; ok && typed && (k == "type" || k == "format") {
				continue // the Go type's
			}
			gen[k] = x
		}
	}
	if d, ok := ov["description"]; ok {
		v["description"] = d
	}
	v["additionalProperties"] = false
	if req, ok := ov["required"]; ok {
		v["required"] = req
	} else {
		var req []any
		for _, f := range reflect.VisibleFields(n.typ) {
			tag, ok := f.Tag.Lookup("json")
			name, opts, _ := strings.Cut(tag, ",")
			if ok && name != "-" && f.IsExported() && !strings.Contains(opts, "omitempty") {
				req = append(req, name)
			}
		}
		v["required"] = req
	}
	if len(v["required"].([]any)) == 0 {
		delete(v, "required")
	}
	return nil
}

// documentSchema is the schema of this document, as the 200 of
// getOpenAPIDocument answers it.
func documentSchema() obj {
	return obj{
		"type":     "object",
		"required": []any{"openapi", "info", "paths"},
		"properties": obj{
			"openapi": obj{"type": "string", "pattern": `^3\.1\.[0-9]+$`},
			"info":    obj{"type": "object"},
			"paths":   obj{"type": "object"},
		},
		"additionalProperties": true,
	}
}

// requestIDHeaderDoc is the X-Request-Id header of every answer.
var requestIDHeaderDoc = obj{
	"description": "The request's id: the request's own X-Request-Id if it sent a valid one (1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'), else a new one (32 hex digits). Error envelopes carry it in ext.requestId, and the server's log lines of the request as request_id.",
	"required":    true,
	"schema":      obj{"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$", "example": "4bf92f3577b34da6a3ce929d0e0e4736"},
}

// addRequestIDHeader adds X-Request-Id to the headers of r, an answer
// written out (a $ref to one of components.responses gets it there).
func addRequestIDHeader(r obj) {
	if _, ok := r["$ref"]; ok {
		return
	}
	headers, _ := r["headers"].(obj)
	if headers == nil {
		headers = obj{}
		r["headers"] = headers
	}
	headers[RequestIDHeader] = obj{"$ref": "#/components/headers/" + RequestIDHeader}
}

// headerSchemas are the headers error answers carry, by name.
var headerSchemas = map[string]any{
	"WWW-Authenticate": obj{"description": "The scheme to authenticate with.", "schema": obj{"type": "string", "pattern": "^Bearer ", "example": `Bearer realm="deskkit"`}},
	"Allow":            obj{"description": "The methods that serve the path (HEAD and OPTIONS never do).", "schema": obj{"type": "string", "example": "GET"}},
	"Retry-After":      obj{"description": "Seconds to wait before retrying: for a 503, 5 unless the error says otherwise; for a rate limit, until the window of the limit that refused the request ends.", "schema": obj{"type": "integer", "minimum": 1, "example": 5}},
}

// infoDescription is the document's introduction, with the error table.
func infoDescription() string {
	var b strings.Builder
	b.WriteString(infoIntro)
	b.WriteString("\n\n# Errors\n\nEvery error is an envelope with `data` null and a stable `ext.eKey`. One table maps errors to HTTP; a service adds its own rows (with keys of their own) above the row of their class:\n\n| status | code | eKey | when | headers |\n| --- | --- | --- | --- | --- |\n")
	for _, key := range errorKeys() {
		status, code, _ := errorRowOf(key)
		ed := errorDocs[key]
		header := ""
		if ed.header != "" {
			header = "`" + ed.header + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | %s | %s |\n", status, code, key, ed.when, header)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
