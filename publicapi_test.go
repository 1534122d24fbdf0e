package deskkit_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The public packages show no internal type: every exported identifier of
// every importable package of the module (all but internal/ and examples/),
// its type, fields, methods, parameters and results, and the aliases it
// declares, is walked with go/types, and any type from an /internal/
// package is reported. Exported constants and variables whose value is
// spelled with an internal package (go doc shows the expression) are
// reported too.
func TestNoInternalTypesInPublicAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds export data of the module")
	}
	public := publicPackages(t)
	if len(public) < 6 {
		t.Fatalf("found only %v as public packages", public)
	}
	exports := exportData(t, public)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var found []string
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		w := &apiWalker{seen: map[types.Type]bool{}}
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			w.object(pkg.Name()+"."+name, obj)
		}
		found = append(found, w.found...)
		found = append(found, internalValues(t, path)...)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// publicPackages lists the module's importable packages.
func publicPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p+"/", "/internal/") || strings.Contains(p+"/", "/examples/") {
			continue
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// exportData maps every package the public ones depend on to its
// compiled export data.
func exportData(t *testing.T, pkgs []string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, _ := strings.Cut(sc.Text(), "\t")
		m[path] = file
	}
	return m
}

// apiWalker collects the internal types an exported identifier shows.
type apiWalker struct {
	seen  map[types.Type]bool
	found []string
}

func internalPath(p *types.Package) bool {
	return p != nil && strings.Contains(p.Path()+"/", "/internal/")
}

func (w *apiWalker) object(where string, obj types.Object) {
	switch o := obj.(type) {
	case *types.TypeName:
		if a, ok := o.Type().(*types.Alias); ok {
			w.typ(where+" (alias)", a.Rhs())
			return
		}
		named, ok := o.Type().(*types.Named)
		if !ok {
			w.typ(where, o.Type())
			return
		}
		w.typ(where, named.Underlying())
		for _, recv := range []types.Type{named, types.NewPointer(named)} {
			ms := types.NewMethodSet(recv)
			for i := range ms.Len() {
				m := ms.At(i).Obj()
				if m.Exported() {
					w.typ(where+"."+m.Name(), m.Type())
				}
			}
		}
	default:
		w.typ(where, obj.Type())
	}
}

// typ reports t if it is, or shows, an internal type. A named type of
// another package is not looked into: its own package answers for it.
func (w *apiWalker) typ(where string, t types.Type) {
	if t == nil {
		return
	}
	if a, ok := t.(*types.Alias); ok {
		if internalPath(a.Obj().Pkg()) {
			w.found = append(w.found, fmt.Sprintf("%s shows %s", where, a))
		}
		t = types.Unalias(a)
	}
	if w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if internalPath(t.Obj().Pkg()) {
			w.found = append(w.found, fmt.Sprintf("%s shows %s", where, t))
		}
		for a := range t.TypeArgs().Types() {
			w.typ(where, a)
		}
	case *types.Pointer:
		w.typ(where, t.Elem())
	case *types.Slice:
		w.typ(where, t.Elem())
	case *types.Array:
		w.typ(where, t.Elem())
	case *types.Map:
		w.typ(where, t.Key())
		w.typ(where, t.Elem())
	case *types.Chan:
		w.typ(where, t.Elem())
	case *types.Signature:
		for v := range t.Params().Variables() {
			w.typ(where+" param "+v.Name(), v.Type())
		}
		for v := range t.Results().Variables() {
			w.typ(where+" result", v.Type())
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				w.typ(where+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if m.Exported() {
				w.typ(where+"."+m.Name(), m.Type())
			}
		}
		for e := range t.EmbeddedTypes() {
			w.typ(where+" embeds", e)
		}
	case *types.Union:
		for term := range t.Terms() {
			w.typ(where, term.Type())
		}
	case *types.TypeParam:
		w.typ(where, t.Constraint())
	}
}

// internalValues reports the exported constants and variables of package
// path whose value names an internal package, as in
// "const DefaultTimeout = safehttp.DefaultTimeout": go doc shows it.
func internalValues(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}\t{{join .GoFiles \"\\t\"}}", path).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", path, err)
	}
	fields := strings.Split(strings.TrimSpace(string(out)), "\t")
	dir, files := fields[0], fields[1:]
	var found []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{} // local names of internal imports
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !strings.Contains(p+"/", "/internal/") {
				continue
			}
			local := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			internal[local] = true
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if !slices.ContainsFunc(vs.Names, func(n *ast.Ident) bool { return n.IsExported() }) {
					continue
				}
				for _, v := range vs.Values {
					ast.Inspect(v, func(n ast.Node) bool {
						if sel, ok := n.(*ast.SelectorExpr); ok {
							if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] {
								found = append(found, fmt.Sprintf("%s: %s is %s.%s", fset.Position(vs.Pos()), vs.Names[0].Name, x.Name, sel.Sel.Name))
							}
						}
						return true
					})
				}
			}
		}
	}
	return found
}
