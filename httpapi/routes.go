package httpapi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/envelope"
)

// Route is a method and a path template as the OpenAPI document writes it
// ("/api/v1/task/trash/{id}").
type Route struct {
	Method string
	Path   string
}

// Routes lists deskkit's own routes, in the OpenAPI document's path syntax;
// routes added with Handle are not among them.
func (s *Server) Routes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Route
	for _, op := range s.ops {
		if !op.host {
			out = append(out, Route{op.method, Prefix + op.path})
		}
	}
	return out
}

// HostRoutes lists the routes added with Handle, in the order
// they were added, as Routes lists deskkit's own: with both, a host's test
// can go through every route it serves, and fail when one has no case.
func (s *Server) HostRoutes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Route
	for _, op := range s.ops {
		if op.host {
			out = append(out, Route{op.method, Prefix + op.path})
		}
	}
	return out
}

// Handle mounts a host endpoint at Prefix+path, a template whose path
// parameters are written {name} ("/demo/task/{id}") and read with
// r.PathValue("id"), with deskkit's authentication, body limit, deadline,
// envelope and error table. query names the query parameters it takes;
// any other is answered 400, as on deskkit's own routes. The reference
// server mounts its demo routes this way. Handle may be called while the
// server serves: it builds a new router from all the routes and swaps it
// in whole, so requests already routed finish on the routes they found,
// and the next ones see the new route. A method and template mounted
// twice, or a template httprouter cannot hold, panics, and mounts
// nothing. Host routes are not in the OpenAPI document, which describes
// deskkit's own operations.
//
// The router is github.com/julienschmidt/httprouter. httprouter v1.3.0
// panics when a static segment and a wildcard share a position in one
// method's tree (PATCH /task/trash/back beside PATCH
// /task/trash/{id}/back); there, and only there, the wildcard is
// registered and its handler picks the operation whose template the path
// matches.
func (s *Server) Handle(method, path string, fn Endpoint, query ...string) {
	var params []param
	for _, name := range query {
		params = append(params, param{name: name, in: "query"})
	}
	for _, name := range wildcards(path) {
		params = append(params, param{name: name, in: "path", required: true})
	}
	s.mount(operation{method: method, path: path, params: params, fn: fn})
}

// mount adds host operations: it builds a new router from all the
// operations and swaps it in whole (an atomic pointer), so that it is
// safe while the server serves. Operations that panic add nothing.
func (s *Server) mount(ops ...operation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.ops)
	defer func() {
		if v := recover(); v != nil {
			s.ops = s.ops[:n]
			panic(v)
		}
	}()
	for _, op := range ops {
		op.host = true
		s.add(op)
	}
	s.routing.Store(s.build())
}

func (s *Server) add(op operation) {
	if err := op.check(); err != nil {
		panic("httpapi: " + err.Error())
	}
	for _, o := range s.ops {
		if o.method == op.method && o.path == op.path {
			panic(fmt.Sprintf("httpapi: %s %s mounted twice", op.method, op.path))
		}
	}
	op.route = Prefix + op.path
	s.ops = append(s.ops, &op)
}

var wildcardName = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// check validates the template and that its path parameters are declared.
func (op *operation) check() error {
	if op.method == "" || op.method == http.MethodHead || op.method == http.MethodOptions {
		return fmt.Errorf("%s %s: method must be GET, POST, PUT, PATCH or DELETE", op.method, op.path)
	}
	if op.fn == nil && op.serve == nil {
		return fmt.Errorf("%s %s: no endpoint", op.method, op.path)
	}
	if !strings.HasPrefix(op.path, "/") {
		return fmt.Errorf("%s %s: path must start with /", op.method, op.path)
	}
	for _, seg := range strings.Split(op.path[1:], "/") {
		// Static segments are compared with the escaped request path, and a
		// ':' or '*' would be a wildcard to httprouter.
		wild := wildcardName.MatchString(seg)
		if seg == "" || seg == "." || seg == ".." || (strings.ContainsAny(seg, "{}") && !wild) ||
			(!wild && (url.PathEscape(seg) != seg || strings.ContainsAny(seg, ":*"))) {
			return fmt.Errorf("%s %s: bad segment %q", op.method, op.path, seg)
		}
	}
	declared := map[string]bool{}
	for _, p := range op.params {
		if p.in == "path" {
			declared[p.name] = true
		}
	}
	wild := wildcards(op.path)
	for _, name := range wild {
		if !declared[name] {
			return fmt.Errorf("%s %s: path parameter %s is not declared", op.method, op.path, name)
		}
	}
	if len(declared) != len(wild) {
		return fmt.Errorf("%s %s: declares path parameters its template lacks", op.method, op.path)
	}
	return nil
}

