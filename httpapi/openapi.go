package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swaggest/jsonschema-go"
	"github.com/swaggest/openapi-go"
	"github.com/swaggest/openapi-go/openapi31"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/envelope"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// The OpenAPI document is generated from the operation lists by
// swaggest's openapi31 reflector: paths, methods, operationIds and
// parameters from each operation and its request struct's tags; request
// and response schemas from the Go types, whose struct tags carry their
// words and constraints (description, enum, minimum, maxLength...);
// error answers from the error table, by the keys each operation's doc
// names plus those every operation answers; summaries, descriptions and
// examples from each operation's doc. The committed httpapi/openapi.json
// is the document with every service mounted; a test checks that it
// equals what the code generates. Rewrite it with:
//
//go:generate go test -count=1 -run ^TestOpenAPIDocumentCommitted$ . -args -update

// docExampleTime is the datetime of every example envelope.
const docExampleTime = "2026-11-22T01:00:00Z"

// commonErrors are the errors every authenticated operation answers, and
// bodyErrors those every operation with a JSON body answers besides.
var (
	commonErrors = []string{KeyValidation, KeyUnauthorized, KeyMethodNotAllowed, KeyInternal, KeyServiceUnavailable}
	bodyErrors   = []string{KeyRequestTooLarge}
)

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

// schemaDocs name the components of the Go types (the default would be
// package and type: VerifyDetail) and describe the services' types; a
// list's name is its element's with List.
var schemaDocs = map[reflect.Type]struct{ name, description string }{
	reflect.TypeFor[eventTypeInfo]():            {"EventType", "A type of event channels can subscribe to."},
	reflect.TypeFor[trash.Entry]():              {"TrashEntry", "One deleted task or sprint waiting in the trash."},
	reflect.TypeFor[trash.Page]():               {"TrashPage", "One page of search results and the number of all matches."},
	reflect.TypeFor[verify.Detail]():            {"UserDetail", "The current user, as the host's user directory holds them. Fields the user has not set are empty strings."},
	reflect.TypeFor[verify.TenantDetail]():      {"TenantDetail", "The current user's tenant (organisation)."},
	reflect.TypeFor[verify.Sent]():              {"CodeSent", "A code went out."},
	reflect.TypeFor[verify.Link]():              {"Link", "The proof a successful check gives."},
	reflect.TypeFor[channel.Channel]():          {"Channel", "A channel, never with a secret."},
	reflect.TypeFor[channel.Added]():            {"ChannelAdded", "The added channel; a webhook's also with its signing secret."},
	reflect.TypeFor[channel.SigningSecret]():    {"ChannelSigningSecret", "A webhook's current signing secret, and how long the secret it replaced still signs beside it."},
	reflect.TypeFor[channel.TestResult]():       {"ChannelTestSent", "The test message went out and the far end took it."},
	reflect.TypeFor[channel.Delivery]():         {"EventDelivery", "One event's delivery to one channel."},
	reflect.TypeFor[channel.DeliveryPage]():     {"EventDeliveryPage", "One page of a channel's deliveries, newest first, and how many match in all."},
	reflect.TypeFor[channel.Attempt]():          {"EventAttempt", "One attempt of a delivery."},
	reflect.TypeFor[channel.HourlyDeliveries](): {"EventDeliveryHour", "How many of a channel's deliveries created in one hour are in each status now."},
	reflect.TypeFor[recovered]():                {"EventRecovered", ""},
	reflect.TypeFor[profileBody]():              {"ProfileUpdate", ""},
	reflect.TypeFor[smsSendBody]():              {"SmsCodeRequest", ""},
	reflect.TypeFor[emailSendBody]():            {"EmailCodeRequest", ""},
	reflect.TypeFor[mobileChangeBody]():         {"MobileChangeRequest", ""},
	reflect.TypeFor[emailChangeBody]():          {"EmailChangeRequest", ""},
	reflect.TypeFor[channelAddBody]():           {"ChannelAdd", ""},
	reflect.TypeFor[channelReplaceBody]():       {"ChannelReplace", ""},
	reflect.TypeFor[channelTestBody]():          {"ChannelTest", ""},
	reflect.TypeFor[secretRotateBody]():         {"ChannelSecretRotation", ""},
	reflect.TypeFor[errorEnvelope]():            {"ErrorEnvelope", ""},
	reflect.TypeFor[errorKey]():                 {"ErrorKey", ""},
	reflect.TypeFor[smsBizKey]():                {"SmsBizKey", "What an SMS code is for: each bizKey is a namespace of its own."},
	reflect.TypeFor[emailBizKey]():              {"EmailBizKey", "What an e-mail code is for: each bizKey is a namespace of its own."},
	reflect.TypeFor[mobileNumber]():             {"MobileNumber", ""},
	reflect.TypeFor[verificationCode]():         {"VerificationCode", ""},
	reflect.TypeFor[telephoneCode]():            {"TelephoneCode", ""},
	reflect.TypeFor[channelID]():                {"ChannelIdInput", ""},
	reflect.TypeFor[channelTypeInput]():         {"ChannelTypeInput", ""},
	reflect.TypeFor[trash.TargetType]():         {"TargetType", ""},
	reflect.TypeFor[channel.Type]():             {"ChannelType", ""},
	reflect.TypeFor[channel.Signing]():          {"ChannelSigning", ""},
	reflect.TypeFor[*none]():                    {"Null", ""},
	reflect.TypeFor[int]():                      {"Count", ""},
	reflect.TypeFor[int64]():                    {"Count64", ""},
}

