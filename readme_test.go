package deskkit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMESaysWhereExamplesAre: the README says where the runnable
// examples are, and it holds: each package it names has Example functions
// in those files, go doc does not print them (the README once promised a
// runnable example in go doc), and the README says how to see and run them.
func TestREADMESaysWhereExamplesAre(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(raw)), " ")
	for _, want := range []string{
		"are in the packages' `example_test.go` files (the SMS senders' in `verify/sms/...`)",
		"pkg.go.dev shows them beside the docs (`go doc` does not print them)",
		"`go test -run Example ./...` runs them",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	// The bullet that sends readers to go doc promises no example.
	if m := regexp.MustCompile("(?s)\n- [^\n]*`go doc -all.*?\n(- |\n)").FindString(string(raw)); m == "" || strings.Contains(m, "example") {
		t.Errorf("README.md's go doc bullet promises an example, which go doc does not print (or is gone):\n%s", m)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to check go doc: %v", err)
	}
	for _, dir := range []string{".", "trash", "verify", "verify/sms/aliyun", "verify/sms/tencent", "verify/texts", "channel", "httpapi", "httpapi/console", "envelope"} {
		examples := 0
		files, _ := filepath.Glob(filepath.Join(dir, "example*_test.go"))
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Example") && fn.Recv == nil {
					examples++
				}
			}
		}
		if examples == 0 {
			t.Errorf("%s: no Example function in %v", dir, files)
		}
		out, err := exec.Command(goCmd, "doc", "-all", "./"+dir).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc -all ./%s: %v\n%s", dir, err, out)
		}
		if strings.Contains(string(out), "func Example") {
			t.Errorf("go doc -all ./%s prints an Example function: the README says it does not", dir)
		}
	}
}
