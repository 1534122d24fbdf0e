package httpapi

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/envelope"
)

// ParamIn says where a parameter travels.
type ParamIn string

// Where parameters travel.
const (
	InPath  ParamIn = "path"
	InQuery ParamIn = "query"
)

// Param declares one parameter of an operation, as the OpenAPI document
// does.
type Param struct {
	// Name as the client spells it. In a query parameter, "[n]" stands for
	// an index written in decimal: "filters[n].key" declares filters[0].key,
	// filters[1].key... (which indexes are valid is the decoder's rule).
	Name     string
	In       ParamIn
	Type     string // the OpenAPI type: "integer", "string" or "boolean"
	Required bool   // path parameters always are

	// What the OpenAPI document says besides (deskkit's own operations
	// must say it; Doc.Params can say it for Op's parameters):
	// Description ("{n}" stands for the index of an indexed name), an
	// Example (a []string gives one per index), and Schema, a JSON object
	// of schema keywords added to {"type": Type}, such as
	// `{"minimum": 1}` or a $ref that replaces it.
	Description string
	Example     any
	Schema      string
	// Indexes is how many indexes "[n]" takes (0 to Indexes-1), each
	// documented as a parameter of its own.
	Indexes int
}

// Operation is one route as data: everything registration, Allow, the
// unknown-parameter check, Routes and the OpenAPI walk need. Build one with
// Op (typed, decoding into a request struct) or write it out with an
// Endpoint.
type Operation struct {
	ID     string // the stable operationId of the OpenAPI document
	Method string
	// Path is the template under Prefix, its path parameters written
	// {name}: "/task/trash/{id}".
	Path     string
	Params   []Param // path and query parameters; query parameters not listed are 400
	Endpoint Endpoint
	// AnyQuery turns the unknown-parameter check off, for a host route
	// that reads a free-form query string itself.
	AnyQuery bool

	// serve, if set, answers instead of Endpoint without authentication or
	// envelope (the OpenAPI document).
	serve http.HandlerFunc
	host  bool // added with Handle or Mount: not among Routes

	// Doc is what the OpenAPI document says beyond the types; see Doc.
	Doc   *Doc
	types *opTypes // set by Op
}

// Route is a method and a path template as the OpenAPI document writes it
// ("/api/v1/task/trash/{id}").
type Route struct {
	Method string
	Path   string
}

// Routes lists deskkit's own routes, in the OpenAPI document's path syntax;
// routes added with Handle or Mount are not among them.
func (s *Server) Routes() []Route {
	var out []Route
	for _, op := range s.ops {
		if !op.host {
			out = append(out, Route{op.Method, Prefix + op.Path})
		}
	}
	return out
}

// Operations lists deskkit's own operations, with their parameters, in the
// order they were declared.
func (s *Server) Operations() []Operation {
	var out []Operation
	for _, op := range s.ops {
		if !op.host {
			out = append(out, *op)
		}
	}
	return out
}

// Handle mounts a host endpoint at Prefix+path, a template whose path
// parameters are written {name} ("/demo/task/{id}") and read with
// r.PathValue("id"), with deskkit's authentication, body limit, deadline,
// envelope and error table. query declares the query parameters it takes;
// any other is answered 400, as on deskkit's own routes, so a route that
// declares none takes none (set Operation.AnyQuery through Mount to read a
// free-form query string). The reference server mounts its demo routes this
// way. Call Handle and Mount before the server serves; a method and
// template mounted twice, or a template httprouter cannot hold, panics.
func (s *Server) Handle(method, path string, fn Endpoint, query ...Param) {
	params := slices.Clone(query)
	for _, name := range wildcards(path) {
		params = append(params, Param{Name: name, In: InPath, Type: "string", Required: true})
	}
	s.Mount(Operation{Method: method, Path: path, Params: params, Endpoint: fn})
}

// Mount adds host operations, with what Handle gives.
func (s *Server) Mount(ops ...Operation) {
	for _, op := range ops {
		op.host = true
		s.add(op)
	}
	s.build()
}

func (s *Server) add(op Operation) {
	if err := op.check(); err != nil {
		panic("httpapi: " + err.Error())
	}
	for _, o := range s.ops {
		if o.Method == op.Method && o.Path == op.Path {
			panic(fmt.Sprintf("httpapi: %s %s mounted twice", op.Method, op.Path))
		}
	}
	s.ops = append(s.ops, &op)
}

