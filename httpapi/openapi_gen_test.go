package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
