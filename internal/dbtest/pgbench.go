package dbtest

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/uptrace/bun"
)

var tpsRe = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// Pgbench runs pgbench with args (a script, -c, -T...) against db, a
// database OpenPostgres returned, with its schema as the search_path, and
// returns the transactions per second pgbench reports. It skips tb if
// pgbench is not on PATH. Benchmarks use it to compare deskkit's work
// with the same SQL replayed without deskkit.
func Pgbench(tb testing.TB, db *bun.DB, args ...string) float64 {
	tb.Helper()
	if _, err := exec.LookPath("pgbench"); err != nil {
		tb.Skip("pgbench is not on PATH")
	}
	var schema string
	if err := db.NewRaw("SELECT current_schema()").Scan(context.Background(), &schema); err != nil {
		tb.Fatal(err)
	}
	u, err := url.Parse(RequirePostgres(tb))
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("options", "-csearch_path="+schema)
	u.RawQuery = q.Encode()
	cmd := exec.Command("pgbench", append(append([]string{"-n"}, args...), u.String())...)
	cmd.Env = append(os.Environ(), "PGAPPNAME=deskkit-bench")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := tpsRe.FindSubmatch(out)
	if m == nil {
		tb.Fatalf("no tps in pgbench's output:\n%s", out)
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		tb.Fatal(err)
	}
	return tps
}
