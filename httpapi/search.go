package httpapi

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// parseSearchQuery reads a search from URL query parameters as the HTTP API takes
// them (see the package documentation). Every problem is an
// *deskkit.InputError naming the parameter; unknown parameters are errors
// too, so that a misspelt filter never silently matches everything.
func parseSearchQuery(v url.Values) (trash.Query, error) {
	var q trash.Query
	filters := make([]trash.Filter, trash.MaxFilters)
	seen := make([]bool, trash.MaxFilters)
	// Sorted, so that of several bad parameters the same one is always named.
	for _, name := range slices.Sorted(maps.Keys(v)) {
		vals := v[name]
		if name == "" {
			return trash.Query{}, deskkit.Invalid("query string", "must not hold a parameter without a name")
		}
		if len(vals) != 1 {
			return trash.Query{}, deskkit.Invalid(name, "must be given once")
		}
		val := vals[0]
		var err error
		switch name {
		case "projectId":
			q.ProjectID, err = pathID(name, val)
		case "targetName":
			q.TargetName = val
		case "targetType":
			q.TargetType = trash.TargetType(val)
		case "deletedDate":
			var t time.Time
			t, err = trash.ParseTime(name, val)
			q.DeletedDate = &t
		case "pageNo":
			q.PageNo, err = parseInt(name, val, 1, trash.MaxPageNo)
		case "pageSize":
			q.PageSize, err = parseInt(name, val, 1, trash.MaxPageSize)
		case "orderBy":
			q.OrderBy = trash.OrderField(val)
		case "orderSort":
			q.OrderSort = trash.SortOrder(val)
		case "infoScope":
			q.InfoScope = trash.InfoScope(val)
		default:
			var n int
			var part string
			n, part, err = parseFilterName(name)
			if err != nil {
				break
			}
			seen[n] = true
			switch part {
			case "key":
				filters[n].Key = val
			case "op":
				filters[n].Op = trash.Op(val)
			case "value":
				filters[n].Value = val
			}
		}
		if err != nil {
			return trash.Query{}, err
		}
	}
	for n := range filters {
		if seen[n] {
			if filters[n].Key == "" {
				return trash.Query{}, deskkit.Invalid(fmt.Sprintf("filters[%d].key", n), "is required when filters[%d] is given", n)
			}
			q.Filters = append(q.Filters, filters[n])
		}
	}
	return q, nil
}

