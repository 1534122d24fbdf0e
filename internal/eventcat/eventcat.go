// Package eventcat writes what the event catalogue shows of a type beside
// its description: the JSON Schema of its data and an example of the
// whole event as a webhook receives it. The API (GET /api/v1/event/types)
// and the console's channel form both show them.
package eventcat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/swaggest/jsonschema-go"

	"github.com/deskkit/deskkit"
)

// ExampleTenantID is the tenantId of the examples, as the publisher sets
// it in every event's data.
const ExampleTenantID = 1

// ExampleTime is the timestamp of the examples.
var ExampleTime = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// payload is the JSON a webhook receives, as Standard Webhooks lays it
// out (the channel's webhook sends the same shape).
type payload struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Data is t's example data as a publisher sends it: Example encoded, with
// "tenantId" set to ExampleTenantID. An Example that is no JSON object is
// an error (RegisterEventTypes refuses it).
func Data(t deskkit.EventType) (json.RawMessage, error) {
	b := []byte("{}")
	if t.Example != nil {
		var err error
		if b, err = json.Marshal(t.Example); err != nil {
			return nil, fmt.Errorf("eventcat: %s: example: %w", t.Name, err)
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("eventcat: %s: the example is no JSON object", t.Name)
	}
	id := fmt.Sprint(ExampleTenantID)
	if v, ok := m["tenantId"]; ok {
		if string(v) == id {
			return b, nil // as the example wrote it, in its order
		}
		m["tenantId"] = json.RawMessage(id)
		return json.Marshal(m)
	}
	// As the publisher does: tenantId first, the rest in its own order.
	inner := bytes.TrimSpace(b[1:])
	out := append([]byte(`{"tenantId":`), id...)
	if len(inner) > 0 && inner[0] != '}' {
		out = append(out, ',')
	}
	return append(out, inner...), nil
}

// Payload is t's example as a webhook receives it: {type, timestamp,
// data}, data as Data writes it.
func Payload(t deskkit.EventType) (json.RawMessage, error) {
	data, err := Data(t)
	if err != nil {
		return nil, err
	}
	return json.Marshal(payload{Type: t.Name, Timestamp: ExampleTime, Data: data})
}

// Indent is b indented by two spaces, for people.
func Indent(b json.RawMessage) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// Schema is the JSON Schema of t's data: t.Schema as the host wrote it,
// else reflected from Example's Go type as the OpenAPI document's schemas
// are (null only for pointers; every field without omitempty required),
// with "tenantId", which the publisher adds, required.
func Schema(t deskkit.EventType) (json.RawMessage, error) {
	if t.Schema != nil {
		return t.Schema, nil
	}
	example := t.Example
	if example == nil {
		example = map[string]any{}
	}
	var r jsonschema.Reflector
	s, err := r.Reflect(example, jsonschema.InlineRefs,
		jsonschema.InterceptNullability(func(p jsonschema.InterceptNullabilityParams) {
			if p.NullAdded && p.Type.Kind() != reflect.Pointer {
				p.Schema.RemoveType(jsonschema.Null)
			}
		}),
		jsonschema.InterceptProp(func(p jsonschema.InterceptPropParams) error {
			if !p.Processed || p.Field.Tag.Get("json") == "" {
				return nil
			}
			if !strings.Contains(p.Field.Tag.Get("json"), ",omit") && !contains(p.ParentSchema.Required, p.Name) {
				p.ParentSchema.Required = append(p.ParentSchema.Required, p.Name)
			}
			return nil
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("eventcat: %s: schema: %w", t.Name, err)
	}
	s.WithSchema("https://json-schema.org/draft/2020-12/schema")
	tenant := jsonschema.Schema{}
	tenant.WithType(jsonschema.Integer.Type()).WithDescription("The tenant the event happened in; every event's data has it.")
	s.WithPropertiesItem("tenantId", tenant.ToSchemaOrBool())
	if !contains(s.Required, "tenantId") {
		s.Required = append([]string{"tenantId"}, s.Required...)
	}
	return json.Marshal(s)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
