package console

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template/parse"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/i18n/glossary"
)

// templateFuncs are the names of the pages' template functions, for the
// parser.
var templateFuncs = func() map[string]any {
	m := map[string]any{}
	for _, n := range []string{"static", "base", "docs", "hasDocs", "openapi", "product", "logo", "accent", "date", "datePtr", "percent", "deref", "deliveryStatus", "gender", "signing", "t", "tf", "lang", "langs", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "len", "print", "printf", "index", "slice", "html", "js", "urlquery", "call"} {
		m[n] = func() {}
	}
	return m
}()

var (
	tagRE    = regexp.MustCompile(`(?s)<[^>]*>`)
	actionRE = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	wordRE   = regexp.MustCompile(`[A-Za-z]{2,}`)
	// attrRE finds the attributes a person reads (or hears) in markup.
	attrRE = regexp.MustCompile(`\b(aria-label|placeholder|title|alt|data-label)="([^"]*)"`)
	// machineText is text of the templates that is no language: names of
	// files and formats.
	machineText = map[string]bool{"openapi.json": true, "task.*, sprint.*": true}
)

// templateKeys collects the literal keys of t and tf in every template,
// and fails on text or a readable attribute written outside them.
func templateKeys(t *testing.T, keys map[string]string) {
	names, err := fs.Glob(embedded, "templates/*.html")
	if err != nil || len(names) < 10 {
		t.Fatalf("templates: %v, %d", err, len(names))
	}
	for _, n := range names {
		b, err := embedded.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		// The page with every action a mark: what is left between the
		// tags, and in the attributes people read, must be no words.
		page := actionRE.ReplaceAllString(string(b), "§")
		for _, m := range attrRE.FindAllStringSubmatch(page, -1) {
			if wordRE.MatchString(m[2]) && !machineText[m[2]] {
				t.Errorf("%s: %s=%q is not written through t", n, m[1], m[2])
			}
		}
		for _, rest := range strings.Split(tagRE.ReplaceAllString(page, "§"), "§") {
			rest = strings.TrimSpace(rest)
			if wordRE.MatchString(rest) && !machineText[rest] {
				t.Errorf("%s: text %q is not written through t", n, rest)
			}
		}
		trees, err := parse.Parse(n, string(b), "{{", "}}", templateFuncs)
		if err != nil {
			t.Fatal(err)
		}
		for _, tree := range trees {
			var walk func(parse.Node)
			walk = func(node parse.Node) {
				if node == nil {
					return
				}
				switch x := node.(type) {
				case *parse.ListNode:
					if x == nil {
						return
					}
					for _, c := range x.Nodes {
						walk(c)
					}
				case *parse.ActionNode:
					walk(x.Pipe)
				case *parse.PipeNode:
					if x == nil {
						return
					}
					for _, c := range x.Cmds {
						walk(c)
					}
				case *parse.CommandNode:
					if id, ok := x.Args[0].(*parse.IdentifierNode); ok && (id.Ident == "t" || id.Ident == "tf") && len(x.Args) > 1 {
						if s, ok := x.Args[1].(*parse.StringNode); ok {
							keys[s.Text] = n
						}
					}
					for _, a := range x.Args {
						walk(a)
					}
				case *parse.IfNode:
					walk(x.Pipe)
					walk(x.List)
					walk(x.ElseList)
				case *parse.RangeNode:
					walk(x.Pipe)
					walk(x.List)
					walk(x.ElseList)
				case *parse.WithNode:
					walk(x.Pipe)
					walk(x.List)
					walk(x.ElseList)
				case *parse.TemplateNode:
					walk(x.Pipe)
				}
			}
			walk(tree.Root)
		}
	}
}