// schemaName is the component name of t.
func schemaName(t reflect.Type) string {
	if t.Kind() == reflect.Slice {
		return schemaName(t.Elem()) + "List"
	}
	return schemaDocs[t].name
}

// enumDocs are the values and words of the services' enumerations.
var enumDocs = map[reflect.Type]struct {
	values      []any
	description string
}{
	reflect.TypeFor[trash.TargetType](): {[]any{string(trash.TargetTask), string(trash.TargetSprint)}, "What the entry holds: a task or a sprint."},
	reflect.TypeFor[channel.Type]():     {channelTypes(), kindDocs.Replace("The kind of a channel, as answers write it. {kinds}")},
	reflect.TypeFor[channel.Signing](): {[]any{string(channel.SigningHMAC), string(channel.SigningEd25519), string(channel.SigningBoth)},
		"What signs a webhook's requests, as Standard Webhooks lays out its signatures: hmac, a v1, signature (HMAC-SHA256 under the whsec_ secret, which the receiver holds too); ed25519, a v1a, signature (under a signing key that never leaves the server; the receiver verifies with its whpk_ public key, which cannot sign); hmac+ed25519, both on every request."},
}

func channelTypes() []any {
	var out []any
	for _, t := range channel.Types() {
		out = append(out, string(t))
	}
	return out
}

// result is the success envelope of an operation whose data is a T; it
// is named after T (TrashPage: TrashPageResult), so that a generated
// client has one typed answer per data type.
type result[T any] struct {
	Code     string         `json:"code" required:"true" enum:"S" description:"S: success."`
	Msg      string         `json:"msg" required:"true" example:"Success" description:"Success, in the answer's language (Content-Language): Success in English, 成功 in Simplified Chinese."`
	Data     T              `json:"data" required:"true"`
	Datetime time.Time      `json:"datetime" required:"true" description:"Time of the response, UTC, to the second."`
	Ext      map[string]any `json:"ext" required:"true" description:"Free-form; empty on success."`
}

// errorEnvelope is the body of every error answer.
type errorEnvelope struct {
	_        struct{}  `additionalProperties:"false" description:"The body of every error answer."`
	Code     string    `json:"code" required:"true" enum:"E0,E1,E2,E3" description:"E0: protocol or input error (bad input, no credential, unknown route, wrong method). E1: business rule (forbidden, not found, conflict, a verification code or link secret refused). E2: system error: service unavailable (503, retry later), a message the gateway or the channel did not accept (502), or unexpected (500). E3: quota (429, or 409 for a channel quota)."`
	Msg      string    `json:"msg" required:"true" description:"What went wrong, for a person, in the answer's language (Content-Language); an input error names the field and the rule."`
	Data     *none     `json:"data" required:"true"`
	Datetime time.Time `json:"datetime" required:"true" description:"Time of the response, UTC, to the second."`
	Ext      struct {
		EKey      errorKey `json:"eKey" required:"true"`
		RequestID string   `json:"requestId" pattern:"^[A-Za-z0-9._:-]{1,64}$" description:"The request's id, as the X-Request-Id header gives it."`
	} `json:"ext" required:"true"`
}

