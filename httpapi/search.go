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
	filters := make([]rawFilter, trash.MaxFilters)
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
			q.ProjectID, err = ParseID(name, val)
		case "targetName":
			q.TargetName = val
		case "targetType":
			q.TargetType = trash.TargetType(val)
		case "deletedDate":
			var t time.Time
			t, err = ParseTime(name, val)
			q.DeletedDate = &t
		case "pageNo":
			q.PageNo, err = ParseInt(name, val, 1, trash.MaxPageNo)
		case "pageSize":
			q.PageSize, err = ParseInt(name, val, 1, trash.MaxPageSize)
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
				filters[n].key = val
			case "op":
				filters[n].op = trash.Op(val)
			case "value":
				filters[n].value = val
			}
		}
		if err != nil {
			return trash.Query{}, err
		}
	}
	// A value that does not parse is reported where trash checks values:
	// after every other parameter and after the filter's key and op. So the
	// value's error waits until the query up to that filter, with a valid
	// stand-in for the value, passes trash's checks.
	var bad error
	for n := range filters {
		if !seen[n] {
			continue
		}
		if filters[n].key == "" {
			return trash.Query{}, deskkit.Invalid(fmt.Sprintf("filters[%d].key", n), "is required when filters[%d] is given", n)
		}
		// trash names a filter by its place in Query.Filters, which is the
		// index given unless an earlier index was skipped.
		field := fmt.Sprintf("filters[%d].value", len(q.Filters))
		v, err := filters[n].parse(field)
		q.Filters = append(q.Filters, trash.Filter{Key: filters[n].key, Op: filters[n].op, Value: v})
		if err != nil && bad == nil {
			// q holds the filters up to this one: does trash fail it first?
			if verr := q.Validate(); verr != nil {
				return trash.Query{}, verr
			}
			bad = err
		}
	}
	if bad != nil {
		return trash.Query{}, bad
	}
	return q, nil
}

// rawFilter is filters[n] as the query string gives it.
type rawFilter struct {
	key   string
	op    trash.Op
	value string
}

// parse reads the filter's value for its key's kind (trash.KeyKind) and op:
// an integer, a date (ParseTime), a name or a target type, or for IN and
// NOT_IN a list of those, comma-separated and optionally in brackets.
// IS_NULL and IS_NOT_NULL take no value: "" is nil. A value whose key or op
// trash rejects is passed on as text, for trash to name the key or op.
//
// When the value does not parse, parse returns the error and a stand-in of
// the same shape that trash accepts (a list keeps its length), so that
// trash can be asked whether an earlier field fails first.
func (f rawFilter) parse(field string) (any, error) {
	kind, ok := trash.KeyKind(f.key)
	if !ok {
		return f.value, nil
	}
	switch f.op {
	case trash.OpIsNull, trash.OpIsNotNull:
		if f.value == "" {
			return nil, nil
		}
		return f.value, nil
	case trash.OpIn, trash.OpNotIn:
		list := strings.TrimSpace(f.value)
		if strings.HasPrefix(list, "[") && strings.HasSuffix(list, "]") {
			list = list[1 : len(list)-1]
		}
		var parts []string
		if strings.TrimSpace(list) != "" {
			parts = strings.Split(list, ",")
		}
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		switch kind {
		case trash.KindNumber:
			return parseList(field, parts, parseInteger, 0)
		case trash.KindDate:
			return parseList(field, parts, ParseTime, time.Unix(0, 0).UTC())
		case trash.KindTargetType:
			types := make([]trash.TargetType, len(parts))
			for i, s := range parts {
				types[i] = trash.TargetType(s)
			}
			return types, nil
		}
		return parts, nil
	case trash.OpEqual, trash.OpNotEqual, trash.OpGreaterThan, trash.OpLessThan, trash.OpGreaterThanEqual, trash.OpLessThanEqual:
		switch kind {
		case trash.KindNumber:
			n, err := parseInteger(field, f.value)
			return n, err
		case trash.KindDate:
			t, err := ParseTime(field, f.value)
			if err != nil {
				return time.Unix(0, 0).UTC(), err
			}
			return t, nil
		case trash.KindTargetType:
			return trash.TargetType(f.value), nil
		}
	}
	return f.value, nil
}

// parseList parses each part; on the first that does not parse it returns
// the error and the parts before it followed by stand-ins.
func parseList[T any](field string, parts []string, parse func(field, s string) (T, error), standIn T) ([]T, error) {
	out := make([]T, len(parts))
	for i, s := range parts {
		v, err := parse(field, s)
		if err != nil {
			for j := i; j < len(out); j++ {
				out[j] = standIn
			}
			return out, err
		}
		out[i] = v
	}
	return out, nil
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

// ParseInt reads a number between lo and hi as the API reads pageNo and
// pageSize: anything else is an *deskkit.InputError naming field, "must be
// an integer between lo and hi". The console reads its page numbers and
// sizes with it, so that a bad one is refused by the same rule.
func ParseInt(field, s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, deskkit.Invalid(field, "must be an integer between %d and %d", lo, hi)
	}
	return n, nil
}
