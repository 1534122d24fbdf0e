package console

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/channel"
)

func TestNiceCeil(t *testing.T) {
	for n, want := range map[int]int{0: 4, 3: 4, 4: 4, 5: 5, 6: 10, 11: 20, 21: 50, 51: 100, 101: 200, 999: 1000} {
		if got := niceCeil(n); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", n, got, want)
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
	c := newChart(counts, fmt.Sprintf)
	if c.Max != 10 || len(c.Bars) != 3 || len(c.Ticks) != 5 {
		t.Fatalf("max %d, %d bars, %d ticks", c.Max, len(c.Bars), len(c.Ticks))
	}
	if len(c.Bars[0].Segments) != 0 {
		t.Errorf("an empty hour has segments: %+v", c.Bars[0])
	}
	base := float64(chartHeight - chartBottom)
	unit := float64(chartHeight-chartBottom-chartTop) / 10
	want := []chartSegment{
		{Y: round1(base - 6*unit), H: round1(6 * unit), Class: "ok"},
		{Y: round1(base - 8*unit), H: round1(2 * unit), Class: "failed"},
	}
	if d := cmp.Diff(want, c.Bars[1].Segments); d != "" {
		t.Errorf("segments (-want +got):\n%s", d)
	}
	if c.Ticks[4].Y != float64(chartTop) || c.Ticks[4].Label != 10 || c.Ticks[0].Y != base {
		t.Errorf("ticks %+v", c.Ticks)
	}
	last := c.Hours[len(c.Hours)-1]
	if last.Label != "12:00" || last.Anchor != "end" || last.X > chartWidth {
		t.Errorf("the last hour's label %+v", last)
	}
	for _, s := range []string{"From 2026-11-24 10:00 to 2026-11-24 13:00 UTC", "6 deliveries succeeded, 2 failed, 1 pending", "busiest hour had 8"} {
		if !strings.Contains(c.Summary, s) {
			t.Errorf("summary %q lacks %q", c.Summary, s)
		}
	}
	if c.Bars[1].Title != "11:00: 6 succeeded, 2 failed, 0 pending" {
		t.Errorf("bar title %q", c.Bars[1].Title)
	}
}

// TestParseSince: the recover form takes a datetime-local value, a date,
// or a date as the API takes it (httpapi.ParseTime), with its refusals of
// impossible offsets (+24:00, +08:60, which time.Parse takes).
func TestParseSince(t *testing.T) {
	want := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	for _, s := range []string{"2026-11-24T09:30", "2026-11-24T09:30:00", "2026-11-24T09:30:00Z", "2026-11-24T10:30:00+01:00", "2026-11-24t09:30:00z"} {
		if got, err := parseSince(s); err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "yesterday", "2026-13-01", "2026-11-24T09:30:00+24:00", "2026-11-24T09:30:00+08:60"} {
		if _, err := parseSince(s); err == nil {
			t.Errorf("parseSince(%q) took it", s)
		}
	}
}
