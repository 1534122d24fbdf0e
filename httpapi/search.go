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