// errorKey is ext.eKey: a key of the error table.
type errorKey string

// Enum lists every key the server answers.
func (errorKey) Enum() []any {
	var out []any
	for _, key := range errorKeys() {
		out = append(out, key)
	}
	return out
}

// PrepareJSONSchema describes the key.
func (errorKey) PrepareJSONSchema(s *jsonschema.Schema) error {
	s.WithDescription("A stable machine-readable key of the error: see the table in the document's description.")
	return nil
}

// errorRowOf is the row of the error table, or of the router's, of key.
func errorRowOf(key string) (errorRow, bool) {
	for _, row := range slices.Concat(errorTable, routerErrors) {
		if row.key == key {
			return row, true
		}
	}
	return errorRow{}, false
}

// errorKeys lists every key the server answers: the table's, then the
// router's.
func errorKeys() []string {
	var out []string
	for _, row := range slices.Concat(errorTable, routerErrors) {
		if !slices.Contains(out, row.key) {
			out = append(out, row.key)
		}
	}
	return out
}

// buildDocument generates the document of ops, deskkit's own operations.
func buildDocument(ops []*operation) ([]byte, error) {
	r := openapi31.NewReflector()
	r.DefaultOptions = append(r.DefaultOptions,
		jsonschema.InterceptDefName(func(t reflect.Type, def string) string {
			if t.Kind() == reflect.Struct && strings.HasPrefix(t.Name(), "result[") {
				return schemaName(t.Field(2).Type) + "Result"
			}
			return cmp.Or(schemaDocs[t].name, def)
		}),
		// The services' enumerations, which have no Enum method of
		// their own.
		jsonschema.InterceptSchema(func(p jsonschema.InterceptSchemaParams) (bool, error) {
			if !p.Processed {
				return false, nil
			}
			t := p.Value.Type()
			if d, ok := enumDocs[t]; ok {
				p.Schema.WithEnum(d.values...).WithDescription(d.description).WithExamples(d.values[0])
			}
			if d := schemaDocs[t].description; d != "" {
				p.Schema.WithDescription(d)
				if t.Kind() == reflect.Struct {
					p.Schema.WithAdditionalProperties(jsonschema.SchemaOrBool{TypeBoolean: ptr(false)})
				}
			}
			if t.Kind() == reflect.Struct && strings.HasPrefix(t.Name(), "result[") {
				p.Schema.WithDescription("The success envelope; data is a " + schemaName(t.Field(2).Type) + ".")
			}
			return false, nil
		}),
		// null is a value only of pointers, and of what says nullable.
		jsonschema.InterceptNullability(func(p jsonschema.InterceptNullabilityParams) {
			if p.NullAdded && p.Type.Kind() != reflect.Pointer {
				p.Schema.RemoveType(jsonschema.Null)
			}
		}),
		jsonschema.InterceptProp(func(p jsonschema.InterceptPropParams) error {
			if !p.Processed {
				return nil
			}
			if d := p.PropertySchema.Description; d != nil && strings.Contains(*d, "{kinds") {
				p.PropertySchema.WithDescription(kindDocs.Replace(*d))
			}
			if p.Field.Tag.Get("nullable") == "true" {
				p.PropertySchema.AddType(jsonschema.Null)
			}
			// A value that may be null may be null whatever its enum.
			if s := p.PropertySchema; s.HasType(jsonschema.Null) && len(s.Enum) > 0 && !slices.Contains(s.Enum, nil) {
				s.Enum = append(s.Enum, nil)
			}
			// An answer writes every field without omitempty.
			oc, ok := openapi.OperationCtx(p.Context)
			tag := p.Field.Tag.Get("json")
			if ok && oc.IsProcessingResponse() && !strings.Contains(tag, ",omitempty") && !slices.Contains(p.ParentSchema.Required, p.Name) {
				p.ParentSchema.Required = append(p.ParentSchema.Required, p.Name)
			}
			return nil
		}),
	)
	s := r.Spec
	s.Openapi = "3.1.0"
	s.Info.WithTitle("deskkit").WithVersion("v1").WithDescription(infoDescription()).
		WithLicense(openapi31.License{Name: "Apache-2.0", URL: ptr("https://www.apache.org/licenses/LICENSE-2.0")})
	s.Servers = []openapi31.Server{{URL: "/", Description: ptr("Relative to wherever the host mounts the handler.")}}
	s.Security = []map[string][]string{{"UserHttpBearer": {}}}
	s.Tags = []openapi31.Tag{
		{Name: "trash", Description: ptr("Recycle bin of deleted tasks and sprints. Where the host publishes events (the reference server does), every change publishes one to the tenant's channels (task.trashed, task.restored, trash.cleared...; see GET /event/types).")},
		{Name: "user", Description: ptr("The current user: profile, tenant, verification codes, and changes of mobile number and e-mail address.")},
		{Name: "channel", Description: ptr("The tenant's event channels: webhooks, e-mail and chat robots, and test messages through them.")},
		{Name: "event", Description: ptr("The event catalogue, every channel with its state, and the deliveries of events to channels: their attempts, resends and recovery.")},
		{Name: "meta", Description: ptr("This document.")},
	}
	c := s.ComponentsEns()
	c.WithSecuritySchemesItem("UserHttpBearer", openapi31.SecuritySchemeOrReference{SecurityScheme: &openapi31.SecurityScheme{
		Description: ptr("An existing opaque access token: `Authorization: Bearer <ACCESS_TOKEN>`."),
		HTTPBearer:  &openapi31.SecuritySchemeHTTPBearer{Scheme: "bearer"},
	}})
	c.WithHeadersItem(RequestIDHeader, openapi31.HeaderOrReference{Header: &openapi31.Header{
		Description: ptr("The request's id: the request's own X-Request-Id if it sent a valid one (1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'), else a new one (32 hex digits). Error envelopes carry it in ext.requestId, and the server's log lines of the request as request_id."),
		Required:    ptr(true),
		Schema:      map[string]any{"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$", "examples": []any{"4bf92f3577b34da6a3ce929d0e0e4736"}},
	}})
	// The error envelope, which every error answer refers to.
	var collectErr error
	if _, err := r.Reflect(errorEnvelope{}, jsonschema.RootRef, jsonschema.DefinitionsPrefix("#/components/schemas/"),
		jsonschema.CollectDefinitions(func(name string, schema jsonschema.Schema) {
			sm, err := schema.ToSchemaOrBool().ToSimpleMap()
			collectErr = errors.Join(collectErr, err)
			c.WithSchemasItem(name, sm)
		})); err != nil || collectErr != nil {
		return nil, errors.Join(err, collectErr)
	}
	g := &docGen{r: r}
	for _, o := range ops {
		if err := g.operation(o); err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.method, o.path, err)
		}
		if err := showExample(c, o); err != nil {
			return nil, fmt.Errorf("%s %s: example: %w", o.method, o.path, err)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	// Indented, with map keys sorted, as the committed copy is written.
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err = enc.Encode(v)
	return out.Bytes(), err
}

