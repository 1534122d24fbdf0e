package httpapi

import (
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
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

// dateCases are spellings of dates, each with the time ParseTime reads or
// the rule it refuses with. patternTakes marks a refused spelling whose
// syntax the document's pattern cannot tell from a good one (a day the
// month lacks, a year out of range in UTC).
var dateCases = []struct {
	in           string
	want         time.Time // when rule is ""
	rule         string    // the rule it is refused by
	patternTakes bool
}{
	// Accepted: RFC 3339 section 5.6 in every spelling it allows.
	{in: "2026-11-22T08:00:00Z", want: fixedNow},
	{in: "2026-11-22t08:00:00z", want: fixedNow},
	{in: "2026-11-22t08:00:00Z", want: fixedNow},
	{in: "2026-11-22T08:00:00z", want: fixedNow},
	{in: "2026-11-22T16:00:00+08:00", want: fixedNow},
	{in: "2026-11-22t16:00:00+08:00", want: fixedNow},
	{in: "2026-11-22T08:00:00-00:00", want: fixedNow},
	{in: "2026-11-22T08:00:00+00:00", want: fixedNow},
	{in: "2026-11-23T07:59:00+23:59", want: fixedNow},
	{in: "2026-11-21T08:01:00-23:59", want: fixedNow},
	{in: "2026-11-22T08:00:00.999999999Z", want: fixedNow},
	{in: "2026-11-22T08:00:00.5z", want: fixedNow},
	{in: "2026-11-22T08:00:00.123456789012Z", want: fixedNow},
	{in: "2026-11-22 08:00:00", want: fixedNow},
	{in: "2024-02-29T00:00:00Z", want: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
	{in: "0001-01-01T00:00:00Z", want: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
	{in: "9999-12-31T23:59:59Z", want: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
	// Offsets that are no offset: time.Parse took them.
	{in: "2026-11-22T08:00:00+24:00", rule: "has the offset +24:00; an offset is at most 23:59 (hours 00 to 23, minutes 00 to 59)"},
	{in: "2026-11-22T08:00:00+08:60", rule: "has the offset +08:60; an offset is at most 23:59 (hours 00 to 23, minutes 00 to 59)"},
	{in: "2026-11-22T08:00:00-99:99", rule: "has the offset -99:99; an offset is at most 23:59 (hours 00 to 23, minutes 00 to 59)"},
	// Dates and times that do not exist.
	{in: "2026-13-01T00:00:00Z", rule: exist},
	{in: "2026-00-01T00:00:00Z", rule: exist},
	{in: "2026-02-30T00:00:00Z", rule: exist, patternTakes: true},
	{in: "2025-02-29T00:00:00Z", rule: exist, patternTakes: true},
	{in: "2026-04-31 00:00:00", rule: exist, patternTakes: true},
	{in: "2026-11-00T00:00:00Z", rule: exist},
	{in: "2026-11-22T24:00:00Z", rule: exist},
	{in: "2026-11-22T08:60:00Z", rule: exist},
	{in: "2026-12-31T23:59:60Z", rule: exist}, // a leap second: time.Time has none
	{in: "2026-11-22 25:00:00", rule: exist},
	// Other spellings.
	{in: "2026-11-22", rule: spelling},
	{in: "2026-11-22T08:00:00", rule: spelling},
	{in: "2026-11-22T08:00Z", rule: spelling},
	{in: "2026-11-22 08:00:00Z", rule: spelling},
	{in: "2026-11-22 08:00:00+08:00", rule: spelling},
	{in: "2026-11-22T08:00:00,5Z", rule: spelling}, // time.Parse took the comma
	{in: "2026-11-22T08:00:00.Z", rule: spelling},
	{in: "2026-11-22T08:00:00+0800", rule: spelling},
	{in: "2026-11-22T08:00:00+08", rule: spelling},
	{in: "2026-11-22T08:00:00 Z", rule: spelling},
	{in: "2026-11-22X08:00:00Z", rule: spelling},
	{in: "2026-11-22t08:00:00", rule: spelling},
	{in: " 2026-11-22T08:00:00Z", rule: spelling},
	{in: "2026-11-22T08:00:00Z\n", rule: spelling},
	{in: "+2026-11-22T08:00:00Z", rule: spelling},
	{in: "12026-11-22T08:00:00Z", rule: spelling},
	{in: "2026-1-22T08:00:00Z", rule: spelling},
	{in: "２０２６-11-22T08:00:00Z", rule: spelling},
	{in: "", rule: spelling},
	// Out of the years 1 to 9999 in UTC.
	{in: "0001-01-01T00:00:00+01:00", rule: years, patternTakes: true},
	{in: "9999-12-31T23:30:00-01:00", rule: years, patternTakes: true},
	{in: "0000-06-01T00:00:00Z", rule: years, patternTakes: true},
}

const (
	spelling = "must be a date as RFC 3339 or yyyy-MM-dd HH:mm:ss"
	exist    = "must be a date and time that exist: month 01 to 12, a day of that month, hour 00 to 23, minute and second 00 to 59"
	years    = "must be a date between the years 1 and 9999 in UTC"
)

// Issue 28, fault 8: dates with the offsets +24:00 and +08:60 were taken,
// while the lower-case t and z that RFC 3339 (and the document's pattern)
// allow were refused. One parser reads every date, as the table says.
func TestParseTimeSpellings(t *testing.T) {
	for _, c := range dateCases {
		got, err := ParseTime("deletedDate", c.in)
		switch {
		case c.rule != "" && (err == nil || err.Error() != "deletedDate "+c.rule):
			t.Errorf("%q: %v, %v; want refused: deletedDate %s", c.in, got, err, c.rule)
		case c.rule == "" && (err != nil || !got.Equal(c.want) || got.Location() != time.UTC):
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// The document's date parameters carry one pattern, datePattern, and it
// takes what ParseTime takes and refuses what ParseTime refuses, but for
// what a pattern cannot tell (patternTakes).
func TestDatePatternAgrees(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Pattern string `json:"pattern"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for _, p := range op.Parameters {
				if p.Name == "deletedDate" || p.Name == "since" {
					found[p.Name] = true
					if p.Schema.Pattern != datePattern {
						t.Errorf("%s %s: %s has the pattern %q, want datePattern", method, path, p.Name, p.Schema.Pattern)
					}
				}
			}
		}
	}
	if !found["deletedDate"] || !found["since"] {
		t.Errorf("date parameters found: %v", found)
	}
	re := regexp.MustCompile(datePattern)
	for _, c := range dateCases {
		if want := c.rule == "" || c.patternTakes; re.MatchString(c.in) != want {
			t.Errorf("the pattern matches %q: %v, want %v", c.in, !want, want)
		}
	}
}

// Every date the API takes goes through the one parser: deletedDate, the
// deletedDate filters (one value and lists), and a recover's since.
func TestDatesThroughTheAPI(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db)
		f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "Login page"})
		for _, c := range []struct {
			field string
			query url.Values
		}{
			{"deletedDate", url.Values{"deletedDate": {"%s"}}},
			{"filters[0].value", url.Values{"filters[0].key": {"deletedDate"}, "filters[0].op": {"EQUAL"}, "filters[0].value": {"%s"}}},
			{"filters[0].value", url.Values{"filters[0].key": {"deletedDate"}, "filters[0].op": {"IN"}, "filters[0].value": {"2020-01-01T00:00:00Z,%s"}}},
		} {
			for _, d := range []struct {
				in    string
				total int
				rule  string
			}{
				{"2026-11-22t08:00:00z", 1, ""},
				{"2026-11-22t16:00:00+08:00", 1, ""},
				{"2026-11-22T08:00:00+24:00", 0, "has the offset +24:00; an offset is at most 23:59 (hours 00 to 23, minutes 00 to 59)"},
				{"2026-11-22T08:00:00+08:60", 0, "has the offset +08:60; an offset is at most 23:59 (hours 00 to 23, minutes 00 to 59)"},
				{"2026-11-22T08:00:00,5Z", 0, spelling},
			} {
				v := url.Values{"targetType": {"TASK"}}
				for k, vals := range c.query {
					v[k] = []string{strings.Replace(vals[0], "%s", d.in, 1)}
				}
				r := f.do(t, "GET", "/api/v1/task/trash/search?"+v.Encode(), "alice", nil)
				if d.rule != "" {
					r.expect(t, 400, "E0", KeyValidation)
					if want := c.field + " " + d.rule; r.env.Msg != want {
						t.Errorf("%s: msg %q, want %q", v.Encode(), r.env.Msg, want)
					}
					continue
				}
				r.expect(t, 200, "S", "")
				if page, _ := r.env.Data.(map[string]any); page["total"] != float64(d.total) {
					t.Errorf("%s: %v, want total %d", v.Encode(), r.env.Data, d.total)
				}
			}
		}
	})
}
