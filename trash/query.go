package trash

import (
	"fmt"
	"strconv"
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
// basic info.
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

// Filter is one further condition of a search. Value is as the client sent
// it: a number, a date (RFC 3339 or "2006-01-02 15:04:05", UTC), a name, a
// target type, or for IN and NOT_IN a comma-separated list of those,
// optionally in brackets. IS_NULL and IS_NOT_NULL take no value.
type Filter struct {
	Key   string
	Op    Op
	Value string
}

// Page is one page of search results and the number of all matches.
type Page struct {
	Total int64   `json:"total" minimum:"0" description:"Number of all matching entries, on every page."`
	List  []Entry `json:"list" description:"The entries of this page; empty past the last page."`
}

// TimeLayout is the second date format searches accept, besides RFC 3339.
// It is read as UTC.
const TimeLayout = "2006-01-02 15:04:05"

// ParseTime reads a date as searches take it: RFC 3339 or TimeLayout (UTC).
// Deletion dates are kept to the second, so fractions of a second are cut.
func ParseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t, err = time.ParseInLocation(TimeLayout, s, time.UTC)
	}
	// The range is checked in UTC, as the date is stored: 0001-01-01T00:00:00+01:00
	// is year 0 in UTC, which PostgreSQL rejects.
	if err != nil {
		return time.Time{}, deskkit.Invalid(field, "must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss")
	}
	if t = t.UTC(); t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, deskkit.Invalid(field, "must be a date between the years 1 and 9999 in UTC")
	}
	return t.Truncate(time.Second), nil
}

// keyKind is what a filter key compares.
type keyKind int

const (
	kindNumber keyKind = iota
	kindNullableNumber
	kindDate
	kindName
	kindType
)

type filterKey struct {
	column string
	kind   keyKind
}

// filterKeys maps every key a filter may name to its column; nothing else
// ever reaches the SQL as an identifier.
var filterKeys = map[string]filterKey{
	"id":          {"t.id", kindNumber},
	"projectId":   {"t.project_id", kindNumber},
	"targetId":    {"t.target_id", kindNumber},
	"targetType":  {"t.target_type", kindType},
	"targetName":  {"t.target_name", kindName},
	"sprintId":    {"t.sprint_id", kindNullableNumber},
	"createdBy":   {"t.created_by", kindNumber},
	"deletedBy":   {"t.deleted_by", kindNumber},
	"deletedDate": {"t.deleted_date", kindDate},
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
		t := q.DeletedDate.UTC().Truncate(time.Second)
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
		if key.kind != kindNullableNumber {
			return cond{}, deskkit.Invalid(opField, "%s applies only to sprintId, the one key that can be empty", f.Op)
		}
		if f.Value != "" {
			return cond{}, deskkit.Invalid(valField, "must be empty for %s", f.Op)
		}
		if f.Op == OpIsNull {
			return cond{key.column + " IS NULL", nil}, nil
		}
		return cond{key.column + " IS NOT NULL", nil}, nil
	case OpMatch, OpMatchEnd, OpNotMatch, OpNotMatchEnd:
		if key.kind != kindName {
			return cond{}, deskkit.Invalid(opField, "%s applies only to targetName", f.Op)
		}
		if f.Value == "" {
			return cond{}, deskkit.Invalid(valField, "is required for %s", f.Op)
		}
		if err := deskkit.CheckText(valField, f.Value, MaxNameLength); err != nil {
			return cond{}, err
		}
		pattern := escapeLike(FoldName(f.Value)) + "%"
		if f.Op == OpMatch || f.Op == OpNotMatch {
			pattern = "%" + pattern
		}
		return likeCond("t.target_name_folded", pattern, f.Op == OpNotMatch || f.Op == OpNotMatchEnd), nil
	case OpIn, OpNotIn:
		list := strings.TrimSpace(f.Value)
		if strings.HasPrefix(list, "[") && strings.HasSuffix(list, "]") {
			list = list[1 : len(list)-1]
		}
		if strings.TrimSpace(list) == "" {
			return cond{}, deskkit.Invalid(valField, "must list at least one value for %s", f.Op)
		}
		parts := strings.Split(list, ",")
		if len(parts) > MaxInValues {
			return cond{}, deskkit.Invalid(valField, "must list at most %d values", MaxInValues)
		}
		vals := make([]any, len(parts))
		for i, s := range parts {
			v, err := key.value(valField, strings.TrimSpace(s))
			if err != nil {
				return cond{}, err
			}
			vals[i] = v
		}
		if f.Op == OpIn {
			return cond{key.column + " IN (?)", []any{bun.List(vals)}}, nil
		}
		return key.negated(key.column+" NOT IN (?)", bun.List(vals)), nil
	case OpEqual, OpNotEqual, OpGreaterThan, OpLessThan, OpGreaterThanEqual, OpLessThanEqual:
		if (key.kind == kindName || key.kind == kindType) && f.Op != OpEqual && f.Op != OpNotEqual {
			return cond{}, deskkit.Invalid(opField, "%s applies only to numbers and dates, not to %s", f.Op, f.Key)
		}
		v, err := key.value(valField, f.Value)
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
	if k.kind == kindNullableNumber {
		sql = "(" + sql + " OR " + k.column + " IS NULL)"
	}
	return cond{sql, []any{arg}}
}

// value parses one filter value for the key's kind.
func (k filterKey) value(field, s string) (any, error) {
	switch k.kind {
	case kindNumber, kindNullableNumber:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, deskkit.Invalid(field, "must be an integer")
		}
		return n, nil
	case kindDate:
		return ParseTime(field, s)
	case kindType:
		if t := TargetType(s); !t.Valid() {
			return nil, deskkit.Invalid(field, "must be TASK or TASK_SPRINT")
		}
		return s, nil
	default:
		if s == "" {
			return nil, deskkit.Invalid(field, "must not be empty")
		}
		if err := deskkit.CheckText(field, s, MaxNameLength); err != nil {
			return nil, err
		}
		return s, nil
	}
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