type docGen struct {
	r *openapi31.Reflector
}

func (g *docGen) operation(o *operation) error {
	d := o.doc
	if d == nil || d.summary == "" || d.description == "" || d.ok == "" || d.tag == "" {
		return fmt.Errorf("%s needs a doc with tag, summary, description and ok", o.id)
	}
	oc, err := g.r.NewOperationContext(o.method, Prefix+o.path)
	if err != nil {
		return err
	}
	oc.SetID(o.id)
	oc.SetSummary(d.summary)
	oc.SetDescription(d.description)
	oc.SetTags(d.tag)
	errs := slices.Clone(d.errors)
	if o.serve != nil {
		// The document itself: no credential, no envelope.
		oc.AddRespStructure(map[string]any{}, openapi.WithCustomize(func(cor openapi.ContentOrReference) {
			r := cor.(*openapi31.ResponseOrReference).Response
			r.Description = d.ok
			example := any(map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "deskkit", "version": "v1"}, "paths": map[string]any{}})
			r.Content["application/json"] = openapi31.MediaType{Example: &example, Schema: map[string]any{
				"type": "object", "required": []any{"openapi", "info", "paths"},
				"properties": map[string]any{"openapi": map[string]any{"type": "string", "pattern": `^3\.1\.[0-9]+$`}, "info": map[string]any{"type": "object"}, "paths": map[string]any{"type": "object"}},
			}}
		}))
		errs = append([]errDoc{{key: KeyValidation}, {key: KeyMethodNotAllowed}}, errs...)
	} else {
		oc.AddReqStructure(o.req)
		if o.body != nil {
			oc.AddReqStructure(o.body, openapi.WithContentType("application/json"))
		} else if d.example.body != nil || len(d.more) > 0 {
			return fmt.Errorf("%s: the doc has an example body, but the operation takes none", o.id)
		}
		oc.AddRespStructure(o.result, openapi.WithHTTPStatus(http.StatusOK), openapi.WithCustomize(func(cor openapi.ContentOrReference) {
			r := cor.(*openapi31.ResponseOrReference).Response
			r.Description = d.ok
			mt := r.Content["application/json"]
			example := any(map[string]any{"code": envelope.CodeSuccess, "msg": "Success", "data": d.example.data, "datetime": docExampleTime, "ext": map[string]any{}})
			mt.Example = &example
			r.Content["application/json"] = mt
		}))
		common := commonErrors
		if o.body != nil {
			common = append(slices.Clone(common), bodyErrors...)
		}
		// The operation's own words for a common key replace the generic ones.
		for _, k := range common {
			if !slices.ContainsFunc(errs, func(e errDoc) bool { return e.key == k }) {
				errs = append(errs, errDoc{key: k})
			}
		}
	}
	if err := g.r.AddOperation(oc); err != nil {
		return err
	}
	return g.r.Spec.SetupOperation(o.method, Prefix+o.path, func(op *openapi31.Operation) error {
		if o.serve != nil {
			op.Security = []map[string][]string{{}}
		}
		for _, p := range op.Parameters {
			// A parameter's example is its schema's first.
			if ex, ok := p.Parameter.Schema["examples"].([]any); ok && len(ex) > 0 {
				p.Parameter.WithExample(ex[0])
				delete(p.Parameter.Schema, "examples")
				delete(p.Parameter.Schema, "description")
			} else {
				return fmt.Errorf("parameter %s needs a description and an example", p.Parameter.Name)
			}
			if p.Parameter.Description == nil {
				return fmt.Errorf("parameter %s needs a description", p.Parameter.Name)
			}
		}
		if rb := op.RequestBody; rb != nil && rb.RequestBody != nil {
			if d.example.body == nil {
				return fmt.Errorf("%s: the doc needs an example body", o.id)
			}
			body := rb.RequestBody
			body.WithRequired(true).WithDescription(bodyDescription(body.Content["application/json"].Schema))
			mt := body.Content["application/json"]
			if len(d.more) == 0 {
				mt.Example = &d.example.body
			} else {
				mt.Examples = map[string]openapi31.ExampleOrReference{"default": exampleOf(cmp.Or(d.example.summary, "Default"), d.example.body)}
				for name, ex := range d.more {
					mt.Examples[name] = exampleOf(ex.summary, ex.body)
				}
			}
			body.Content["application/json"] = mt
		}
		return g.errorResponses(op, errs)
	})
}