var wildcardName = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// check validates the template and that its path parameters are declared.
func (op *Operation) check() error {
	if op.Method == "" || op.Method == http.MethodHead || op.Method == http.MethodOptions {
		return fmt.Errorf("%s %s: method must be GET, POST, PUT, PATCH or DELETE", op.Method, op.Path)
	}
	if op.Endpoint == nil && op.serve == nil {
		return fmt.Errorf("%s %s: no endpoint", op.Method, op.Path)
	}
	if !strings.HasPrefix(op.Path, "/") {
		return fmt.Errorf("%s %s: path must start with /", op.Method, op.Path)
	}
	for _, seg := range strings.Split(op.Path[1:], "/") {
		if seg == "" || seg == "." || seg == ".." || (strings.ContainsAny(seg, "{}") && !wildcardName.MatchString(seg)) {
			return fmt.Errorf("%s %s: bad segment %q", op.Method, op.Path, seg)
		}
	}
	declared := map[string]bool{}
	for _, p := range op.Params {
		if p.In == InPath {
			declared[p.Name] = true
		}
	}
	wild := wildcards(op.Path)
	for _, name := range wild {
		if !declared[name] {
			return fmt.Errorf("%s %s: path parameter %s is not declared", op.Method, op.Path, name)
		}
	}
	if len(declared) != len(wild) {
		return fmt.Errorf("%s %s: declares path parameters its template lacks", op.Method, op.Path)
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

// resource is a node of the tree of path templates, across methods.
type resource struct {
	static   map[string]*resource
	wild     *resource
	wildName string
	ops      map[string]*Operation // by method
}

func (n *resource) child(seg string) *resource {
	if strings.HasPrefix(seg, "{") {
		if n.wild == nil {
			n.wild = &resource{wildName: seg[1 : len(seg)-1]}
		}
		return n.wild
	}
	if n.static == nil {
		n.static = map[string]*resource{}
	}
	c := n.static[seg]
	if c == nil {
		c = &resource{}
		n.static[seg] = c
	}
	return c
}

// resolve finds the resource a request path names. A static segment
// shadows a wildcard at the same position, whatever the method, so
// /task/trash/search is the search resource only (DELETE there is 405, not
// a clear of entry "search"); there is no backtracking. Empty, "." and ".."
// segments name nothing: no path is cleaned, and nothing redirects.
func (n *resource) resolve(path string) (*resource, map[string]string) {
	rest, ok := strings.CutPrefix(path, Prefix+"/")
	if !ok {
		return nil, nil
	}
	var vals map[string]string
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return nil, nil
		}
		switch {
		case n.static[seg] != nil:
			n = n.static[seg]
		case n.wild != nil:
			n = n.wild
			if vals == nil {
				vals = map[string]string{}
			}
			vals[n.wildName] = seg
		default:
			return nil, nil
		}
	}
	if len(n.ops) == 0 {
		return nil, nil
	}
	return n, vals
}

// allow lists the methods that serve n, in a fixed order. HEAD is not among
// them: no route serves it (see the package documentation).
func (n *resource) allow() []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if n.ops[m] != nil {
			out = append(out, m)
		}
	}
	return out
}

// build makes the template tree and the httprouter router from s.ops.
//
// httprouter v1.3.0 panics when a static segment and a wildcard share a
// position in one method's tree (PATCH /task/trash/back beside PATCH
// /task/trash/{id}/back). So each method's templates are registered with
// such static segments turned into the wildcard ("/task/trash/{id}" for
// /task/trash/back), and every registration answers through s.dispatch,
// which finds the operation in the template tree: httprouter only sorts
// out paths no template can match.
func (s *Server) build() {
	root := &resource{}
	for _, op := range s.ops {
		n := root
		for _, seg := range strings.Split(op.Path[1:], "/") {
			n = n.child(seg)
		}
		if n.ops == nil {
			n.ops = map[string]*Operation{}
		}
		n.ops[op.Method] = op
	}

	router := httprouter.New()
	router.HandleOPTIONS = false
	router.RedirectTrailingSlash = false
	router.RedirectFixedPath = false
	router.NotFound = http.HandlerFunc(s.dispatch)
	router.MethodNotAllowed = http.HandlerFunc(s.dispatch)
	router.PanicHandler = s.panicked
	dispatch := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) { s.dispatch(w, r) }
	byMethod := map[string][][]string{}
	for _, op := range s.ops {
		byMethod[op.Method] = append(byMethod[op.Method], strings.Split(op.Path[1:], "/"))
	}
	for _, method := range slices.Sorted(maps.Keys(byMethod)) {
		registered := map[string]bool{}
		for _, segs := range collapse(byMethod[method]) {
			key := Prefix + routerPath("/"+strings.Join(segs, "/"))
			if !registered[key] {
				registered[key] = true
				router.Handle(method, key, dispatch)
			}
		}
	}
	s.tree, s.router = root, router
}

