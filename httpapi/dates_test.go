package httpapi

import (
	"net/url"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// Fault 6: a date the API accepts but that is year 0 in UTC answered 500 on
// PostgreSQL; it is 400 on both databases, as a parameter and as a filter.
func TestYearZeroDateIs400(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		for _, v := range []url.Values{
			{"targetType": {"TASK"}, "deletedDate": {"0001-01-01T00:00:00+01:00"}},
			{"targetType": {"TASK"}, "filters[0].key": {"deletedDate"}, "filters[0].op": {"LESS_THAN"}, "filters[0].value": {"0001-01-01T00:00:00+01:00"}},
			{"targetType": {"TASK"}, "filters[0].key": {"deletedDate"}, "filters[0].op": {"IN"}, "filters[0].value": {"2026-01-01T00:00:00Z,0001-01-01T00:30:00+01:00"}},
			{"targetType": {"TASK"}, "deletedDate": {"9999-12-31T23:30:00-01:00"}},
		} {
			r := f.do(t, "GET", "/api/v1/task/trash/search?"+v.Encode(), "alice", nil)
			r.expect(t, 400, "E0", KeyValidation)
		}
		// The edges themselves are fine.
		for _, d := range []string{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00-01:00", "9999-12-31T23:59:59Z"} {
			v := url.Values{"targetType": {"TASK"}, "deletedDate": {d}}
			f.do(t, "GET", "/api/v1/task/trash/search?"+v.Encode(), "alice", nil).expect(t, 200, "S", "")
		}
		if f.logs.Len() != 0 {
			t.Errorf("logged: %s", f.logs)
		}
	})
}
