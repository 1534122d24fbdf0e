package httpapi

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/trash"
)

// The wire syntax of filter values is parsed here, into the Go values trash
// takes: lists with or without brackets, numbers, dates and target types.
func TestParseSearchFilters(t *testing.T) {
	day := time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		key, op, value string
		want           any
	}{
		{"id", "EQUAL", "7", int64(7)},
		{"id", "IN", "[0, 99]", []int64{0, 99}},
		{"targetId", "IN", "[1,3]", []int64{1, 3}},
		{"targetId", "NOT_IN", " 1 , 3 ", []int64{1, 3}},
		{"id", "IN", "[]", []int64{}},
		{"sprintId", "IS_NULL", "", nil},
		{"sprintId", "IS_NOT_NULL", "x", "x"}, // for trash to refuse
		{"deletedDate", "GREATER_THAN", "2026-11-01 09:30:00", day},
		{"deletedDate", "LESS_THAN", "2026-11-01T10:30:00.9+01:00", day},
		{"deletedDate", "IN", "2026-11-01T09:30:00Z,2026-11-01 09:30:00", []time.Time{day, day}},
		{"targetName", "MATCH", "a,b", "a,b"},
		{"targetName", "EQUAL", "[a]", "[a]"},
		{"targetName", "IN", "[beta two, alpha one]", []string{"beta two", "alpha one"}},
		{"targetType", "EQUAL", "TASK_SPRINT", trash.TargetSprint},
		{"targetType", "IN", "TASK,TASK_SPRINT", []trash.TargetType{trash.TargetTask, trash.TargetSprint}},
		{"tenantId", "EQUAL", "1", "1"}, // for trash to refuse
		{"id", "LIKE", "1", "1"},
	}
	for _, tc := range tests {
		v := url.Values{"targetType": {"TASK"}, "filters[0].key": {tc.key}, "filters[0].op": {tc.op}, "filters[0].value": {tc.value}}
		q, err := parseSearchQuery(v)
		if err != nil {
			t.Errorf("%s %s %q: %v", tc.key, tc.op, tc.value, err)
			continue
		}
		if diff := cmp.Diff(tc.want, q.Filters[0].Value); diff != "" {
			t.Errorf("%s %s %q (-want +got):\n%s", tc.key, tc.op, tc.value, diff)
		}
	}
}

// Every bad search answers the message it answered when trash parsed filter
// values: a value that does not parse is named only after every field trash
// checks before it.
func TestParseSearchMessages(t *testing.T) {
	f := func(n int, key, op, value string) url.Values {
		p := "filters[" + string(rune('0'+n)) + "]."
		return url.Values{p + "key": {key}, p + "op": {op}, p + "value": {value}}
	}
	with := func(vs ...url.Values) string {
		all := url.Values{}
		for _, v := range vs {
			for k, x := range v {
				all[k] = x
			}
		}
		return all.Encode()
	}
	task := url.Values{"targetType": {"TASK"}}
	tests := []struct{ query, want string }{
		{with(task, f(0, "id", "EQUAL", "one")), "filters[0].value must be an integer"},
		{with(task, f(0, "id", "EQUAL", " 1")), "filters[0].value must be an integer"},
		{with(task, f(0, "id", "IN", "[]")), "filters[0].value must list at least one value for IN"},
		{with(task, f(0, "id", "NOT_IN", " [ ] ")), "filters[0].value must list at least one value for NOT_IN"},
		{with(task, f(0, "id", "IN", "1,x")), "filters[0].value must be an integer"},
		{with(task, f(0, "id", "IN", "[1,2")), "filters[0].value must be an integer"},
		{with(task, f(0, "id", "IN", strings.Repeat("x,", 500)+"x")), "filters[0].value must list at most 500 values"},
		{with(task, f(0, "deletedDate", "LESS_THAN", "yesterday")), "filters[0].value must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss"},
		{with(task, f(0, "deletedDate", "IN", "2026-01-01T00:00:00Z,0001-01-01T00:30:00+01:00")), "filters[0].value must be a date between the years 1 and 9999 in UTC"},
		{with(task, f(0, "deletedDate", "IN", "0001-01-01T00:30:00+01:00,x")), "filters[0].value must be a date between the years 1 and 9999 in UTC"},
		{with(task, f(0, "targetType", "EQUAL", "BUG")), "filters[0].value must be TASK or TASK_SPRINT"},
		{with(task, f(0, "targetName", "IN", "a,,b")), "filters[0].value must not be empty"},
		{with(task, f(0, "sprintId", "IS_NULL", "3")), "filters[0].value must be empty for IS_NULL"},
		// Fields trash checks first still come first.
		{with(f(0, "id", "EQUAL", "one")), "targetType is required"},
		{with(task, url.Values{"pageSize": {"0"}}, f(0, "id", "EQUAL", "one")), "pageSize must be an integer between 1 and 2000"},
		{with(task, url.Values{"orderBy": {"x"}}, f(0, "id", "EQUAL", "one")), "orderBy must be id, deletedDate or targetName"},
		{with(task, f(0, "id", "MATCH", "one")), "filters[0].op MATCH applies only to targetName"},
		{with(task, f(0, "id", "", "one")), "filters[0].op is required"},
		{with(task, f(0, "id", "EQUAL", "one"), f(1, "tenantId", "EQUAL", "1")), "filters[0].value must be an integer"},
		{with(task, f(0, "tenantId", "EQUAL", "1"), f(1, "id", "EQUAL", "one")), "filters[0].key must be one of id, projectId, targetId, targetType, targetName, sprintId, createdBy, deletedBy, deletedDate"},
		{with(task, f(0, "id", "EQUAL", "1"), f(1, "deletedDate", "EQUAL", "x"), f(2, "id", "IN", "[]")), "filters[1].value must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss"},
		// trash names a filter by its place among those given.
		{with(task, f(1, "id", "EQUAL", "one")), "filters[0].value must be an integer"},
	}
	for _, tc := range tests {
		v, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		q, err := parseSearchQuery(v)
		if err == nil {
			err = q.Validate()
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.query, err, tc.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)
	for _, s := range []string{"2026-11-01 09:30:00", "2026-11-01T09:30:00Z", "2026-11-01T10:30:00+01:00", "2026-11-01T09:30:00.999999999Z"} {
		got, err := ParseTime("deletedDate", s)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, rule := range map[string]string{
		"2026-11-01":                "must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss",
		"2026-11-01 09:30:00Z":      "must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss",
		"0001-01-01T00:00:00+01:00": "must be a date between the years 1 and 9999 in UTC",
		"9999-12-31T23:30:00-01:00": "must be a date between the years 1 and 9999 in UTC",
	} {
		if _, err := ParseTime("since", s); err == nil || err.Error() != "since "+rule {
			t.Errorf("ParseTime(%q) = %v, want %q", s, err, rule)
		}
	}
	for _, s := range []string{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"} {
		if _, err := ParseTime("since", s); err != nil {
			t.Errorf("ParseTime(%q): %v", s, err)
		}
	}
}
