package deskkit_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deskkit/deskkit/internal/i18n/glossary"
)

// messageCalls are the constructors of messages for people, with the index
// of their format (the message's key).
var messageCalls = map[string]int{"Invalid": 1, "NewError": 2, "NewErrorf": 2, "Textf": 0}

// codeKeys collects the keys of every message the module's code writes,
// each with where it is written: the
// literal formats passed to deskkit's message constructors in every
// non-test .go file, the msg column of httpapi's error table, and the
// envelope's "Success" and "internal server error". A format that is no literal is an error: every
// message must reach the catalogues.
func codeKeys(t *testing.T) map[string][]string {
	t.Helper()
	keys := map[string][]string{
		"Success":               {"the envelope of every success"},
		"internal server error": {"httpapi's answer to an unexpected error"},
	}
	fset := token.NewFileSet()
	type file struct {
		path string
		f    *ast.File
	}
	var files []file
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, file{path, f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The package-level string constants of each directory, which a
	// format may add ("..." + AllowHint).
	consts := map[string]string{}
	for _, f := range files {
		for _, d := range f.f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := literal(vs.Values[i], nil, ""); ok {
							consts[filepath.Dir(f.path)+"."+name.Name] = v
						}
					}
				}
			}
		}
	}
	for _, file := range files {
		path, f := file.path, file.f
		dir := filepath.Dir(path)
		root := f.Name.Name == "deskkit" && dir == "."
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.Ident:
					if root {
						name = fn.Name
					}
				case *ast.SelectorExpr:
					if x, ok := fn.X.(*ast.Ident); ok && x.Name == "deskkit" {
						name = fn.Sel.Name
					}
				}
				i, ok := messageCalls[name]
				if !ok || len(n.Args) <= i {
					return true
				}
				if id, ok := n.Args[i].(*ast.Ident); ok && root && id.Name == "format" {
					return true // the constructors passing their caller's format on
				}
				if c, ok := n.Args[i].(*ast.CallExpr); ok && dir == filepath.Join("httpapi", "console") {
					if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "text" {
						return true // a console text: the console's catalogue has it, its own test checks
					}
				}
				pos := fset.Position(n.Args[i].Pos()).String()
				key, ok := literal(n.Args[i], consts, dir)
				if !ok {
					t.Errorf("%s: the message of %s is no literal: the catalogues cannot have it", pos, name)
					return true
				}
				keys[key] = append(keys[key], pos)
			case *ast.KeyValueExpr:
				// The error table's msg column.
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "msg" && filepath.ToSlash(path) == "httpapi/errors.go" {
					if key, ok := literal(n.Value, consts, dir); ok {
						keys[key] = append(keys[key], fset.Position(n.Value.Pos()).String())
					}
				}
			}
			return true
		})
	}
	return keys
}

// literal evaluates a string literal or a sum of them and of the string
// constants of dir.
func literal(e ast.Expr, consts map[string]string, dir string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok1 := literal(e.X, consts, dir)
		b, ok2 := literal(e.Y, consts, dir)
		return a + b, ok1 && ok2
	case *ast.ParenExpr:
		return literal(e.X, consts, dir)
	case *ast.Ident:
		v, ok := consts[dir+"."+e.Name]
		return v, ok
	}
	return "", false
}

// sharedCatalogue is the Simplified Chinese catalogue of every package
// without one of its own.
const sharedCatalogue = "internal/i18n/messages/zh-Hans.json"

// ownCatalogues are the packages that ship their own Simplified Chinese
// catalogue (a kind of channel: channel/internal/feishu/messages), by
// package directory.
func ownCatalogues(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("channel/internal/*/messages/zh-Hans.json")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		out[filepath.Dir(filepath.Dir(f))] = f
	}
	return out
}

func readCatalogue(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestCatalogueComplete fails when a message of the code lacks its Simplified
// Chinese translation, or a catalogue translates a message that the code it
// serves no longer writes. A message is translated in its package's own
// catalogue where the package has one (a kind of channel), and in the shared
// one otherwise. English is the keys themselves.
func TestCatalogueComplete(t *testing.T) {
	keys := codeKeys(t)
	if len(keys) < 150 {
		t.Fatalf("found only %d message keys: the walk is broken", len(keys))
	}
	own := ownCatalogues(t)
	catalogues := map[string]map[string]string{sharedCatalogue: readCatalogue(t, sharedCatalogue)}
	for _, path := range own {
		catalogues[path] = readCatalogue(t, path)
	}
	// catalogueOf is the catalogue of the code at pos ("dir/file.go:line").
	catalogueOf := func(pos string) string {
		if c, ok := own[filepath.Dir(pos)]; ok {
			return c
		}
		return sharedCatalogue
	}
	used := map[string]map[string]bool{}
	var missing []string
	for k, poss := range keys {
		for _, pos := range poss {
			c := catalogueOf(pos)
			if used[c] == nil {
				used[c] = map[string]bool{}
			}
			used[c][k] = true
			if _, ok := catalogues[c][k]; !ok {
				missing = append(missing, c+" lacks "+pos+": "+strconv.Quote(k))
			}
		}
	}
	slices.Sort(missing)
	for _, m := range slices.Compact(missing) {
		t.Error(m)
	}
	for c, m := range catalogues {
		for k := range m {
			if !used[c][k] {
				t.Errorf("%s translates %q, which no code it serves writes: remove it", c, k)
			}
		}
	}
	zh := catalogues[sharedCatalogue]
	// DESKKIT_DUMP_KEYS=keys.json writes every key with its translation
	// ("" when missing), for a translator.
	if os.Getenv("DESKKIT_DUMP_KEYS") != "" {
		out := map[string]string{}
		for k := range keys {
			out[k] = zh[k]
			for _, c := range catalogues {
				if v, ok := c[k]; ok {
					out[k] = v
				}
			}
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		_ = os.WriteFile(os.Getenv("DESKKIT_DUMP_KEYS"), b, 0o644)
	}
}

// TestOwnCataloguesAgree fails when a package's own catalogue breaks the
// glossary, or translates a message the shared catalogue or another package
// translates otherwise: every catalogue joins one bundle, where the last
// loaded would win.
func TestOwnCataloguesAgree(t *testing.T) {
	own := ownCatalogues(t)
	if len(own) < 4 {
		t.Fatalf("found %d own catalogues (%v), want one for each of the 4 kinds at least", len(own), own)
	}
	seen := map[string]string{}
	for k, v := range readCatalogue(t, sharedCatalogue) {
		seen[k] = v
	}
	for _, path := range own {
		faults, err := glossary.CheckCatalogueFile(path, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range faults {
			t.Errorf("%s: %s", path, f)
		}
		for k, v := range readCatalogue(t, path) {
			if w, ok := seen[k]; ok && w != v {
				t.Errorf("%s translates %q as %q, another catalogue as %q", path, k, v, w)
			}
			seen[k] = v
		}
	}
}
