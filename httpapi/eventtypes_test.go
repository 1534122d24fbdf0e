package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// catalogueEntry is a type as GET /event/types answers it.
type catalogueEntry struct {
	Type        string          `json:"type"`
	Service     string          `json:"service"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Example     json.RawMessage `json:"example"`
	Payload     struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	} `json:"payload"`
}

// hostTypes are a host's own types: one with its own schema and a
// description as a message, one written before About, with an English
// description and no service.
var hostTypes = []deskkit.EventType{{
	Name: "invoice.paid", Service: "billing", About: deskkit.Textf("A task was deleted. It is in the trash and can be restored from there."),
	Example: map[string]any{"invoiceId": 9},
	Schema: json.RawMessage(`{"type": "object", "required": ["tenantId", "invoiceId"], ` +
		`"properties": {"tenantId": {"type": "integer"}, "invoiceId": {"type": "integer", "minimum": 1}}}`),
}, {
	Name: "build.broken", Description: "A build broke.",
	Example: struct {
		Build int    `json:"build"`
		By    string `json:"by"`
	}{Build: 12, By: "ci"},
}}

// readCatalogue reads GET /event/types in the language accept asks for.
func readCatalogue(t *testing.T, e *env, accept string) []catalogueEntry {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+httpapi.Prefix+"/event/types", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer dave")
	req.Header.Set("Accept-Language", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Code string           `json:"code"`
		Data []catalogueEntry `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &env) != nil || env.Code != "S" {
		t.Fatalf("GET /event/types (%s): %d %s", accept, resp.StatusCode, body)
	}
	return env.Data
}

// compile compiles a JSON Schema as receivers' validators do.
func compile(t *testing.T, name string, schema json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("%s: schema %s: %v", name, schema, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("%s: schema %s does not compile: %v", name, schema, err)
	}
	return s
}

func validates(s *jsonschema.Schema, data json.RawMessage) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

func hasHan(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// TestEventCatalogue: every registered type, deskkit's and a host's, has
// a service, a description in the reader's language (English and
// Simplified Chinese; a host's English-only one in both), a JSON Schema
// that its example's data validates against (and that refuses data
// without tenantId), and an example of the whole event, on every backend.
func TestEventCatalogue(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := setupOn(t, db)
		if err := e.ch.reg.RegisterEventTypes(slices.Concat(trash.EventTypes(), verify.EventTypes(), hostTypes)...); err != nil {
			t.Fatal(err)
		}
		en, zh := readCatalogue(t, e, "en"), readCatalogue(t, e, "zh-CN")
		var names []string
		for _, ty := range en {
			names = append(names, ty.Type)
		}
		// The services' types and the host's, in name order.
		var want []string
		for _, ty := range slices.Concat(channel.EventTypes(), trash.EventTypes(), verify.EventTypes(), hostTypes) {
			want = append(want, ty.Name)
		}
		slices.Sort(want)
		if d := cmp.Diff(want, names); d != "" {
			t.Fatalf("catalogue (-want +got):\n%s", d)
		}
		if len(zh) != len(en) {
			t.Fatalf("%d types in Chinese, %d in English", len(zh), len(en))
		}
		wantService := map[string]string{"build.broken": "host", "invoice.paid": "billing",
			"user.email.changed": "verify", "user.mobile.changed": "verify"}
		for _, ty := range channel.EventTypes() {
			wantService[ty.Name] = "channel"
		}
		for i, ty := range en {
			ws, ok := wantService[ty.Type]
			if !ok {
				ws = "trash"
			}
			if ty.Service != ws || zh[i].Service != ws {
				t.Errorf("%s: service %q (zh %q), want %q", ty.Type, ty.Service, zh[i].Service, ws)
			}
			switch {
			case ty.Description == "" || hasHan(ty.Description) || !strings.HasSuffix(ty.Description, "."):
				t.Errorf("%s: English description %q", ty.Type, ty.Description)
			case ty.Type == "build.broken":
				if zh[i].Description != "A build broke." {
					t.Errorf("%s: a host's English description reads %q in Chinese", ty.Type, zh[i].Description)
				}
			case !hasHan(zh[i].Description) || !strings.HasSuffix(zh[i].Description, "。"):
				t.Errorf("%s: Chinese description %q", ty.Type, zh[i].Description)
			}
			for _, note := range []string{"(", "actor", "also", "POST", "/api"} {
				if strings.Contains(ty.Description, note) {
					t.Errorf("%s: description %q reads as a developer's note (%q)", ty.Type, ty.Description, note)
				}
			}
			if !bytes.Equal(ty.Schema, zh[i].Schema) || !bytes.Equal(ty.Payload.Data, zh[i].Payload.Data) {
				t.Errorf("%s: schema or example differ by language", ty.Type)
			}

			s := compile(t, ty.Type, ty.Schema)
			if err := validates(s, ty.Payload.Data); err != nil {
				t.Errorf("%s: the example's data %s does not validate against the schema %s: %v", ty.Type, ty.Payload.Data, ty.Schema, err)
			}
			if ty.Payload.Type != ty.Type || ty.Payload.Timestamp != "2026-11-23T10:00:00Z" {
				t.Errorf("%s: payload type %q, timestamp %q", ty.Type, ty.Payload.Type, ty.Payload.Timestamp)
			}
			var data, example map[string]any
			if err := json.Unmarshal(ty.Payload.Data, &data); err != nil || data["tenantId"] != 1.0 {
				t.Errorf("%s: payload data %s: tenantId is not 1 (%v)", ty.Type, ty.Payload.Data, err)
			}
			if err := json.Unmarshal(ty.Example, &example); err != nil {
				t.Errorf("%s: example %s: %v", ty.Type, ty.Example, err)
			}
			delete(data, "tenantId")
			delete(example, "tenantId")
			if d := cmp.Diff(example, data); d != "" {
				t.Errorf("%s: example and payload.data differ beyond tenantId (-example +data):\n%s", ty.Type, d)
			}
			// The schema says something: data without tenantId fails it.
			if b, _ := json.Marshal(data); validates(s, b) == nil {
				t.Errorf("%s: the schema %s takes data without tenantId", ty.Type, ty.Schema)
			}
		}
		// The host's own schema is the one shown.
		for _, ty := range en {
			if ty.Type == "invoice.paid" && !strings.Contains(string(ty.Schema), `"minimum":1`) {
				t.Errorf("invoice.paid: schema %s is not the host's", ty.Schema)
			}
		}
	})
}
