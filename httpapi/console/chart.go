package console

import (
	"math"
	"time"

	"github.com/deskkit/deskkit/channel"
)

// The chart of a channel's deliveries per hour is drawn on the server as
// inline SVG (no chart library, no script): one stacked bar per hour,
// succeeded at the bottom, then failed, then pending. Its text
// alternative is the SVG's title and desc (a summary) and a table of the
// same numbers after it.

// Chart geometry, in the SVG's user units.
const (
	chartWidth   = 720
	chartHeight  = 200
	chartLeft    = 36 // room for the scale
	chartBottom  = 24 // room for the hours
	chartTop     = 8
	chartBarGap  = 4
	chartMaxBars = channel.MaxStatsHours
)

// chart is what the template draws.
type chart struct {
	Width, Height int
	Bars          []chartBar
	Ticks         []chartTick // the scale's lines
	Hours         []chartHour // the hours' labels
	Max           int
	Total         chartSums
	Summary       string
	Rows          []channel.HourlyDeliveries
}

type chartSums struct{ Succeeded, Failed, Pending int }

// chartBar is one hour's stack.
type chartBar struct {
	X, W     float64
	Segments []chartSegment
	Title    string // the hour's numbers, shown on hover
}

type chartSegment struct {
	Y, H  float64
	Class string
}

type chartTick struct {
	Y     float64
	Label int
}

type chartHour struct {
	X      float64
	Label  string
	Anchor string // text-anchor: the last label ends at its bar, inside the picture
}

// round1 keeps one decimal of a coordinate.
func round1(f float64) float64 { return math.Round(f*10) / 10 }

// niceScale is the scale of a chart whose tallest bar is n: its step,
// the least of 1, 2, 5 times a power of ten that takes n in four steps,
// and its top, the least multiple of step at or above n (4 at least), so
// that every line of the scale is a round number: 0/5/10, never
// 0/2/5/7/10.
func niceScale(n int) (top, step int) {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if step = m * p; 4*step >= n {
				top = max((n+step-1)/step*step, step)
				if step == 1 {
					top = max(top, 4)
				}
				return top, step
			}
		}
	}
}

// newChart lays out counts, oldest hour first.
func newChart(counts []channel.HourlyDeliveries, loc *time.Location, tr func(string, ...any) string) chart {
	if len(counts) > chartMaxBars {
		counts = counts[len(counts)-chartMaxBars:]
	}
	c := chart{Width: chartWidth, Height: chartHeight, Rows: counts}
	most := 0
	for _, h := range counts {
		most = max(most, h.Succeeded+h.Failed+h.Pending)
		c.Total.Succeeded += h.Succeeded
		c.Total.Failed += h.Failed
		c.Total.Pending += h.Pending
	}
	top, step := niceScale(most)
	c.Max = top
	plotH := float64(chartHeight - chartBottom - chartTop)
	base := float64(chartHeight - chartBottom)
	scale := plotH / float64(c.Max)
	for v := 0; v <= top; v += step {
		c.Ticks = append(c.Ticks, chartTick{Y: round1(base - float64(v)*scale), Label: v})
	}
	n := max(len(counts), 1)
	slot := float64(chartWidth-chartLeft) / float64(n)
	for i, h := range counts {
		b := chartBar{X: round1(float64(chartLeft) + float64(i)*slot + chartBarGap/2), W: round1(slot - chartBarGap),
			Title: tr("%s: %d succeeded, %d failed, %d pending", h.Hour.In(loc).Format("15:04"), h.Succeeded, h.Failed, h.Pending)}
		y := base
		for _, seg := range []struct {
			n     int
			class string
		}{{h.Succeeded, "ok"}, {h.Failed, "failed"}, {h.Pending, "pending"}} {
			if seg.n == 0 {
				continue
			}
			hgt := float64(seg.n) * scale
			y -= hgt
			b.Segments = append(b.Segments, chartSegment{Y: round1(y), H: round1(hgt), Class: seg.class})
		}
		c.Bars = append(c.Bars, b)
		if i%6 == 0 || i == len(counts)-1 {
			hr := chartHour{X: round1(b.X + b.W/2), Label: h.Hour.In(loc).Format("15:04"), Anchor: "middle"}
			if i == len(counts)-1 {
				hr.X, hr.Anchor = round1(b.X+b.W), "end"
			}
			c.Hours = append(c.Hours, hr)
		}
	}
	from, to := "", ""
	if len(counts) > 0 {
		from = counts[0].Hour.In(loc).Format("2006-01-02 15:04")
		to = formatIn(counts[len(counts)-1].Hour.Add(time.Hour), loc)
	}
	c.Summary = tr("From %s to %s: %d deliveries succeeded, %d failed, %d pending; the busiest hour had %d.",
		from, to, c.Total.Succeeded, c.Total.Failed, c.Total.Pending, most)
	return c
}