// goKeys collects the texts of the package's Go code: the literal formats
// of c.tr and of the tr functions handed on, and the texts marked with
// text. A text() of no literal is an error.
func goKeys(t *testing.T, keys map[string]string) {
	fset := token.NewFileSet()
	paths, _ := filepath.Glob("*.go")
	consts := map[string]string{}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i < len(vs.Values) {
							if v, ok := stringLit(vs.Values[i], nil); ok {
								consts[name.Name] = v
							}
						}
					}
				}
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok {
				return true
			}
			i := -1
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := fn.X.(*ast.Ident); ok && x.Name == "c" && fn.Sel.Name == "tr" {
					i, name = 1, "c.tr"
				}
			case *ast.Ident:
				if fn.Name == "tr" || fn.Name == "text" {
					i, name = 0, fn.Name
				}
			}
			if i < 0 || len(call.Args) <= i {
				return true
			}
			pos := fset.Position(call.Args[i].Pos()).String()
			key, ok := stringLit(call.Args[i], consts)
			if !ok {
				if name == "text" {
					t.Errorf("%s: text of no literal: the catalogue cannot have it", pos)
				}
				return true // a text marked where it was written
			}
			keys[key] = pos
			return true
		})
	}
}

func stringLit(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		a, ok1 := stringLit(e.X, consts)
		b, ok2 := stringLit(e.Y, consts)
		return a + b, ok1 && ok2 && e.Op == token.ADD
	case *ast.Ident:
		v, ok := consts[e.Name]
		return v, ok
	}
	return "", false
}

// scriptWords are the scripts' strings with spaces that are no language.
var scriptWords = map[string]bool{"use strict": true, "system-ui, sans-serif": true}

// jsString finds the string literals of a script.
var jsString = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'`)

// TestCatalogueComplete fails when a text of the pages (templates, Go
// code, scripts) lacks its Simplified Chinese translation in
// messages/zh-Hans.json, when the catalogue translates a text no page
// writes, or when a text is written outside the functions that translate.
// The descriptions of deskkit's event types, which the channel form
// shows, are the shared catalogue's (deskkit's TestCatalogueComplete).
func TestCatalogueComplete(t *testing.T) {
	keys := map[string]string{}
	templateKeys(t, keys)
	goKeys(t, keys)
	if len(keys) < 200 {
		t.Fatalf("found only %d texts: the walk is broken", len(keys))
	}
	// The scripts write no words of their own: they read them from the
	// page (data attributes), which the templates translate.
	scripts, _ := fs.Glob(embedded, "static/*.js")
	for _, p := range scripts {
		if strings.Contains(p, ".min.") || strings.Contains(p, "redoc") {
			continue // vendored
		}
		b, _ := embedded.ReadFile(p)
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			for _, lit := range jsString.FindAllString(line, -1) {
				if strings.Contains(lit, " ") && wordRE.MatchString(lit) && !scriptWords[lit[1:len(lit)-1]] {
					t.Errorf("%s:%d: the script writes the words %s: give them to it in a data attribute", p, i+1, lit)
				}
			}
		}
	}
	raw, err := os.ReadFile("messages/zh-Hans.json")
	if err != nil {
		t.Fatal(err)
	}
	var zh map[string]string
	if err := json.Unmarshal(raw, &zh); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for k, pos := range keys {
		if _, ok := zh[k]; !ok {
			missing = append(missing, pos+": "+strconv.Quote(k))
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("zh-Hans lacks %s", m)
	}
	for k := range zh {
		if _, ok := keys[k]; !ok {
			t.Errorf("zh-Hans translates %q, which no page writes: remove it", k)
		}
	}
	if _, err := deskkit.NewMessages(catalogue); err != nil {
		t.Errorf("the catalogue does not load: %v", err)
	}
	// DESKKIT_DUMP_KEYS=keys.json writes every text with its translation
	// ("" when missing), for a translator.
	if out := os.Getenv("DESKKIT_DUMP_KEYS"); out != "" {
		m := map[string]string{}
		for k := range keys {
			m[k] = zh[k]
		}
		b, _ := json.MarshalIndent(m, "", "  ")
		_ = os.WriteFile(out, b, 0o644)
	}
}

