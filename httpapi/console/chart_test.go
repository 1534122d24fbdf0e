package console

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/channel"
)

// TestNiceScale: every line of the scale is a multiple of a round step
// (1, 2 or 5 times a power of ten), at most five lines, the top at or
// above the tallest bar and less than a step above it.
func TestNiceScale(t *testing.T) {
	for n, want := range map[int][2]int{0: {4, 1}, 3: {4, 1}, 4: {4, 1}, 5: {6, 2}, 8: {8, 2}, 10: {10, 5}, 11: {15, 5}, 21: {30, 10}, 999: {1000, 500}} {
		if top, step := niceScale(n); top != want[0] || step != want[1] {
			t.Errorf("niceScale(%d) = %d, %d, want %d, %d", n, top, step, want[0], want[1])
		}
	}
	for n := range 5000 {
		top, step := niceScale(n)
		m := step
		for m%10 == 0 {
			m /= 10
		}
		if (m != 1 && m != 2 && m != 5) || top%step != 0 || top < n || top-n >= step && top > 4 || top/step > 4 {
			t.Fatalf("niceScale(%d) = %d, %d", n, top, step)
		}
	}
}

// The chart stacks each hour's counts from the base line up, scaled to the
// scale's top, and says the same in words.
func TestNewChart(t *testing.T) {
	h0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	counts := []channel.HourlyDeliveries{
		{Hour: h0},
		{Hour: h0.Add(time.Hour), Succeeded: 6, Failed: 2},
		{Hour: h0.Add(2 * time.Hour), Pending: 1},
	}
	c := newChart(counts, time.UTC, fmt.Sprintf)
	if c.Max != 8 || len(c.Bars) != 3 || len(c.Ticks) != 5 {
		t.Fatalf("max %d, %d bars, %d ticks", c.Max, len(c.Bars), len(c.Ticks))
	}
	if len(c.Bars[0].Segments) != 0 {
		t.Errorf("an empty hour has segments: %+v", c.Bars[0])
	}
	base := float64(chartHeight - chartBottom)
	unit := float64(chartHeight-chartBottom-chartTop) / 8
	want := []chartSegment{
		{Y: round1(base - 6*unit), H: round1(6 * unit), Class: "ok"},
		{Y: round1(base - 8*unit), H: round1(2 * unit), Class: "failed"},
	}
	if d := cmp.Diff(want, c.Bars[1].Segments); d != "" {
		t.Errorf("segments (-want +got):\n%s", d)
	}
	if c.Ticks[4].Y != float64(chartTop) || c.Ticks[4].Label != 8 || c.Ticks[0].Y != base {
		t.Errorf("ticks %+v", c.Ticks)
	}
	last := c.Hours[len(c.Hours)-1]
	if last.Label != "12:00" || last.Anchor != "end" || last.X > chartWidth {
		t.Errorf("the last hour's label %+v", last)
	}
	for _, s := range []string{"From 2026-11-24 10:00 to 2026-11-24 13:00 UTC:", "6 deliveries succeeded, 2 failed, 1 pending", "busiest hour had 8"} {
		if !strings.Contains(c.Summary, s) {
			t.Errorf("summary %q lacks %q", c.Summary, s)
		}
	}
	if c.Bars[1].Title != "11:00: 6 succeeded, 2 failed, 0 pending" {
		t.Errorf("bar title %q", c.Bars[1].Title)
	}
}

// TestParseLocal: the recover form and the filters take a datetime-local
// value or a date in the reader's zone, or a date as the API takes it
// (httpapi.ParseTime), with its refusals of impossible offsets (+24:00,
// +08:60, which time.Parse takes).
func TestParseLocal(t *testing.T) {
	want := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	for _, s := range []string{"2026-11-24T09:30", "2026-11-24T09:30:00", "2026-11-24T09:30:00Z", "2026-11-24T10:30:00+01:00", "2026-11-24t09:30:00z"} {
		if got, err := parseLocal("since", s, time.UTC); err != nil || !got.Equal(want) {
			t.Errorf("parseLocal(%q) = %v, %v", s, got, err)
		}
	}
	shanghai, ok := loadZone("Asia/Shanghai")
	if !ok {
		t.Fatal("Asia/Shanghai does not load")
	}
	// 17:30 in Shanghai is 09:30 UTC; a zone written in the value wins.
	for _, s := range []string{"2026-11-24T17:30", "2026-11-24T09:30:00Z"} {
		if got, err := parseLocal("since", s, shanghai); err != nil || !got.Equal(want) {
			t.Errorf("parseLocal(%q) in Shanghai = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "yesterday", "2026-13-01", "2026-11-24T09:30:00+24:00", "2026-11-24T09:30:00+08:60"} {
		if _, err := parseLocal("since", s, time.UTC); err == nil {
			t.Errorf("parseLocal(%q) took it", s)
		}
	}
}
