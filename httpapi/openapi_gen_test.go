package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// committedDocument is httpapi/openapi.json, read as far as the tests
// look into it.
type committedDocument struct {
	Info struct {
		Description string `json:"description"`
	} `json:"info"`
	Paths map[string]map[string]struct {
		ID         string `json:"operationId"`
		Parameters []struct {
			Name     string `json:"name"`
			In       string `json:"in"`
			Required bool   `json:"required"`
		} `json:"parameters"`
		RequestBody *struct {
			Description string `json:"description"`
		} `json:"requestBody"`
		Responses map[string]struct {
			Ref     string `json:"$ref"`
			Content map[string]struct {
				Schema map[string]any `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
}

func readDocument(t *testing.T) (committedDocument, string) {
	t.Helper()
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc committedDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, string(b)
}

// Every key of the error table has its words, is in the document's table
// and in ext.eKey's enum; every 4xx and 5xx answer of every operation says
// which keys it carries.
func TestDocumentHasTheErrorTable(t *testing.T) {
	doc, text := readDocument(t)
	keys := doc.Components.Schemas["ErrorKey"]["enum"]
	for _, row := range slices.Concat(errorTable, routerErrors) {
		if row.when == "" || row.example == "" {
			t.Errorf("error key %s: no when or example message", row.key)
		}
		if !strings.Contains(doc.Info.Description, fmt.Sprintf("| %d | %s | `%s` |", row.status, row.code, row.key)) {
			t.Errorf("error key %s is not in the document's table", row.key)
		}
		if !slices.Contains(keys.([]any), any(row.key)) {
			t.Errorf("error key %s is not in ErrorKey's enum", row.key)
		}
		if !strings.Contains(text, `"enum": [`+"\n") || !strings.Contains(text, `"`+row.key+`"`) {
			t.Errorf("error key %s appears nowhere in the document", row.key)
		}
	}
}

// The package documentation lists the error table's rows, in its order,
// with their status, code and key.
func TestPackageDocListsErrorTable(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^//\t.*?\s(\d{3})\s+(E\d)\s+([a-z_]+)`)
	var got []string
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	var want []string
	for _, row := range slices.Concat(errorTable, routerErrors) {
		want = append(want, fmt.Sprintf("%d %s %s", row.status, row.code, row.key))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("doc.go's error table (-errorTable +doc.go):\n%s", diff)
	}
}

// Every operation's success is an envelope of its own, whose data has a
// schema; every operation has a description and its error answers; every
// request body is described.
func TestDocumentOperations(t *testing.T) {
	doc, _ := readDocument(t)
	var ids []string
	for path, item := range doc.Paths {
		for method, op := range item {
			ids = append(ids, op.ID)
			if op.RequestBody != nil && op.RequestBody.Description == "" {
				t.Errorf("%s %s: request body without description", method, path)
			}
			for _, status := range []string{"400", "405"} {
				if _, ok := op.Responses[status]; !ok {
					t.Errorf("%s %s: no %s answer", method, path, status)
				}
			}
			if op.ID == "getOpenAPIDocument" {
				continue
			}
			ref, _ := op.Responses["200"].Content["application/json"].Schema["$ref"].(string)
			result := doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
			props, _ := result["properties"].(map[string]any)
			if data, ok := props["data"].(map[string]any); !ok || len(data) == 0 || !slices.Contains(result["required"].([]any), any("data")) {
				t.Errorf("%s %s: the 200 (%s) has no data schema", method, path, ref)
			}
		}
	}
	slices.Sort(ids)
	if diff := cmp.Diff(OperationIDs("trash", "verify", "channel"), ids); diff != "" {
		t.Errorf("the document's operations, the operation lists' (-) and written (+):\n%s", diff)
	}
}

// The document's parameters are the ones the operations declare, and
// decode.
func TestDocumentParametersAreDeclared(t *testing.T) {
	doc, _ := readDocument(t)
	for _, o := range allOperations() {
		type p struct {
			In       string
			Required bool
		}
		want := map[string]p{}
		for _, q := range o.params {
			want[q.name] = p{q.in, q.required}
		}
		got := map[string]p{}
		for _, q := range doc.Paths[Prefix+o.path][strings.ToLower(o.method)].Parameters {
			got[q.Name] = p{q.In, q.Required}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s parameters, declared (-) and documented (+):\n%s", o.method, o.path, diff)
		}
	}
}

// allOperations are deskkit's operations with every service mounted.
func allOperations() []operation {
	return slices.Concat(trashRoutes(nil), verifyRoutes(nil), channelRoutes(nil), eventRoutes(nil))
}

// The generator refuses an operation whose doc does not match it, rather
// than writing a document that lies.
func TestBuildDocumentRefusesBadDocs(t *testing.T) {
	type req struct {
		ID int64 `path:"id" example:"1" description:"the id"`
	}
	handler := func(context.Context, deskkit.Principal, req) (*none, error) { return nil, nil }
	good := doc{tag: "trash", summary: "s", description: "d", ok: "ok"}
	for _, tc := range []struct {
		name string
		doc  func(d *doc) *doc
		want string
	}{
		{"no doc", func(*doc) *doc { return nil }, "needs a doc"},
		{"no summary", func(d *doc) *doc { d.summary = ""; return d }, "needs a doc"},
		{"unknown error key", func(d *doc) *doc { d.errors = []errDoc{{key: "no_such_key"}}; return d }, "no row of the error table"},
		{"example body without a body", func(d *doc) *doc { d.example.body = raw(`{}`); return d }, "takes none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good
			o := op("x", http.MethodDelete, "/x/{id}", tc.doc(&d), handler)
			_, err := buildDocument([]*operation{&o})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("buildDocument: %v, want an error with %q", err, tc.want)
			}
		})
	}
	type bare struct {
		ID int64 `path:"id"`
	}
	o := op("x", http.MethodDelete, "/x/{id}", &good, func(context.Context, deskkit.Principal, bare) (*none, error) { return nil, nil })
	if _, err := buildDocument([]*operation{&o}); err == nil || !strings.Contains(err.Error(), "example") {
		t.Errorf("buildDocument of a parameter without example or description: %v", err)
	}
	o = op("x", http.MethodDelete, "/x/{id}", &good, handler)
	if _, err := buildDocument([]*operation{&o}); err != nil {
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
	if diff := cmp.Diff(OperationIDs("trash"), got); diff != "" {
		t.Errorf("documented operations (-want +got):\n%s", diff)
	}
}
