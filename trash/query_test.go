package trash_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskkit/deskkit/trash"
)

// Filter values are Go values of the key's kind; a value of another type is
// an input error naming filters[n].value and the type wanted.
func TestFilterValueTypes(t *testing.T) {
	day := time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)
	many := make([]int64, trash.MaxInValues+1)
	tests := []struct {
		f    trash.Filter
		want string // "" for a valid filter
	}{
		{trash.Filter{Key: "id", Op: trash.OpEqual, Value: int64(1)}, ""},
		{trash.Filter{Key: "id", Op: trash.OpEqual, Value: 1}, ""},
		{trash.Filter{Key: "id", Op: trash.OpEqual, Value: "1"}, "filters[0].value must be an int64 for id, not string"},
		{trash.Filter{Key: "id", Op: trash.OpEqual, Value: int32(1)}, "filters[0].value must be an int64 for id, not int32"},
		{trash.Filter{Key: "id", Op: trash.OpEqual}, "filters[0].value is required for EQUAL"},
		{trash.Filter{Key: "deletedDate", Op: trash.OpLessThan, Value: day}, ""},
		{trash.Filter{Key: "deletedDate", Op: trash.OpLessThan, Value: &day}, "filters[0].value must be a time.Time for deletedDate, not *time.Time"},
		{trash.Filter{Key: "deletedDate", Op: trash.OpLessThan, Value: "2026-11-01"}, "filters[0].value must be a time.Time for deletedDate, not string"},
		{trash.Filter{Key: "deletedDate", Op: trash.OpLessThan, Value: time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC)}, "filters[0].value must be a date between the years 1 and 9999 in UTC"},
		{trash.Filter{Key: "deletedDate", Op: trash.OpLessThan, Value: time.Date(1, 1, 1, 0, 30, 0, 0, time.FixedZone("", 3600))}, "filters[0].value must be a date between the years 1 and 9999 in UTC"},
		{trash.Filter{Key: "deletedDate", Op: trash.OpIn, Value: []time.Time{day, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}, "filters[0].value must be a date between the years 1 and 9999 in UTC"},
		{trash.Filter{Key: "targetType", Op: trash.OpEqual, Value: trash.TargetTask}, ""},
		{trash.Filter{Key: "targetType", Op: trash.OpEqual, Value: "TASK_SPRINT"}, ""},
		{trash.Filter{Key: "targetType", Op: trash.OpEqual, Value: "BUG"}, "filters[0].value must be TASK or TASK_SPRINT"},
		{trash.Filter{Key: "targetType", Op: trash.OpEqual, Value: 1}, "filters[0].value must be a trash.TargetType for targetType, not int"},
		{trash.Filter{Key: "targetName", Op: trash.OpEqual, Value: ""}, "filters[0].value must not be empty"},
		{trash.Filter{Key: "targetName", Op: trash.OpEqual, Value: []byte("a")}, "filters[0].value must be a string for targetName, not []uint8"},
		{trash.Filter{Key: "targetName", Op: trash.OpMatch, Value: ""}, "filters[0].value is required for MATCH"},
		{trash.Filter{Key: "targetName", Op: trash.OpMatch, Value: 7}, "filters[0].value must be a string for MATCH, not int"},
		{trash.Filter{Key: "targetName", Op: trash.OpMatch, Value: "a\x00b"}, "filters[0].value " + ruleOf(t, "a\x00b")},
		{trash.Filter{Key: "sprintId", Op: trash.OpIsNull}, ""},
		{trash.Filter{Key: "sprintId", Op: trash.OpIsNull, Value: ""}, "filters[0].value must be empty for IS_NULL"},
		{trash.Filter{Key: "id", Op: trash.OpIn, Value: []int64{1, 2}}, ""},
		{trash.Filter{Key: "id", Op: trash.OpIn, Value: []int{1, 2}}, ""},
		{trash.Filter{Key: "id", Op: trash.OpNotIn, Value: []any{int64(1), 2}}, ""},
		{trash.Filter{Key: "id", Op: trash.OpIn, Value: []any{int64(1), "2"}}, "filters[0].value must be an int64 for id, not string"},
		{trash.Filter{Key: "id", Op: trash.OpIn, Value: int64(1)}, "filters[0].value must be a []int64 for IN on id, not int64"},
		{trash.Filter{Key: "id", Op: trash.OpIn, Value: []string{"1"}}, "filters[0].value must be a []int64 for IN on id, not []string"},
		{trash.Filter{Key: "id", Op: trash.OpIn}, "filters[0].value must list at least one value for IN"},
		{trash.Filter{Key: "id", Op: trash.OpNotIn, Value: []int64{}}, "filters[0].value must list at least one value for NOT_IN"},
		{trash.Filter{Key: "id", Op: trash.OpIn, Value: many}, "filters[0].value must list at most 500 values"},
		{trash.Filter{Key: "id", Op: trash.OpIn, Value: many[:trash.MaxInValues]}, ""},
		{trash.Filter{Key: "targetType", Op: trash.OpIn, Value: []trash.TargetType{trash.TargetTask}}, ""},
		{trash.Filter{Key: "targetType", Op: trash.OpIn, Value: []string{"TASK", "BUG"}}, "filters[0].value must be TASK or TASK_SPRINT"},
		{trash.Filter{Key: "targetName", Op: trash.OpIn, Value: []string{"a", ""}}, "filters[0].value must not be empty"},
		{trash.Filter{Key: "targetName", Op: trash.OpIn, Value: []trash.TargetType{"a"}}, "filters[0].value must be a []string for IN on targetName, not []trash.TargetType"},
		// The key is checked before the op, the op before the value.
		{trash.Filter{Key: "tenantId", Op: "LIKE", Value: "x"}, "filters[0].key must be one of id, projectId, targetId, targetType, targetName, sprintId, createdBy, deletedBy, deletedDate"},
		{trash.Filter{Key: "id", Op: "LIKE", Value: "x"}, "filters[0].op must be one of GREATER_THAN, LESS_THAN, GREATER_THAN_EQUAL, LESS_THAN_EQUAL, EQUAL, NOT_EQUAL, MATCH, MATCH_END, NOT_MATCH, NOT_MATCH_END, IN, NOT_IN, IS_NULL, IS_NOT_NULL"},
		{trash.Filter{Key: "id", Op: trash.OpIsNull, Value: "x"}, "filters[0].op IS_NULL applies only to sprintId, the one key that can be empty"},
		{trash.Filter{Key: "targetType", Op: trash.OpLessThan, Value: "x"}, "filters[0].op LESS_THAN applies only to numbers and dates, not to targetType"},
	}
	for _, tc := range tests {
		err := trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{tc.f}}.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}

// ruleOf is the text rule's message for s, whatever its wording.
func ruleOf(t *testing.T, s string) string {
	t.Helper()
	err := trash.Query{TargetType: trash.TargetTask, TargetName: s}.Validate()
	if err == nil {
		t.Fatalf("targetName %q passed", s)
	}
	return strings.TrimPrefix(err.Error(), "targetName ")
}

func TestKeyKind(t *testing.T) {
	for key, want := range map[string]trash.ValueKind{
		"id": trash.KindNumber, "projectId": trash.KindNumber, "targetId": trash.KindNumber,
		"sprintId": trash.KindNumber, "createdBy": trash.KindNumber, "deletedBy": trash.KindNumber,
		"deletedDate": trash.KindDate, "targetName": trash.KindName, "targetType": trash.KindTargetType,
	} {
		if got, ok := trash.KeyKind(key); !ok || got != want {
			t.Errorf("KeyKind(%q) = %v, %v; want %v", key, got, ok, want)
		}
	}
	if _, ok := trash.KeyKind("tenantId"); ok {
		t.Error("KeyKind knows tenantId")
	}
}