// routing is what build derives from the operation list: the router, in
// which each operation is registered with its own handler, and what the
// router cannot answer on its own (Allow, the shadowing of a wildcard by a
// static sibling).
type routing struct {
	router *httprouter.Router
	routes []*route // every operation, in mounting order
	// statics holds "prefix/segment" for each static segment of a
	// template, its prefix written with * for wildcards: a request segment
	// equal to one of them names that static resource, never a wildcard
	// beside it, whatever the method (DELETE /task/trash/search is 405,
	// not a clear of entry "search").
	statics map[string]bool
}

// route is an operation with its template split into segments.
type route struct {
	op   *operation
	segs []string // the template's segments after the leading /
}

// build derives the routing from s.ops.
//
// httprouter v1.3.0 panics when a static segment and a wildcard share a
// position in one method's tree (PATCH /task/trash/back beside PATCH
// /task/trash/{id}/back). There, and only there, the static segment is
// registered as the wildcard ("/task/trash/:id" stands for
// /task/trash/back), and that one registration picks, among the operations
// it stands for, the one whose template the path matches (pick).
func (s *Server) build() *routing {
	rt := &routing{router: httprouter.New(), statics: map[string]bool{}}
	// Lookup is all that is used of the router: it never answers, so never
	// redirects; the switches say so all the same.
	rt.router.RedirectTrailingSlash = false
	rt.router.RedirectFixedPath = false
	rt.router.HandleOPTIONS = false
	rt.router.HandleMethodNotAllowed = false
	byMethod := map[string][]*route{}
	for _, op := range s.ops {
		r := &route{op: op, segs: strings.Split(op.path[1:], "/")}
		rt.routes = append(rt.routes, r)
		byMethod[op.method] = append(byMethod[op.method], r)
		for i, seg := range r.segs {
			if !isWildcard(seg) {
				rt.statics[shape(r.segs[:i], seg)] = true
			}
		}
	}
	for _, method := range slices.Sorted(maps.Keys(byMethod)) {
		routes := byMethod[method]
		templates := make([][]string, len(routes))
		for i, r := range routes {
			templates[i] = r.segs
		}
		var keys []string
		shared := map[string][]*route{}
		for i, segs := range collapse(templates) {
			key := Prefix + routerPath("/"+strings.Join(segs, "/"))
			if shared[key] == nil {
				keys = append(keys, key)
			}
			shared[key] = append(shared[key], routes[i])
		}
		for _, key := range keys {
			rt.router.Handle(method, key, s.pick(rt, shared[key]))
		}
	}
	return rt
}

// pick is the handler of one registration: the operation, or the
// operations whose static segments it stands in for, that match the path.
func (s *Server) pick(rt *routing, routes []*route) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		segs := pathSegments(r)
		for _, route := range routes {
			if vals, ok := rt.match(route, segs); ok {
				s.serveOp(w, r, route.op, vals)
				return
			}
		}
		s.unrouted(w, r, rt, segs)
	}
}

// match reports whether the path segments (after Prefix) name route's
// template, and the values of its wildcards.
func (rt *routing) match(route *route, segs []string) (map[string]string, bool) {
	if len(segs) != len(route.segs) {
		return nil, false
	}
	var vals map[string]string
	for i, seg := range route.segs {
		if !isWildcard(seg) {
			if seg != segs[i] {
				return nil, false
			}
			continue
		}
		if rt.statics[shape(route.segs[:i], segs[i])] {
			return nil, false
		}
		if vals == nil {
			vals = map[string]string{}
		}
		vals[seg[1:len(seg)-1]] = segs[i]
	}
	return vals, true
}

// unrouted answers a path no operation of the method serves: 405 with the
// methods whose operations do (in a fixed order; HEAD is not among them, no
// route serves it), else 404.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request, rt *routing, segs []string) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		for _, route := range rt.routes {
			if _, ok := rt.match(route, segs); ok && route.op.method == m {
				allow = append(allow, m)
				break
			}
		}
	}
	if len(allow) == 0 {
		s.notFound(w, r)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	s.writeError(w, r, http.StatusMethodNotAllowed, envelope.CodeProtocol, KeyMethodNotAllowed,
		deskkit.Textf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.EscapedPath(), strings.Join(allow, ", ")))
}

// pathSegments splits r's escaped path (as the client wrote it) after
// Prefix; nil if the path is not under Prefix or a segment names nothing:
// one that is empty, "." or "..", also percent-encoded, one that holds an
// encoded slash (%2F), or one that is not valid percent-encoding. Routing
// on the escaped path keeps /api/v1/task%2Ftrash%2F10 from being the
// /api/v1/task/trash/10 that a proxy or a firewall rule on the path did not
// see; no path is cleaned, and nothing redirects.
func pathSegments(r *http.Request) []string {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), Prefix+"/")
	if !ok {
		return nil
	}
	segs := strings.Split(rest, "/")
	for _, seg := range segs {
		v, err := url.PathUnescape(seg)
		if err != nil || v == "" || v == "." || v == ".." || strings.Contains(v, "/") {
			return nil
		}
	}
	return segs
}

