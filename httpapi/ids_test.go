package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
)

const (
	idSpelling = "must be written as plain decimal digits, without a sign, leading zeros or escapes"
	idPositive = "must be a positive integer"
)

// idSpellings are ids as a client might write them, with the rule each is
// refused by ("" for none): the one spelling is plain decimal digits.
var idSpellings = []struct{ raw, rule string }{
	{"42", ""},
	{"+42", idSpelling},
	{"042", idSpelling},
	{"0042", idSpelling},
	{"-0", idSpelling},
	{"00", idSpelling},
	{"0", idPositive},
	{"-42", idPositive},
	{"4.2", idPositive},
	{"1e3", idPositive},
	{"0x2a", idPositive},
	{"4_2", idPositive},
	{"abc", idPositive},
	{"４２", idPositive},
	{"9223372036854775808", idPositive},
	{"+9223372036854775808", idPositive},
}

func TestParseID(t *testing.T) {
	for _, c := range idSpellings {
		n, err := httpapi.ParseID("id", c.raw)
		var in *deskkit.InputError
		switch {
		case c.rule == "" && (err != nil || n != 42):
			t.Errorf("ParseID(%q) = %d, %v; want 42", c.raw, n, err)
		case c.rule != "" && (!errors.As(err, &in) || in.Field != "id" || in.Rule.String() != c.rule):
			t.Errorf("ParseID(%q) = %d, %v; want id %s", c.raw, n, err, c.rule)
		}
	}
}

// Issue 28, fault 8: filter ids +42 and 042 were read as 42 where
// projectId refused them. Every id parameter of the document (path and
// query), every id key of the filters (one value and lists), and a
// channel id written as a string in a body have the one spelling.
func TestIDSpellingEverywhere(t *testing.T) {
	e := setup(t)
	// Each id parameter of the document, with a target to put it in: a
	// path's {id} is derived from the path, with the query that the few
	// operations that need more than the id are given here; a query id
	// and the filters' values are written out.
	query := map[string]string{
		"POST /api/v1/event/channel/{id}/recover": "?since=2026-01-01T00:00:00Z",
	}
	// The bodies of the operations that need one.
	bodies := map[string]string{
		"POST /api/v1/event/channel/{id}/secret/rotate": "{}",
	}
	targets := map[string]string{
		"DELETE /api/v1/task/trash projectId":                   "/api/v1/task/trash?projectId=%s",
		"PATCH /api/v1/task/trash/back projectId":               "/api/v1/task/trash/back?projectId=%s",
		"GET /api/v1/task/trash/count projectId":                "/api/v1/task/trash/count?projectId=%s",
		"GET /api/v1/task/trash/search projectId":               "/api/v1/task/trash/search?targetType=TASK&projectId=%s",
		"GET /api/v1/task/trash/search filters[0].value, EQUAL": "/api/v1/task/trash/search?targetType=TASK&filters[0].key=%k&filters[0].op=EQUAL&filters[0].value=%s",
		"GET /api/v1/task/trash/search filters[0].value, IN":    "/api/v1/task/trash/search?targetType=TASK&filters[0].key=%k&filters[0].op=IN&filters[0].value=1,%s",
	}
	for _, op := range documentIDParams(t) {
		if _, path, _ := strings.Cut(op, " "); strings.Contains(path, "{id}") && !strings.Contains(path, " ") {
			targets[op] = strings.Replace(path, "{id}", "%s", 1) + query[op]
			continue
		}
		if _, ok := targets[op]; !ok {
			t.Errorf("the document's id parameter %s has no case here", op)
		}
	}
	for name, target := range targets {
		method, _, _ := strings.Cut(name, " ")
		field := "id"
		keys := []string{""}
		switch {
		case strings.Contains(name, "filters"):
			field = "filters[0].value"
			keys = []string{"id", "projectId", "targetId", "sprintId", "createdBy", "deletedBy"}
		case strings.Contains(name, "projectId"):
			field = "projectId"
		}
		for _, key := range keys {
			for _, c := range idSpellings {
				rule := c.rule
				if field == "filters[0].value" && rule == idPositive {
					// A filter compares integers (id GREATER_THAN 0):
					// what is one, in its one spelling, is taken.
					rule = "must be an integer"
					if c.raw == "0" || c.raw == "-42" {
						rule = ""
					}
				}
				value := c.raw
				if strings.Contains(target, "?") && strings.Index(target, "%s") > strings.Index(target, "?") {
					value = url.QueryEscape(value)
				} else {
					value = url.PathEscape(value)
				}
				path := strings.Replace(strings.Replace(target, "%k", key, 1), "%s", value, 1)
				a := e.call(t, method, path, "admin", bodies[name])
				if rule == "" {
					if a.status == http.StatusBadRequest {
						t.Errorf("%s %s: 400 %q, want it taken", method, path, a.msg)
					}
					continue
				}
				if want := field + " " + rule; a.status != http.StatusBadRequest || a.msg != want {
					t.Errorf("%s %s: %d %q, want 400 %q", method, path, a.status, a.msg, want)
				}
			}
		}
	}
	// An escape in a path is another spelling too.
	if a := e.call(t, http.MethodGet, "/api/v1/task/trash/%34%32", "admin", ""); a.status != http.StatusBadRequest || a.msg != "id "+idSpelling {
		t.Errorf("%%34%%32: %d %q", a.status, a.msg)
	}
	// A channel id in a body: a number, or a string of the one spelling.
	body := func(id string) string {
		return `{"id": ` + id + `, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`
	}
	for id, want := range map[string]string{
		`"042"`: "id " + idSpelling,
		`"+42"`: "id " + idSpelling,
		`"-0"`:  "id " + idSpelling,
		`"0"`:   "id must be a positive integer, written as a number or a string of digits",
		`"4 2"`: "id must be a positive integer, written as a number or a string of digits",
		`-0`:    "id " + idSpelling,
		`0`:     "id must be a positive integer, written as a number or a string of digits",
		`4.2`:   "id must be a positive integer, written as a number or a string of digits",
	} {
		if a := e.call(t, http.MethodPut, channelPath, "admin", body(id)); a.status != http.StatusBadRequest || a.msg != want {
			t.Errorf("PUT with id %s: %d %q, want 400 %q", id, a.status, a.msg, want)
		}
	}
	for _, id := range []string{`"42"`, `42`} {
		if a := e.call(t, http.MethodPut, channelPath, "admin", body(id)); a.status != http.StatusNotFound {
			t.Errorf("PUT with id %s: %d %q, want 404 (no such channel)", id, a.status, a.msg)
		}
	}
}

// documentIDParams lists the id parameters of the committed document
// ("METHOD path" for a path id, "METHOD path name" for a query id), and
// the filter values as the search has them.
func documentIDParams(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for path, ops := range doc.Paths {
		for method, rawOp := range ops {
			var op struct {
				Parameters []struct {
					Name, In string
				} `json:"parameters"`
			}
			if json.Unmarshal(rawOp, &op) != nil {
				continue
			}
			for _, p := range op.Parameters {
				m := strings.ToUpper(method)
				switch {
				case p.In == "path" && p.Name == "id":
					out = append(out, m+" "+path)
				case p.In == "query" && strings.HasSuffix(p.Name, "Id"):
					out = append(out, m+" "+path+" "+p.Name)
				case p.Name == "filters[0].value":
					out = append(out, m+" "+path+" filters[0].value, EQUAL", m+" "+path+" filters[0].value, IN")
				}
			}
		}
	}
	if len(out) < 18 {
		t.Fatalf("only %d id parameters in the document: %v", len(out), out)
	}
	return out
}