// showExample gives the component of o's data, if it has none yet, the
// data of o's example (for a list, its first element).
func showExample(c *openapi31.Components, o *operation) error {
	if o.doc == nil || o.doc.example.data == nil {
		return nil
	}
	b, err := json.Marshal(o.doc.example.data)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t := reflect.TypeOf(o.resp)
	if list, ok := v.([]any); ok && t.Kind() == reflect.Slice {
		if len(list) == 0 {
			return nil
		}
		t, v = t.Elem(), list[0]
	}
	if s, ok := c.Schemas[schemaName(t)]; ok && s["examples"] == nil {
		s["examples"] = []any{v}
	}
	return nil
}

func exampleOf(summary string, value any) openapi31.ExampleOrReference {
	return openapi31.ExampleOrReference{Example: &openapi31.Example{Summary: &summary, Value: &value}}
}

// bodyDescription is what every request body is: one JSON object, which
// DecodeJSON reads by the same rules for every operation.
func bodyDescription(schema map[string]any) string {
	what := "One JSON object"
	if ref, ok := schema["$ref"].(string); ok {
		what += ", a " + strings.TrimPrefix(ref, "#/components/schemas/")
	}
	return what + ". Keys match property names exactly, case included; an unknown key, a key given twice, or anything after the object is 400 " + KeyValidation + ", naming it."
}