// collapse turns, position by position, a static segment into the
// wildcard another template with the same prefix has there.
func collapse(templates [][]string) [][]string {
	out := make([][]string, len(templates))
	for i, t := range templates {
		out[i] = slices.Clone(t)
	}
	for pos := 0; ; pos++ {
		wild := map[string]string{} // prefix -> wildcard segment at pos
		longer := false
		for _, t := range out {
			if len(t) > pos {
				longer = true
				if strings.HasPrefix(t[pos], "{") {
					wild[strings.Join(t[:pos], "/")] = t[pos]
				}
			}
		}
		if !longer {
			return out
		}
		for _, t := range out {
			if len(t) > pos {
				if w, ok := wild[strings.Join(t[:pos], "/")]; ok {
					t[pos] = w
				}
			}
		}
	}
}

// routerPath turns "/a/{id}" into httprouter's "/a/:id".
func routerPath(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = ":" + p[1:len(p)-1]
		}
	}
	return strings.Join(parts, "/")
}

// dispatch answers every request: the operation of the resource and method,
// else 405 with the methods that serve the resource, else 404.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	n, vals := s.tree.resolve(r.URL.Path)
	if n == nil {
		w.Header().Del("Allow")
		s.notFound(w, r)
		return
	}
	op := n.ops[r.Method]
	if op == nil {
		allow := strings.Join(n.allow(), ", ")
		w.Header().Set("Allow", allow)
		s.writeError(w, http.StatusMethodNotAllowed, envelope.CodeProtocol, KeyMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow))
		return
	}
	w.Header().Del("Allow")
	for k, v := range vals {
		r.SetPathValue(k, v)
	}
	if op.serve != nil {
		op.serve(w, r)
		return
	}
	s.serve(w, r, op)
}

// serve runs an authenticated operation.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, op *Operation) {
	p, err := s.authenticate(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	if !op.AnyQuery {
		if err := checkQuery(r, op.Params); err != nil {
			s.WriteError(w, r, err)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	data, err := op.Endpoint(r, p)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	envelope.Write(w, http.StatusOK, envelope.OK(data, s.cfg.Now()))
}

var indexed = regexp.MustCompile(`\[[0-9]+\]`)

// checkQuery answers 400 for a malformed query string, a parameter the
// operation does not declare, one given twice, or a required one missing.
func checkQuery(r *http.Request, params []Param) error {
	v, err := query(r)
	if err != nil {
		return err
	}
	declared := map[string]Param{}
	for _, p := range params {
		if p.In == InQuery {
			declared[p.Name] = p
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v)) {
		if name == "" {
			return deskkit.Invalid("query string", "must not hold a parameter without a name")
		}
		if _, ok := declared[name]; !ok {
			if _, ok := declared[indexed.ReplaceAllString(name, "[n]")]; !ok {
				return deskkit.Invalid(name, "is not a parameter of this operation")
			}
		}
		if len(v[name]) > 1 {
			return deskkit.Invalid(name, "must be given once")
		}
	}
	for _, p := range params {
		if p.In == InQuery && p.Required && !strings.Contains(p.Name, "[n]") {
			if vals := v[p.Name]; len(vals) == 0 || vals[0] == "" {
				return deskkit.Invalid(p.Name, "is required")
			}
		}
	}
	return nil
}

// query reads r's query string strictly: a malformed one is an input error.
func query(r *http.Request) (url.Values, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, deskkit.Invalid("query string", "must be well-formed URL encoding")
	}
	return v, nil
}
