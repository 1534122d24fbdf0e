package httpapi

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// FuzzSearchQuery feeds raw query strings through parseSearchQuery and, when they
// parse, through a real search on SQLite. Whatever the input, the only
// errors allowed are input errors naming a field: anything else would reach
// a client as a 500.
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
	}
	for _, s := range seeds {
		f.Add(s)
	}
	db := dbtest.OpenSQLite(f)
	ctx := context.Background()
	if err := trash.Migrate(ctx, db); err != nil {
		f.Fatal(err)
	}
	tr, err := trash.New(db, &recordingRestorer{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	p := deskkit.Principal{UserID: 1, TenantID: 1}
	for i, name := range []string{"a%b", "under_score", "Ünïcode", "plain"} {
		if _, err := tr.Add(ctx, db, p, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: int64(i + 1), TargetName: name, CreatedBy: 1}); err != nil {
			f.Fatal(err)
		}
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
		page, err := tr.Search(ctx, p, q)
		if err != nil {
			requireInputError(t, raw, err)
			return
		}
		if page.Total < int64(len(page.List)) || len(page.List) > trash.MaxPageSize {
			t.Fatalf("%q: total %d with %d listed", raw, page.Total, len(page.List))
		}
	})
}

func requireInputError(t *testing.T, raw string, err error) {
	t.Helper()
	var ie *deskkit.InputError
	if !errors.As(err, &ie) || ie.Field == "" || ie.Rule == "" {
		t.Fatalf("%q: error %v is not an input error naming a field and a rule", raw, err)
	}
}