func isWildcard(seg string) bool { return strings.HasPrefix(seg, "{") }

// shape is "prefix/seg" with the prefix's wildcards written *.
func shape(prefix []string, seg string) string {
	var b strings.Builder
	for _, p := range prefix {
		if isWildcard(p) {
			p = "*"
		}
		b.WriteString(p)
		b.WriteByte('/')
	}
	b.WriteString(seg)
	return b.String()
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
				if isWildcard(t[pos]) {
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

// serveRoute answers one request: the handler httprouter finds for the method
// and path, else 405 or 404 from the operation lists.
func (s *Server) serveRoute(w http.ResponseWriter, r *http.Request, rt *routing) {
	segs := pathSegments(r)
	if segs == nil {
		s.notFound(w, r)
		return
	}
	if h, ps, _ := rt.router.Lookup(r.Method, r.URL.EscapedPath()); h != nil {
		h(w, r, ps)
		return
	}
	s.unrouted(w, r, rt, segs)
}

// serveOp runs op, within Config.RequestTimeout, with its path values
// (escaped, as matched).
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, op *operation, vals map[string]string) {
	routed(w, op.route)
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	r = r.WithContext(ctx)
	for k, v := range vals {
		v, _ = url.PathUnescape(v) // pathSegments checked it
		r.SetPathValue(k, v)
	}
	if op.serve != nil {
		op.serve(w, r)
		return
	}
	s.serve(w, r, op, vals)
}

// serve runs an authenticated operation.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, op *operation, vals map[string]string) {
	p, err := s.authenticate(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	if r, err = s.localize(r, p); err != nil {
		s.WriteError(w, r, err)
		return
	}
	if err := checkPath(vals, op.params); err != nil {
		s.WriteError(w, r, err)
		return
	}
	if err := checkQuery(r, op.params); err != nil {
		s.WriteError(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	data, err := op.fn(r, p)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	s.outages.succeeded(r)
	env := envelope.OK(data, s.cfg.Now())
	l := s.localizer(r.Context())
	env.Msg = l.Sprintf(env.Msg)
	w.Header().Set("Content-Language", l.Language().String())
	envelope.Write(w, http.StatusOK, env)
}

// checkSpelling answers 400 for an integer parameter written other than
// canonically (+5, 05, %35 in a path; see ParseID): every id has one
// spelling, so no rule on the path or the query (a proxy's, a firewall's, a
// log search) can be sidestepped by writing it another way. What is not an
// integer at all is left to the endpoint's own rule.
func checkSpelling(p param, raw, value string) error {
	if !p.integer || canonicalInt.MatchString(raw) {
		return nil
	}
	if _, err := strconv.ParseInt(value, 10, 64); err != nil {
		return nil
	}
	return errMisspelt(p.name)
}

// checkPath checks the spelling of the path parameters, from their escaped
// values.
func checkPath(vals map[string]string, params []param) error {
	for _, p := range params {
		if raw, ok := vals[p.name]; ok && p.in == "path" {
			value, _ := url.PathUnescape(raw)
			if err := checkSpelling(p, raw, value); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexed finds the index of a parameter of a family, such as the 1 of
// filters[1].key.
var indexed = regexp.MustCompile(`\[[0-9]+\]`)

// checkQuery answers 400 for a malformed query string, a parameter the
// operation does not declare, one given twice, or a required one missing.
// A parameter of a declared family (filters[7].key beside filters[0].key)
// is left to the operation's decoder, which names the index it refuses.
func checkQuery(r *http.Request, params []param) error {
	v, err := query(r)
	if err != nil {
		return err
	}
	declared := map[string]param{}
	families := map[string]bool{}
	for _, p := range params {
		if p.in == "query" {
			declared[p.name] = p
			families[indexed.ReplaceAllString(p.name, "[n]")] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v)) {
		if name == "" {
			return deskkit.Invalid("query string", "must not hold a parameter without a name")
		}
		p, ok := declared[name]
		if !ok && !families[indexed.ReplaceAllString(name, "[n]")] {
			return deskkit.Invalid(name, "is not a parameter of this operation")
		}
		if len(v[name]) > 1 {
			return deskkit.Invalid(name, "must be given once")
		}
		if ok {
			if err := checkSpelling(p, v[name][0], v[name][0]); err != nil {
				return err
			}
		}
	}
	for _, p := range params {
		if p.in == "query" && p.required {
			if vals := v[p.name]; len(vals) == 0 || vals[0] == "" {
				return deskkit.Invalid(p.name, "is required")
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