// searchParams are the parameters parseSearchQuery reads.
var searchParams = []Param{
	{Name: "targetType", In: InQuery, Type: "string", Required: true, Description: "Search the trash of tasks or of sprints.", Example: "TASK", Schema: `{"$ref": "#/components/schemas/TargetType"}`},
	{Name: "projectId", In: InQuery, Type: "integer", Description: "Only entries of this project; every project of the tenant if absent.", Example: 10, Schema: `{"type": "integer", "format": "int64", "minimum": 1}`},
	{Name: "targetName", In: InQuery, Type: "string", Description: "Case-insensitive substring of the task or sprint name; `%`, `_` and `\\` match themselves.", Example: "login", Schema: `{"type": "string", "maxLength": 512}`},
	{Name: "deletedDate", In: InQuery, Type: "string", Description: "Only entries deleted in exactly this second. RFC 3339 (`2026-11-22T01:00:00Z`) or `yyyy-MM-dd HH:mm:ss`, read as UTC; fractions of a second are cut.", Example: "2026-11-22T01:00:00Z", Schema: `{"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})| [0-9]{2}:[0-9]{2}:[0-9]{2})$", "example": "2026-11-22T01:00:00Z"}`},
	{Name: "pageNo", In: InQuery, Type: "integer", Description: "1-based page number.", Example: 1, Schema: `{"type": "integer", "format": "int32", "minimum": 1, "maximum": ` + strconv.Itoa(trash.MaxPageNo) + `, "default": 1}`},
	{Name: "pageSize", In: InQuery, Type: "integer", Description: "Entries per page.", Example: 20, Schema: `{"type": "integer", "format": "int32", "minimum": 1, "maximum": ` + strconv.Itoa(trash.MaxPageSize) + `, "default": 10}`},
	{Name: "orderBy", In: InQuery, Type: "string", Description: "Sort field; ties are broken by id in the same direction, so pages never overlap.", Example: "deletedDate", Schema: `{"type": "string", "enum": ["id", "deletedDate", "targetName"], "default": "id"}`},
	{Name: "orderSort", In: InQuery, Type: "string", Description: "Sort direction.", Example: "DESC", Schema: `{"type": "string", "enum": ["ASC", "DESC"], "default": "DESC"}`},
	{Name: "infoScope", In: InQuery, Type: "string", Description: "BASIC: the entries' own fields. DETAIL: also the names and avatars of creator and deleter, from the host's user resolver (without one, DETAIL answers like BASIC).", Example: "BASIC", Schema: `{"type": "string", "enum": ["BASIC", "DETAIL"], "default": "BASIC"}`},
	{Name: "filters[n].key", In: InQuery, Type: "string", Description: "Field filter {n} compares. Required when any filters[{n}] parameter is given. All filters must hold.", Example: []string{"targetName", "sprintId", "deletedDate"}, Schema: `{"type": "string", "enum": ["id", "projectId", "targetId", "targetType", "targetName", "sprintId", "createdBy", "deletedBy", "deletedDate"]}`, Indexes: trash.MaxFilters},
	{Name: "filters[n].op", In: InQuery, Type: "string", Description: "Operator of filter {n}. GREATER_THAN, LESS_THAN, GREATER_THAN_EQUAL and LESS_THAN_EQUAL apply to numbers and dates; EQUAL and NOT_EQUAL to every key; MATCH (contains), MATCH_END (starts with), NOT_MATCH and NOT_MATCH_END, all ignoring case, only to targetName; IS_NULL and IS_NOT_NULL only to sprintId; IN and NOT_IN take a list. NOT_EQUAL and NOT_IN on sprintId also match entries without a sprint.", Example: []string{"MATCH", "IS_NOT_NULL", "LESS_THAN_EQUAL"}, Schema: `{"type": "string", "enum": ["GREATER_THAN", "LESS_THAN", "GREATER_THAN_EQUAL", "LESS_THAN_EQUAL", "EQUAL", "NOT_EQUAL", "MATCH", "MATCH_END", "NOT_MATCH", "NOT_MATCH_END", "IN", "NOT_IN", "IS_NULL", "IS_NOT_NULL"]}`, Indexes: trash.MaxFilters},
	{Name: "filters[n].value", In: InQuery, Type: "string", Description: "Value of filter {n}, as text: an integer, a date (RFC 3339 or `yyyy-MM-dd HH:mm:ss`, UTC), a name (1 to 512 characters) or a target type, as the key needs; for IN and NOT_IN a comma-separated list of 1 to 500 of those, optionally in brackets. Must be empty or absent for IS_NULL and IS_NOT_NULL.", Example: []string{"docs", "", "2026-11-22 01:00:00"}, Schema: `{"type": "string"}`, Indexes: trash.MaxFilters},
}

var filterName = regexp.MustCompile(`^filters\[(\d+)\]\.(key|op|value)$`)

func parseFilterName(name string) (int, string, error) {
	m := filterName.FindStringSubmatch(name)
	if m == nil {
		if strings.HasPrefix(name, "filters") {
			return 0, "", deskkit.Invalid(name, "must be filters[n].key, filters[n].op or filters[n].value")
		}
		return 0, "", deskkit.Invalid(name, "is not a search parameter")
	}
	n, err := strconv.Atoi(m[1])
	if err == nil && strconv.Itoa(n) != m[1] {
		// filters[00].key would otherwise silently override filters[0].key.
		return 0, "", deskkit.Invalid(name, "has index %s; write filter indexes without leading zeros: 0, 1 or 2", m[1])
	}
	if err != nil || n >= trash.MaxFilters {
		return 0, "", deskkit.Invalid(name, "has index %s; filter indexes are 0, 1 and 2", m[1])
	}
	return n, m[2], nil
}

func parseInt(field, s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, deskkit.Invalid(field, "must be an integer between %d and %d", lo, hi)
	}
	return n, nil
}