// errorResponses adds the answers of errs, one per status; every answer
// carries the request id.
func (g *docGen) errorResponses(op *openapi31.Operation, errs []errDoc) error {
	byStatus := map[int][]errDoc{}
	for _, e := range errs {
		row, ok := errorRowOf(e.key)
		if !ok {
			return fmt.Errorf("error key %q is in no row of the error table", e.key)
		}
		byStatus[row.status] = append(byStatus[row.status], e)
	}
	for _, status := range slices.Sorted(maps.Keys(byStatus)) {
		es := byStatus[status]
		r, err := g.errorResponse(es)
		if err != nil {
			return fmt.Errorf("status %d: %w", status, err)
		}
		op.Responses.WithMapOfResponseOrReferenceValuesItem(strconv.Itoa(status), r)
	}
	for _, r := range op.Responses.MapOfResponseOrReferenceValues {
		addRequestIDHeader(r.Response)
	}
	return nil
}

// errorResponse is the answer of one status, with one error key or
// several; a shared one is described once in components.responses.
func (g *docGen) errorResponse(es []errDoc) (openapi31.ResponseOrReference, error) {
	name := ""
	if len(es) == 1 && es[0].when == "" {
		name = sharedResponses[es[0].key]
	}
	for _, e := range es {
		if e.name != "" && len(es) > 1 {
			return openapi31.ResponseOrReference{}, fmt.Errorf("the answer named %s shares its status with other errors", e.name)
		}
		if e.name != "" {
			name = e.name
		}
	}
	r := errorResponseOf(es)
	if name == "" {
		return openapi31.ResponseOrReference{Response: r}, nil
	}
	addRequestIDHeader(r)
	c := g.r.Spec.ComponentsEns()
	if done, ok := c.Responses[name]; ok {
		a, _ := json.Marshal(done.Response)
		b, _ := json.Marshal(r)
		if string(a) != string(b) {
			return openapi31.ResponseOrReference{}, fmt.Errorf("two different answers are named %s", name)
		}
	}
	c.WithResponsesItem(name, openapi31.ResponseOrReference{Response: r})
	return openapi31.ResponseOrReference{Reference: &openapi31.Reference{Ref: "#/components/responses/" + name}}, nil
}

func errorResponseOf(es []errDoc) *openapi31.Response {
	var codes []string
	keysOf := map[string][]any{}
	var desc []string
	headers := map[string]int{}
	for _, e := range es {
		row, _ := errorRowOf(e.key)
		if keysOf[row.code] == nil {
			codes = append(codes, row.code)
		}
		keysOf[row.code] = append(keysOf[row.code], e.key)
		when := e.when
		if when == "" {
			when = sentence(row.when)
		}
		if len(es) == 1 {
			desc = append(desc, when)
		} else {
			desc = append(desc, fmt.Sprintf("- `%s` (%s): %s", e.key, row.code, when))
		}
		if row.header != "" {
			headers[row.header]++
		}
	}
	var variants []map[string]any
	for _, code := range codes {
		variants = append(variants, map[string]any{"allOf": []any{
			map[string]any{"$ref": "#/components/schemas/ErrorEnvelope"},
			map[string]any{"type": "object", "properties": map[string]any{
				"code": map[string]any{"type": "string", "enum": []any{code}},
				"ext":  map[string]any{"type": "object", "properties": map[string]any{"eKey": map[string]any{"type": "string", "enum": keysOf[code]}}},
			}},
		}})
	}
	mt := openapi31.MediaType{Schema: variants[0]}
	if len(variants) > 1 {
		var oneOf []any
		for _, v := range variants {
			oneOf = append(oneOf, v)
		}
		mt.Schema = map[string]any{"oneOf": oneOf}
	}
	example := func(key string) any {
		row, _ := errorRowOf(key)
		return map[string]any{"code": row.code, "msg": row.example, "data": nil, "datetime": docExampleTime, "ext": map[string]any{"eKey": key}}
	}
	description := strings.Join(desc, "\n")
	if len(es) == 1 {
		ex := example(es[0].key)
		mt.Example = &ex
	} else {
		description = "One of:\n\n" + description
		mt.Examples = map[string]openapi31.ExampleOrReference{}
		for _, e := range es {
			mt.Examples[e.key] = exampleOf(e.key, example(e.key))
		}
	}
	r := &openapi31.Response{Description: description, Content: map[string]openapi31.MediaType{"application/json": mt}}
	for name, n := range headers {
		h := headerDocs[name]
		h.Required = ptr(n == len(es))
		r.WithHeadersItem(name, openapi31.HeaderOrReference{Header: &h})
	}
	return r
}

