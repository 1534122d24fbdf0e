package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// Every key the server answers has its words, for the document's error
// table and examples.
func TestErrorDocsCoverTable(t *testing.T) {
	for _, key := range errorKeys() {
		d, ok := errorDocs[key]
		if !ok || d.when == "" || d.msg == "" {
			t.Errorf("error key %s: errorDocs has no when and msg", key)
		}
	}
	for _, key := range bodyErrors {
		if _, ok := errorDocs[key]; !ok {
			t.Errorf("body error key %s: errorDocs has no entry", key)
		}
	}
}

// The generator refuses an operation whose Doc does not match it, rather
// than writing a document that lies.
func TestBuildDocumentRefusesBadDocs(t *testing.T) {
	type req struct {
		ID int64 `path:"id"`
	}
	handler := func(context.Context, deskkit.Principal, req) (*None, error) { return nil, nil }
	good := Doc{Tag: "trash", Summary: "s", Description: "d", OK: "ok",
		Params: []Param{{Name: "id", Description: "the id", Example: 1}}}
	for _, tc := range []struct {
		name string
		doc  func(d *Doc) *Doc
		want string
	}{
		{"no doc", func(*Doc) *Doc { return nil }, "no Doc"},
		{"no summary", func(d *Doc) *Doc { d.Summary = ""; return d }, "Doc needs"},
		{"unknown error key", func(d *Doc) *Doc { d.Errors = []ErrorDoc{{Key: "no_such_key"}}; return d }, "no row of the error table"},
		{"undeclared parameter", func(d *Doc) *Doc {
			d.Params = append(d.Params, Param{Name: "pageSize", Description: "x", Example: 1})
			return d
		}, "does not declare"},
		{"parameter without example", func(d *Doc) *Doc { d.Params = []Param{{Name: "id", Description: "the id"}}; return d }, "needs a description and an example"},
		{"example body without a body", func(d *Doc) *Doc { d.Example.Body = raw(`{}`); return d }, "takes none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good
			op := Op("x", http.MethodDelete, "/x/{id}", handler).With(tc.doc(&d))
			_, err := buildDocument([]*Operation{&op})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("buildDocument: %v, want an error with %q", err, tc.want)
			}
		})
	}
	op := Op("x", http.MethodDelete, "/x/{id}", handler).With(&good)
	if _, err := buildDocument([]*Operation{&op}); err != nil {
		t.Errorf("buildDocument of a good operation: %v", err)
	}
}

// The served document covers the services New mounted, and none of the
// host's routes.
func TestServedDocumentCoversMountedOperations(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	f.srv.Handle(http.MethodGet, "/demo/task/{id}", func(*http.Request, deskkit.Principal) (any, error) { return nil, nil })
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Prefix+"/openapi.json", nil))
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("%d %v", rec.Code, err)
	}
	var got []string
	for _, item := range doc.Paths {
		for _, op := range item {
			got = append(got, op.OperationID)
		}
	}
	slices.Sort(got)
	want := []string{"clearAllTrash", "clearTrash", "countTrash", "getOpenAPIDocument", "restoreAllTrash", "restoreTrash", "searchTrash"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("documented operations (-want +got):\n%s", diff)
	}
}

// toOAS31 writes OAS 3.0's words the 3.1 way in schemas, and leaves
// values (examples, enums) as they are.
func TestToOAS31(t *testing.T) {
	for _, tc := range []struct{ name, in, want, err string }{
		{name: "nullable", in: `{"type": "string", "nullable": true}`, want: `{"type": ["string", "null"]}`},
		{name: "nullable enum", in: `{"type": "string", "nullable": true, "enum": ["A", "B"]}`, want: `{"type": ["string", "null"], "enum": ["A", "B", null]}`},
		{name: "only null", in: `{"type": "object", "nullable": true, "enum": [null], "description": "d"}`, want: `{"type": "null", "description": "d"}`},
		{name: "types", in: `{"type": ["string", "integer"], "nullable": true}`, want: `{"type": ["string", "integer", "null"]}`},
		{name: "not nullable", in: `{"type": "integer", "nullable": false}`, want: `{"type": "integer"}`},
		{name: "exclusive minimum", in: `{"type": "integer", "minimum": 0, "exclusiveMinimum": true}`, want: `{"type": "integer", "exclusiveMinimum": 0}`},
		{name: "inclusive maximum", in: `{"type": "integer", "maximum": 9, "exclusiveMaximum": false}`, want: `{"type": "integer", "maximum": 9}`},
		{name: "nested", in: `{"allOf": [{"properties": {"example": {"type": "integer", "nullable": true}}}], "items": {"type": "string", "nullable": true}}`,
			want: `{"allOf": [{"properties": {"example": {"type": ["integer", "null"]}}}], "items": {"type": ["string", "null"]}}`},
		{name: "values", in: `{"type": "object", "example": {"nullable": true}, "enum": [{"nullable": true}], "default": {"nullable": true}}`,
			want: `{"type": "object", "example": {"nullable": true}, "enum": [{"nullable": true}], "default": {"nullable": true}}`},
		{name: "examples of a media type", in: `{"content": {"application/json": {"examples": {"a": {"value": {"nullable": true}}}}}}`,
			want: `{"content": {"application/json": {"examples": {"a": {"value": {"nullable": true}}}}}}`},
		{name: "nullable without type", in: `{"properties": {"x": {"nullable": true}}}`, err: "properties x: nullable without a type"},
		{name: "exclusive minimum without minimum", in: `{"type": "integer", "exclusiveMinimum": true}`, err: "exclusiveMinimum without minimum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v obj
			if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
				t.Fatal(err)
			}
			err := toOAS31(v)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("toOAS31: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want obj
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, v); diff != "" {
				t.Errorf("toOAS31 (-want +got):\n%s", diff)
			}
		})
	}
}

// What the linters ask of the committed document holds for every
// operation, as the generator's rules write it: OAS 3.1 without 3.0's
// nullable, a description for every request body, an example for every
// object schema of the components.
func TestDocumentRules(t *testing.T) {
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			RequestBody *struct {
				Description string `json:"description"`
			} `json:"requestBody"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != openAPIVersion || !strings.HasPrefix(openAPIVersion, "3.1.") {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	if bytes.Contains(b, []byte(`"nullable"`)) {
		t.Error(`the document says "nullable", which OAS 3.1 does not know`)
	}
	bodies := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			if op.RequestBody != nil {
				bodies++
				if op.RequestBody.Description == "" {
					t.Errorf("%s %s: request body without description", method, path)
				}
			}
		}
	}
	if bodies == 0 {
		t.Error("no operation of the document takes a body")
	}
	for name, s := range doc.Components.Schemas {
		if _, ok := s["example"]; s["type"] == "object" && !ok {
			t.Errorf("schema %s: no example", name)
		}
	}
}
