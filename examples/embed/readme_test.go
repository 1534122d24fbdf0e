package main

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readmePart is a part of main.go that the README shows: the lines between
// "// [README part N]" and "// [README end of part]", in a function body.
var readmePart = regexp.MustCompile(`(?ms)^\t// \[README part (\d+)\]\n(.*?)^\t// \[README end of part\]\n`)

// The README's embedding snippet is this program's code, so it compiles
// and runs (the other tests run it): the first Go block of the README is
// main.go's README parts in the order of their numbers, one tab of
// indentation less, one blank line between them. A change to one that the
// other does not follow fails here.
func TestREADMESnippetIsMainGo(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	parts := map[int]string{}
	for _, m := range readmePart.FindAllSubmatch(src, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		if _, dup := parts[n]; dup {
			t.Fatalf("main.go has two README parts %d", n)
		}
		var b strings.Builder
		for _, line := range strings.SplitAfter(string(m[2]), "\n") {
			b.WriteString(strings.TrimPrefix(line, "\t"))
		}
		parts[n] = b.String()
	}
	if len(parts) == 0 {
		t.Fatal("main.go marks no README part")
	}
	ordered := make([]string, len(parts))
	for n := range ordered {
		p, ok := parts[n+1]
		if !ok {
			t.Fatalf("main.go has README parts %v but no part %d", slices.Sorted(maps.Keys(parts)), n+1)
		}
		ordered[n] = p
	}
	want := strings.Join(ordered, "\n")

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?ms)^```go\n(.*?)^```$").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no ```go block")
	}
	if diff := cmp.Diff(want, string(block[1])); diff != "" {
		t.Errorf("README.md's Go block is not main.go's README parts (-main.go +README.md):\n%s", diff)
	}
}

// TestREADMEMigratesWhatMainRuns: the README's migration loop runs every
// deskkit migration this program runs, so that a host that copies the
// snippet and adds the console has its tables too (a console.Migrate left
// out answered the first portal link with a 500 and an SQL error).
func TestREADMEMigratesWhatMainRuns(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	loop := regexp.MustCompile(`(?m)^for _, migrate := range \[\]func\(context\.Context, \*bun\.DB\) error\{(.*)\} \{$`).FindSubmatch(readme)
	if loop == nil {
		t.Fatal("README.md has no migration loop")
	}
	inLoop := map[string]bool{}
	for _, name := range strings.Split(string(loop[1]), ", ") {
		inLoop[name] = true
	}
	runs := regexp.MustCompile(`\b(trash|verify|channel|console)\.Migrate\b`).FindAllString(string(src), -1)
	if len(runs) == 0 {
		t.Fatal("main.go runs no deskkit migration")
	}
	for _, name := range runs {
		if !inLoop[name] {
			t.Errorf("main.go runs %s, the README's migration loop %q does not", name, loop[1])
		}
	}
}
