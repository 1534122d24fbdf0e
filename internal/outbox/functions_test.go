package outbox

import (
	"flag"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var writeFunctions = flag.String("write-functions", "", "write the migration that defines the claim's and flush's functions to migrations/`NAME` (20261208000001_claim_functions.tx.up.sql), from this build's statements")

// functionsMigration is the whole text of a migration that defines
// deskkit_outbox_claim and deskkit_outbox_record from this build's
// statements.
func functionsMigration() string {
	return "{{- if .Postgres}}\n" + functionsSQL() +
		"{{- else}}\n-- SQLite runs the claim's and the flush's statements themselves: nothing to define.\nSELECT 1;\n{{- end}}\n"
}

// TestFunctionsMigrated checks that the latest migration defining the
// claim's and the flush's functions holds this build's claimPostgres and
// recordPostgres: a change to either, or to flowUpsert, must come with a
// new migration, or PostgreSQL would go on running the old statements.
// go test -run TestFunctionsMigrated -write-functions NAME writes one.
func TestFunctionsMigrated(t *testing.T) {
	want := functionsMigration()
	if *writeFunctions != "" {
		if err := os.WriteFile(path.Join("migrations", *writeFunctions), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote migrations/%s", *writeFunctions)
		return
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	latest, got := "", ""
	for _, name := range names {
		b, err := fs.ReadFile(migrationFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "FUNCTION deskkit_outbox_claim(") {
			latest, got = name, string(b)
		}
	}
	if latest == "" {
		t.Fatal("no migration defines deskkit_outbox_claim")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s does not define the functions from this build's statements; write a new migration with\n\tgo test ./internal/outbox -run TestFunctionsMigrated -write-functions <next version>_claim_functions.tx.up.sql\n(-want +got):\n%s", latest, diff)
	}
}
