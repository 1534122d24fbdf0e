package trash

import (
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// Search limits, as the API specifies them.
const (
	DefaultPageSize = 10
	MaxPageSize     = 2000
	MaxPageNo       = 100000
	MaxFilters      = 3   // filters[0] to filters[2]
	MaxInValues     = 500 // values in one IN or NOT_IN filter
	MaxNameLength   = 512 // characters of a target name, and of a search term
)

// OrderField is a field search results can be ordered by.
type OrderField string

// The order fields.
const (
	OrderByID          OrderField = "id"
	OrderByDeletedDate OrderField = "deletedDate"
	OrderByTargetName  OrderField = "targetName"
)

// SortOrder is ASC or DESC.
type SortOrder string

// The sort orders.
const (
	Asc  SortOrder = "ASC"
	Desc SortOrder = "DESC"
)

// InfoScope says how much a search returns of each entry.
type InfoScope string

// The info scopes.
const (
	InfoBasic  InfoScope = "BASIC"  // the entry's own fields
	InfoDetail InfoScope = "DETAIL" // plus names and avatars of creator and deleter
)

// Op is the operator of a search filter.
type Op string

// The filter operators.
const (
	OpGreaterThan      Op = "GREATER_THAN"
	OpLessThan         Op = "LESS_THAN"
	OpGreaterThanEqual Op = "GREATER_THAN_EQUAL"
	OpLessThanEqual    Op = "LESS_THAN_EQUAL"
	OpEqual            Op = "EQUAL"
	OpNotEqual         Op = "NOT_EQUAL"
	OpMatch            Op = "MATCH"         // contains, ignoring case
	OpMatchEnd         Op = "MATCH_END"     // starts with, ignoring case
	OpNotMatch         Op = "NOT_MATCH"     // does not contain, ignoring case
	OpNotMatchEnd      Op = "NOT_MATCH_END" // does not start with, ignoring case
	OpIn               Op = "IN"
	OpNotIn            Op = "NOT_IN"
	OpIsNull           Op = "IS_NULL"
	OpIsNotNull        Op = "IS_NOT_NULL"
)

// Query is a trash search. The zero values of the optional fields mean the
// defaults: every project, no name term, page 1 of 10, newest id first,
// basic info. Query.Validate checks a query without running it; the HTTP
// query syntax (filters[n].key, list spellings, dates as text) is parsed by
// package httpapi, which builds the Query.
//
// Where the API specification leaves a choice open:
//
//   - TargetName and the MATCH family of filter ops are case-insensitive
//     substring (MATCH, NOT_MATCH) or prefix (MATCH_END, NOT_MATCH_END)
//     matches. Case is folded with Go's Unicode rules into a stored column
//     (FoldName), the same on PostgreSQL and SQLite. %, _ and \ match
//     themselves. EQUAL and IN on targetName compare exactly. A term no name
//     can contain (invalid UTF-8, control characters) is an input error.
//   - Deletion dates are kept to the second, and dates in a query are cut
//     to the second in UTC: DeletedDate 2026-11-01 09:30:00.7 finds entries
//     deleted during that second. Years outside 1 to 9999 in UTC are input
//     errors.
//   - Filters (at most MaxFilters) are ANDed. Comparisons (GREATER_THAN,
//     ...) apply to numbers and dates; IS_NULL and IS_NOT_NULL to sprintId,
//     the only key that can be empty; NOT_EQUAL and NOT_IN on sprintId also
//     match entries without a sprint. IN and NOT_IN take 1 to MaxInValues
//     values (see Filter).
//   - Results are ordered by id, deletedDate or targetName (default id,
//     DESC), ties broken by id, so pages never overlap.
//   - Every result carries deletedBy, deletedByName and purgeDate (see
//     Entry); InfoDetail adds the creator's name and both avatars in the
//     same call.
type Query struct {
	TargetType  TargetType // required
	ProjectID   int64      // 0: every project of the tenant
	TargetName  string     // case-insensitive substring of the name; "" matches all
	DeletedDate *time.Time // entries deleted in exactly this second
	PageNo      int        // 1-based; 0 means 1
	PageSize    int        // 0 means DefaultPageSize
	OrderBy     OrderField // "" means OrderByID
	OrderSort   SortOrder  // "" means Desc
	InfoScope   InfoScope  // "" means InfoBasic
	Filters     []Filter   // at most MaxFilters, all of which must hold
}

// Filter is one further condition of a search: the entry's field Key
// compared by Op with Value. Value holds a Go value of the key's kind (see
// KeyKind), never text to be parsed:
//
//   - id, projectId, targetId, sprintId, createdBy, deletedBy (KindNumber):
//     an int64 (an int is taken too)
//   - deletedDate (KindDate): a time.Time in the years 1 to 9999 in UTC,
//     compared to the second (fractions are cut, as deletion dates are kept)
//   - targetName (KindName): a string of 1 to MaxNameLength characters under
//     deskkit.CheckText's rules
//   - targetType (KindTargetType): a TargetType (a string is taken too),
//     TASK or TASK_SPRINT
//
// IN and NOT_IN take a slice of the kind's type ([]int64 or []int,
// []time.Time, []string, []TargetType; or []any holding such values) of 1
// to MaxInValues elements. The MATCH family (targetName only) takes a
// non-empty string; IS_NULL and IS_NOT_NULL (sprintId only) take nil.
//
// Search checks the key first, then the op, then the value, and returns an
// *deskkit.InputError naming filters[n].key, filters[n].op or
// filters[n].value (n the filter's index in Query.Filters); a value of the
// wrong Go type is named with the type wanted, as in `filters[0].value must
// be an int64 for id, not string`.
type Filter struct {
	Key   string
	Op    Op
	Value any
}

// ValueKind is the kind of value a filter key compares, which says the Go
// type Filter.Value holds for it.
type ValueKind int

// The value kinds.
const (
	KindNumber     ValueKind = iota + 1 // int64
	KindDate                            // time.Time
	KindName                            // string
	KindTargetType                      // TargetType
)

// String names the Go type a value of kind k has, as errors name it.
func (k ValueKind) String() string {
	switch k {
	case KindNumber:
		return "int64"
	case KindDate:
		return "time.Time"
	case KindName:
		return "string"
	case KindTargetType:
		return "trash.TargetType"
	}
	return fmt.Sprintf("ValueKind(%d)", int(k))
}

// KeyKind returns the kind of value filter key compares, and false for a
// key filters do not know. A parser of filters from text (such as the HTTP
// API's) asks it how to read a value.
func KeyKind(key string) (ValueKind, bool) {
	k, ok := filterKeys[key]
	return k.kind, ok
}

// Page is one page of search results and the number of all matches.
type Page struct {
	Total int64   `json:"total" minimum:"0" description:"Number of all matching entries, on every page."`
	List  []Entry `json:"list" description:"The entries of this page; empty past the last page."`
}

type filterKey struct {
	column   string
	kind     ValueKind
	nullable bool // the column can be NULL: IS_NULL applies
}

// filterKeys maps every key a filter may name to its column; nothing else
// ever reaches the SQL as an identifier.
var filterKeys = map[string]filterKey{
	"id":          {"t.id", KindNumber, false},
	"projectId":   {"t.project_id", KindNumber, false},
	"targetId":    {"t.target_id", KindNumber, false},
	"targetType":  {"t.target_type", KindTargetType, false},
	"targetName":  {"t.target_name", KindName, false},
	"sprintId":    {"t.sprint_id", KindNumber, true},
	"createdBy":   {"t.created_by", KindNumber, false},
	"deletedBy":   {"t.deleted_by", KindNumber, false},
	"deletedDate": {"t.deleted_date", KindDate, false},
}

var orderColumns = map[OrderField]string{
	OrderByID:          "t.id",
	OrderByDeletedDate: "t.deleted_date",
	OrderByTargetName:  "t.target_name",
}

var comparisons = map[Op]string{
	OpEqual:            "=",
	OpNotEqual:         "<>",
	OpGreaterThan:      ">",
	OpLessThan:         "<",
	OpGreaterThanEqual: ">=",
	OpLessThanEqual:    "<=",
}

// cond is one SQL condition with its bound arguments.
type cond struct {
	sql  string
	args []any
}

// plan is a validated query, ready to run.
type plan struct {
	// counted: the query filters by tenant, type and perhaps project only,
	// so deskkit_trash_counts has its total.
	counted   bool
	projectID int64
	conds     []cond
	order     string
	limit     int
	offset    int
	detailed  bool
}

// Validate checks q as Search does, without running it: it returns nil or
// the *deskkit.InputError Search would return for q, naming the field.
func (q Query) Validate() error {
	_, err := q.compile()
	return err
}

// compile validates q, applies its defaults, and turns it into conditions.
// Every error is an *deskkit.InputError.
func (q Query) compile() (plan, error) {
	var p plan
	if q.TargetType == "" {
		return p, deskkit.Invalid("targetType", "is required")
	}
	if !q.TargetType.Valid() {
		return p, deskkit.Invalid("targetType", "must be TASK or TASK_SPRINT")
	}
	p.conds = append(p.conds, cond{"t.target_type = ?", []any{string(q.TargetType)}})
	p.counted = q.TargetName == "" && q.DeletedDate == nil && len(q.Filters) == 0
	p.projectID = q.ProjectID
	if q.ProjectID < 0 {
		return p, deskkit.Invalid("projectId", "must be a positive integer")
	}
	if q.ProjectID > 0 {
		p.conds = append(p.conds, cond{"t.project_id = ?", []any{q.ProjectID}})
	}
	if q.TargetName != "" {
		// The rule for names, so a term that no stored name can contain
		// (NUL, invalid UTF-8) is a 400, never a database error.
		if err := deskkit.CheckText("targetName", q.TargetName, MaxNameLength); err != nil {
			return p, err
		}
		p.conds = append(p.conds, likeCond("t.target_name_folded", "%"+escapeLike(FoldName(q.TargetName))+"%", false))
	}
	if q.DeletedDate != nil {
		t, err := checkDate("deletedDate", *q.DeletedDate)
		if err != nil {
			return p, err
		}
		p.conds = append(p.conds, cond{"t.deleted_date = ?", []any{t}})
	}

	switch {
	case q.PageNo == 0:
		q.PageNo = 1
	case q.PageNo < 1 || q.PageNo > MaxPageNo:
		return p, deskkit.Invalid("pageNo", "must be an integer between 1 and %d", MaxPageNo)
	}
	switch {
	case q.PageSize == 0:
		q.PageSize = DefaultPageSize
	case q.PageSize < 1 || q.PageSize > MaxPageSize:
		return p, deskkit.Invalid("pageSize", "must be an integer between 1 and %d", MaxPageSize)
	}
	p.limit, p.offset = q.PageSize, (q.PageNo-1)*q.PageSize

	if q.OrderBy == "" {
		q.OrderBy = OrderByID
	}
	col, ok := orderColumns[q.OrderBy]
	if !ok {
		return p, deskkit.Invalid("orderBy", "must be id, deletedDate or targetName")
	}
	switch q.OrderSort {
	case "":
		q.OrderSort = Desc
	case Asc, Desc:
	default:
		return p, deskkit.Invalid("orderSort", "must be ASC or DESC")
	}
	p.order = col + " " + string(q.OrderSort)
	if col != "t.id" {
		p.order += ", t.id " + string(q.OrderSort) // ties in a stable order, so pages do not overlap
	}

	switch q.InfoScope {
	case "", InfoBasic:
	case InfoDetail:
		p.detailed = true
	default:
		return p, deskkit.Invalid("infoScope", "must be BASIC or DETAIL")
	}

	if len(q.Filters) > MaxFilters {
		return p, deskkit.Invalid("filters", "must be at most %d", MaxFilters)
	}
	for i, f := range q.Filters {
		c, err := f.compile(fmt.Sprintf("filters[%d]", i))
		if err != nil {
			return p, err
		}
		p.conds = append(p.conds, c)
	}
	return p, nil
}

func (f Filter) compile(field string) (cond, error) {
	key, ok := filterKeys[f.Key]
	if !ok {
		return cond{}, deskkit.Invalid(field+".key", "must be one of id, projectId, targetId, targetType, targetName, sprintId, createdBy, deletedBy, deletedDate")
	}
	opField, valField := field+".op", field+".value"
	switch f.Op {
	case OpIsNull, OpIsNotNull:
		if !key.nullable {
			return cond{}, deskkit.Invalid(opField, "%s applies only to sprintId, the one key that can be empty", f.Op)
		}
		if f.Value != nil {
			return cond{}, deskkit.Invalid(valField, "must be empty for %s", f.Op)
		}
		if f.Op == OpIsNull {
			return cond{key.column + " IS NULL", nil}, nil
		}
		return cond{key.column + " IS NOT NULL", nil}, nil
	case OpMatch, OpMatchEnd, OpNotMatch, OpNotMatchEnd:
		if key.kind != KindName {
			return cond{}, deskkit.Invalid(opField, "%s applies only to targetName", f.Op)
		}
		if f.Value == nil || f.Value == "" {
			return cond{}, deskkit.Invalid(valField, "is required for %s", f.Op)
		}
		term, ok := f.Value.(string)
		if !ok {
			return cond{}, deskkit.Invalid(valField, "must be a string for %s, not %T", f.Op, f.Value)
		}
		if err := deskkit.CheckText(valField, term, MaxNameLength); err != nil {
			return cond{}, err
		}
		pattern := escapeLike(FoldName(term)) + "%"
		if f.Op == OpMatch || f.Op == OpNotMatch {
			pattern = "%" + pattern
		}
		return likeCond("t.target_name_folded", pattern, f.Op == OpNotMatch || f.Op == OpNotMatchEnd), nil
	case OpIn, OpNotIn:
		vals, err := key.list(valField, f.Key, f.Op, f.Value)
		if err != nil {
			return cond{}, err
		}
		if f.Op == OpIn {
			return cond{key.column + " IN (?)", []any{bun.List(vals)}}, nil
		}
		return key.negated(key.column+" NOT IN (?)", bun.List(vals)), nil
	case OpEqual, OpNotEqual, OpGreaterThan, OpLessThan, OpGreaterThanEqual, OpLessThanEqual:
		if (key.kind == KindName || key.kind == KindTargetType) && f.Op != OpEqual && f.Op != OpNotEqual {
			return cond{}, deskkit.Invalid(opField, "%s applies only to numbers and dates, not to %s", f.Op, f.Key)
		}
		if f.Value == nil {
			return cond{}, deskkit.Invalid(valField, "is required for %s", f.Op)
		}
		v, err := key.value(valField, f.Key, f.Value)
		if err != nil {
			return cond{}, err
		}
		if f.Op == OpNotEqual {
			return key.negated(key.column+" <> ?", v), nil
		}
		return cond{key.column + " " + comparisons[f.Op] + " ?", []any{v}}, nil
	case "":
		return cond{}, deskkit.Invalid(opField, "is required")
	default:
		return cond{}, deskkit.Invalid(opField, "must be one of GREATER_THAN, LESS_THAN, GREATER_THAN_EQUAL, LESS_THAN_EQUAL, EQUAL, NOT_EQUAL, MATCH, MATCH_END, NOT_MATCH, NOT_MATCH_END, IN, NOT_IN, IS_NULL, IS_NOT_NULL")
	}
}

// negated is a NOT_EQUAL or NOT_IN condition. On sprintId it also matches
// entries without a sprint, as a person reading "sprint is not 5" expects
// (SQL alone would drop them).
func (k filterKey) negated(sql string, arg any) cond {
	if k.nullable {
		sql = "(" + sql + " OR " + k.column + " IS NULL)"
	}
	return cond{sql, []any{arg}}
}

// list checks the values of an IN or NOT_IN filter on the key: a slice of
// the key's kind, of 1 to MaxInValues values.
func (k filterKey) list(field, name string, op Op, v any) ([]any, error) {
	var vals []any
	switch l := v.(type) {
	case []any:
		vals = l
	case []int64:
		vals = anys(k.kind == KindNumber, l)
	case []int:
		vals = anys(k.kind == KindNumber, l)
	case []time.Time:
		vals = anys(k.kind == KindDate, l)
	case []string:
		vals = anys(k.kind == KindName || k.kind == KindTargetType, l)
	case []TargetType:
		vals = anys(k.kind == KindTargetType, l)
	}
	if vals == nil && v != nil && !isEmptyList(v) {
		return nil, deskkit.Invalid(field, "must be a []%s for %s on %s, not %T", k.kind, op, name, v)
	}
	if len(vals) == 0 {
		return nil, deskkit.Invalid(field, "must list at least one value for %s", op)
	}
	if len(vals) > MaxInValues {
		return nil, deskkit.Invalid(field, "must list at most %d values", MaxInValues)
	}
	out := make([]any, len(vals))
	for i, e := range vals {
		c, err := k.value(field, name, e)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// anys is l as []any if ok, else nil.
func anys[T any](ok bool, l []T) []any {
	if !ok {
		return nil
	}
	out := make([]any, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// isEmptyList reports whether v is an empty slice of a type list takes.
func isEmptyList(v any) bool {
	switch l := v.(type) {
	case []any:
		return len(l) == 0
	case []int64:
		return len(l) == 0
	case []int:
		return len(l) == 0
	case []time.Time:
		return len(l) == 0
	case []string:
		return len(l) == 0
	case []TargetType:
		return len(l) == 0
	}
	return false
}

// value checks one filter value against the key's kind and returns it as
// it is bound in SQL.
func (k filterKey) value(field, name string, v any) (any, error) {
	switch k.kind {
	case KindNumber:
		switch n := v.(type) {
		case int64:
			return n, nil
		case int:
			return int64(n), nil
		}
	case KindDate:
		if t, ok := v.(time.Time); ok {
			return checkDate(field, t)
		}
	case KindTargetType:
		var t TargetType
		switch x := v.(type) {
		case TargetType:
			t = x
		case string:
			t = TargetType(x)
		default:
			return nil, wrongType(field, k.kind, name, v)
		}
		if !t.Valid() {
			return nil, deskkit.Invalid(field, "must be TASK or TASK_SPRINT")
		}
		return string(t), nil
	case KindName:
		if s, ok := v.(string); ok {
			if s == "" {
				return nil, deskkit.Invalid(field, "must not be empty")
			}
			if err := deskkit.CheckText(field, s, MaxNameLength); err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	return nil, wrongType(field, k.kind, name, v)
}

func wrongType(field string, kind ValueKind, name string, v any) error {
	if kind == KindNumber {
		return deskkit.Invalid(field, "must be an %s for %s, not %T", kind, name, v)
	}
	return deskkit.Invalid(field, "must be a %s for %s, not %T", kind, name, v)
}

// checkDate is t in UTC cut to the second, as deletion dates are kept, or an
// input error on field for a year outside 1 to 9999 in UTC. The range is
// checked in UTC, as the date is stored: 0001-01-01T00:00:00+01:00 is year
// 0 in UTC, which PostgreSQL rejects.
func checkDate(field string, t time.Time) (time.Time, error) {
	if t = t.UTC(); t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, deskkit.Invalid(field, "must be a date between the years 1 and 9999 in UTC")
	}
	return t.Truncate(time.Second), nil
}

func likeCond(column, pattern string, negate bool) cond {
	op := " LIKE "
	if negate {
		op = " NOT LIKE "
	}
	return cond{column + op + `? ESCAPE '\'`, []any{pattern}}
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// escapeLike makes %, _ and \ in a search term match themselves.
func escapeLike(s string) string { return likeEscaper.Replace(s) }