// TestCatalogueKeepsGlossary fails when a translation of the console's
// catalogue uses a term the glossary rules out (条目 for 记录, 永久清除 for
// 彻底删除, 对端已接收 for 测试通过, ...), shows a machine word such as
// PENDING without its reading, or writes half-width punctuation in Chinese
// text.
func TestCatalogueKeepsGlossary(t *testing.T) {
	faults, err := glossary.CheckCatalogueFile("messages/zh-Hans.json", 300)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range faults {
		t.Error(f)
	}
}

// asciiPunct is the punctuation a template must not write beside a
// translated text: Chinese writes its own (，。：；！？), which the
// catalogue's translation carries.
var asciiPunct = regexp.MustCompile(`^[.,:;!?]|[.,:;!?(]$`)

// punctuationFaults are the texts of the template src that write ASCII
// punctuation right after or right before a translated text, and how many
// texts stand beside a translated one.
func punctuationFaults(t *testing.T, name, src string) (faults []string, beside int) {
	t.Helper()
	trees, err := parse.Parse(name, src, "{{", "}}", templateFuncs)
	if err != nil {
		t.Fatal(err)
	}
	translated := func(n parse.Node) bool {
		a, ok := n.(*parse.ActionNode)
		if !ok || a.Pipe == nil || len(a.Pipe.Cmds) == 0 || len(a.Pipe.Cmds[0].Args) == 0 {
			return false
		}
		id, ok := a.Pipe.Cmds[0].Args[0].(*parse.IdentifierNode)
		return ok && (id.Ident == "t" || id.Ident == "tf")
	}
	var walk func(parse.Node)
	walk = func(node parse.Node) {
		switch x := node.(type) {
		case *parse.ListNode:
			if x == nil {
				return
			}
			for i, c := range x.Nodes {
				walk(c)
				text, ok := c.(*parse.TextNode)
				if !ok {
					continue
				}
				s := strings.TrimSpace(string(text.Text))
				prev := i > 0 && translated(x.Nodes[i-1])
				next := i+1 < len(x.Nodes) && translated(x.Nodes[i+1])
				if prev || next {
					beside++
				}
				if s != "" && (prev && asciiPunct.MatchString(s[:1]) || next && asciiPunct.MatchString(s[len(s)-1:])) {
					faults = append(faults, string(text.Text))
				}
			}
		case *parse.IfNode:
			walk(x.List)
			walk(x.ElseList)
		case *parse.RangeNode:
			walk(x.List)
			walk(x.ElseList)
		case *parse.WithNode:
			walk(x.List)
			walk(x.ElseList)
		}
	}
	for _, tree := range trees {
		walk(tree.Root)
	}
	return faults, beside
}

// TestTemplatesPunctuateThroughCatalogue fails on a template that writes
// ASCII punctuation right after a translated text ({{t "Saved"}}.) or
// right before one (: {{t "a code"}}): the punctuation belongs in the
// catalogue's text, so that Chinese gets its own.
func TestTemplatesPunctuateThroughCatalogue(t *testing.T) {
	for src, want := range map[string]int{
		`<p>{{t "Saved"}}.</p>`:                          1,
		`<p><b>x</b>, {{t "and more"}}</p>`:              1,
		`<p>{{if .A}}{{t "Saved"}}!{{end}}</p>`:          1,
		`<p>{{t "Saved"}}{{t "."}} {{t "Next"}}</p>`:     0,
		`<p>{{.Name}}, {{.Other}}. <b>{{t "x"}}</b></p>`: 0,
	} {
		if faults, _ := punctuationFaults(t, "case", src); len(faults) != want {
			t.Errorf("%s: faults %q, want %d", src, faults, want)
		}
	}
	names, err := fs.Glob(embedded, "templates/*.html")
	if err != nil || len(names) < 10 {
		t.Fatalf("templates: %v, %d", err, len(names))
	}
	checked := 0
	for _, n := range names {
		b, err := embedded.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		faults, beside := punctuationFaults(t, n, string(b))
		checked += beside
		for _, f := range faults {
			t.Errorf("%s: %q beside a translated text writes ASCII punctuation: put it in the catalogue's text", n, f)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d texts beside a translated one: the walk is broken", checked)
	}
}
