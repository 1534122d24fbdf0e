package httpapi

import (
	"context"
	"errors"
	"net/url"
	"os"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// FuzzSearchQuery feeds raw query strings through parseSearchQuery and, when they
// parse, through a real search on SQLite and on PostgreSQL. Whatever the
// input, the only errors allowed are input errors naming a field: anything
// else would reach a client as a 500 (a date SQLite stores but PostgreSQL
// rejects did, fault 6). PostgreSQL comes from dbtest; where there is none,
// only SQLite runs, unless DESKKIT_REQUIRE_POSTGRES=1 makes that a failure.
//
//	go test ./httpapi -run '^$' -fuzz FuzzSearchQuery -fuzztime 60s
func FuzzSearchQuery(f *testing.F) {
	seeds := []string{
		"targetType=TASK",
		"targetType=TASK_SPRINT&projectId=1&pageNo=2&pageSize=50&orderBy=targetName&orderSort=ASC&infoScope=DETAIL",
		"targetType=TASK&targetName=100%25_x&deletedDate=2026-11-01+09:30:00",
		"targetType=TASK&filters[0].key=id&filters[0].op=IN&filters[0].value=[1,2,3]",
		"targetType=TASK&filters[2].key=sprintId&filters[2].op=IS_NULL",
		"targetType=TASK&filters[1].key=targetName&filters[1].op=NOT_MATCH_END&filters[1].value=%5C%25",
		"targetType=TASK&filters[0].key=deletedDate&filters[0].op=GREATER_THAN&filters[0].value=2026-11-01T00:00:00Z",
		"targetType=TASK&filters[3].key=id",
		"targetType=TASK&pageNo=999999999999999999999",
		"targetType=TASK&filters[0].key=id&filters[0].op=IN&filters[0].value=9223372036854775808",
		"pageSize=0&orderBy=;drop",
		// Year 0 in UTC: PostgreSQL rejected it with a 500 (fault 6).
		"targetType=TASK&deletedDate=0001-01-01T00:00:00%2B01:00",
		"targetType=TASK&filters[0].key=deletedDate&filters[0].op=LESS_THAN&filters[0].value=0001-01-01T00:00:00%2B01:00",
		"targetType=TASK&filters[0].key=deletedDate&filters[0].op=IN&filters[0].value=9999-12-31T23:59:59-01:00",
		// A second spelling of an index once overrode the first (fault 5).
		"targetType=TASK&filters[0].key=id&filters[0].op=EQUAL&filters[0].value=1&filters[00].key=targetName",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	ctx := context.Background()
	p := deskkit.Principal{UserID: 1, TenantID: 1}
	backends := map[dbtest.Backend]*trash.Trash{dbtest.SQLite: fuzzTrash(f, dbtest.OpenSQLite(f), p)}
	if _, err := dbtest.PostgresURL(); err == nil || os.Getenv(dbtest.EnvRequirePostgres) == "1" {
		backends[dbtest.Postgres] = fuzzTrash(f, dbtest.OpenPostgres(f), p)
	} else {
		f.Logf("PostgreSQL not available, fuzzing the search on SQLite only: %v", err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return // the HTTP layer answers 400 before the parser sees it
		}
		q, err := parseSearchQuery(v)
		if err != nil {
			requireInputError(t, raw, err)
			return
		}
		for b, tr := range backends {
			page, err := tr.Search(ctx, p, q)
			if err != nil {
				requireInputError(t, string(b)+": "+raw, err)
				continue
			}
			if page.Total < int64(len(page.List)) || len(page.List) > trash.MaxPageSize {
				t.Fatalf("%s: %q: total %d with %d listed", b, raw, page.Total, len(page.List))
			}
		}
	})
}

// fuzzTrash is a trash over db holding a few awkward names.
func fuzzTrash(f *testing.F, db *bun.DB, p deskkit.Principal) *trash.Trash {
	f.Helper()
	ctx := context.Background()
	if err := trash.Migrate(ctx, db); err != nil {
		f.Fatal(err)
	}
	tr, err := trash.New(db, &recordingRestorer{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	for i, name := range []string{"a%b", "under_score", "Ünïcode", "plain"} {
		if _, err := tr.Add(ctx, db, p, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: int64(i + 1), TargetName: name, CreatedBy: 1}); err != nil {
			f.Fatal(err)
		}
	}
	return tr
}

func requireInputError(t *testing.T, raw string, err error) {
	t.Helper()
	var ie *deskkit.InputError
	if !errors.As(err, &ie) || ie.Field == "" || ie.Rule.String() == "" {
		t.Fatalf("%q: error %v is not an input error naming a field and a rule", raw, err)
	}
}
