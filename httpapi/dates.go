package httpapi

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit"
)

// dateSyntax is every date the API takes (deletedDate, the deletedDate
// filters, since), in one of two spellings:
//
//   - RFC 3339's date-time (section 5.6): 2026-11-22T01:00:00Z, with a
//     fraction of a second of any length after a dot, and an offset of Z or
//     ±hh:mm; T and Z may be written t and z, as section 5.6 allows;
//   - yyyy-MM-dd HH:mm:ss, read as UTC.
//
// The groups are the date, the time and its fraction and offset of RFC
// 3339, and the time of the second spelling.
var dateSyntax = regexp.MustCompile(`^([0-9]{4}-[0-9]{2}-[0-9]{2})(?:[Tt]([0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})| ([0-9]{2}:[0-9]{2}:[0-9]{2}))$`)

// datePattern is dateSyntax as the OpenAPI document gives it, with the
// ranges a pattern can say: months 01 to 12, days 01 to 31, hours 00 to
// 23, minutes and seconds 00 to 59, offsets up to ±23:59. What it cannot
// say (30 February, a year out of range in UTC) ParseTime refuses too. The
// query parameters that take a date carry it as their pattern tag (a tag
// cannot name a constant); TestDatePatternAgrees checks that the document's
// patterns are this one and that it agrees with ParseTime.
const datePattern = `^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])| ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])$`

// ParseTime reads a date as the API takes it: the one parser of every date
// parameter and filter value. A date is written in one of two spellings:
// RFC 3339's date-time (section 5.6), 2026-11-22T01:00:00Z, with a
// fraction of a second of any length after a dot and an offset of Z or
// ±hh:mm (T and Z may be written t and z, as section 5.6 allows); or
// yyyy-MM-dd HH:mm:ss, read as UTC. It is cut to the second, as
// deletion dates are kept, in UTC, and must fall in the years 1 to 9999 in
// UTC. Refused, each by an *deskkit.InputError naming field and the rule:
// another spelling (a comma before the fraction, an offset without its
// colon, a date alone), a date or time that does not exist (month 13, 30
// February, hour 24, a leap second: Go's time cannot hold 23:59:60), and an
// offset out of range (+24:00, +08:60, which time.Parse would take).
// "-00:00", RFC 3339's "offset unknown", is UTC. A host's own routes
// (Server.Handle) and the console read their dates with it, so that a date
// has one spelling on every route of the server.
func ParseTime(field, s string) (time.Time, error) {
	m := dateSyntax.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, deskkit.Invalid(field, "must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss")
	}
	date, clock, frac, offset := m[1], m[2], m[3], strings.ToUpper(m[4])
	if clock == "" {
		clock, offset = m[5], "Z"
	}
	if offset != "Z" {
		h, _ := strconv.Atoi(offset[1:3])
		min, _ := strconv.Atoi(offset[4:6])
		if h > 23 || min > 59 {
			return time.Time{}, deskkit.Invalid(field, "has the offset %s; an offset is at most 23:59 (hours 00 to 23, minutes 00 to 59)", offset)
		}
	}
	t, err := time.Parse(time.RFC3339Nano, date+"T"+clock+frac+offset)
	if err != nil {
		// The syntax is right, so a field is out of its range.
		return time.Time{}, deskkit.Invalid(field, "must be a date and time that exist: month 01 to 12, a day of that month, hour 00 to 23, minute and second 00 to 59")
	}
	// The range is checked in UTC, as the date is stored: 0001-01-01T00:00:00+01:00
	// is year 0 in UTC, which PostgreSQL rejects.
	if t = t.UTC(); t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, deskkit.Invalid(field, "must be a date between the years 1 and 9999 in UTC")
	}
	return t.Truncate(time.Second), nil
}