// headerDocs are the headers error answers carry, by name.
var headerDocs = map[string]openapi31.Header{
	"WWW-Authenticate": {Description: ptr("The scheme to authenticate with."), Schema: map[string]any{"type": "string", "pattern": "^Bearer ", "examples": []any{`Bearer realm="deskkit"`}}},
	"Allow":            {Description: ptr("The methods that serve the path (HEAD and OPTIONS never do)."), Schema: map[string]any{"type": "string", "examples": []any{"GET"}}},
	"Retry-After":      {Description: ptr("Seconds to wait before retrying: for a 503, 5 unless the error says otherwise; for a rate limit, until the window of the limit that refused the request ends."), Schema: map[string]any{"type": "integer", "minimum": 1, "examples": []any{5}}},
}

// addRequestIDHeader adds X-Request-Id to the headers of r, an answer
// written out (nil: a reference to one of components.responses).
func addRequestIDHeader(r *openapi31.Response) {
	if r != nil {
		r.WithHeadersItem(RequestIDHeader, openapi31.HeaderOrReference{Reference: &openapi31.Reference{Ref: "#/components/headers/" + RequestIDHeader}})
	}
}

// infoIntro opens the document's description; the error table follows it.
var infoIntro = markdown(`
	The HTTP API of deskkit as package httpapi serves it: the recycle bin (trash) of deleted tasks
	and sprints, the current user: profile, tenant, verification codes by SMS and e-mail, and
	changes of mobile number and e-mail address with proof (mounted when the host configures a
	Verifier); and the tenant's event channels: webhooks, e-mail and chat robots, and test messages
	through them (mounted when the host configures a channel registry).

	Every operation answers with a JSON envelope (‵code‵, ‵msg‵, ‵data‵, ‵datetime‵, ‵ext‵). On
	success ‵code‵ is ‵S‵ and ‵data‵ is the operation's payload. On error ‵code‵ is ‵E0‵ (protocol
	or input error: bad parameter, no credential, unknown route, wrong method), ‵E1‵ (business
	rule: forbidden, not found, conflict, a code refused), ‵E2‵ (system error: unavailable, a
	message that could not be sent, or unexpected) or ‵E3‵ (quota), ‵data‵ is null and ‵ext.eKey‵
	carries a stable machine-readable key. The HTTP status travels beside the body.

	Every operation except this document itself needs ‵Authorization: Bearer <ACCESS_TOKEN>‵; a
	missing, malformed or unknown token is answered 401 with ‵WWW-Authenticate‵. The token names a
	principal (user, tenant, admin flag); rows of other tenants behave as if they did not exist.

	A path that no route serves is answered 404 with ‵ext.eKey‵ ‵route_not_found‵; a path served
	for other methods only is answered 405 with ‵ext.eKey‵ ‵method_not_allowed‵ and an ‵Allow‵
	header. Query parameters an operation does not define, or given more than once, are answered
	400, on every operation; so are unknown body fields.

	‵msg‵ is for a person, in the reader's language, which the answer names in ‵Content-Language‵
	(‵en‵, ‵zh-Hans‵): the first of the request's ‵Accept-Language‵ (quality values order it; ‵zh‵,
	‵zh-CN‵ and ‵zh-Hans‵ all mean Simplified Chinese), the user's preferred locale, the tenant's
	default locale and the server's default that the server has messages in. A request whose token
	is refused has only ‵Accept-Language‵ and the default. ‵code‵, ‵ext.eKey‵, JSON keys and the
	field names inside messages never change with the language.
`)

// infoDescription is the document's introduction, with the error table.
func infoDescription() string {
	var b strings.Builder
	b.WriteString(infoIntro)
	b.WriteString("\n\n# Errors\n\nEvery error is an envelope with `data` null and a stable `ext.eKey`. One table maps errors to HTTP; a service adds its own rows (with keys of their own) above the row of their class:\n\n| status | code | eKey | when | headers |\n| --- | --- | --- | --- | --- |\n")
	for _, key := range errorKeys() {
		row, _ := errorRowOf(key)
		header := ""
		if row.header != "" {
			header = "`" + row.header + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | %s | %s |\n", row.status, row.code, key, row.when, header)
	}
	return strings.TrimSuffix(b.String(), "\n")
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

func ptr[T any](v T) *T { return &v }
