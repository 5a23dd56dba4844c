package simulate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The calendar charts' geometry, beside the algorithm charts' (chart.go).
const (
	calPlotH   = 110.0 // a calendar chart's plots are taller: one row, or two
	periodBand = 26.0  // above the first row: each period's extent and name
)

// calChart is one calendar picture being drawn.
type calChart struct {
	c  *canvas
	sc CalendarScenario
	tr CalendarTrace
}

// CalendarChart draws what the limiter made of sc's traffic: the requests admitted and
// refused per sc.Bucket as stacked bars, with the state, the Remaining of a cost-0 check, as a
// line over them, or what the period has used (the limit less Remaining) in a row of its own
// (sc.Used); each period's extent and name above, its boundaries across the rows, and a
// change of the zone's clock where one falls. The time axis is elapsed time, labelled by the
// zone's clock.
func CalendarChart(sc CalendarScenario, tr CalendarTrace) []byte {
	ch := calChart{c: &canvas{}, sc: sc, tr: tr}
	c := ch.c
	c.text(left, 30, sc.Title, textStyle{size: 19, bold: true})
	c.text(left, 53, sc.Traffic, textStyle{size: 14})
	c.text(left, 73, fmt.Sprintf("One calendar policy, ratelimit.ParsePolicy(%q), counted by FixedWindow, through the memory store on a fake clock.", sc.Rate),
		textStyle{size: 12, fill: colMuted})
	top := ch.legend(left, legendY) + legendGap

	ch.periods(top)
	y0 := top + periodBand
	barsTop := y0 + rowLabel
	ch.barsRow(y0)
	y0 += rowLabel + calPlotH + rowGap
	if sc.Used {
		ch.usedRow(y0)
		y0 += rowLabel + calPlotH + rowGap
	}
	axisY := y0 - rowGap
	ch.clockChanges(barsTop, axisY)
	ch.timeAxis(axisY)
	// The line over the bars is on their scale; the legend says what it is.
	c.text(20, barsTop+calPlotH/2, "requests per "+durationWords(sc.Bucket), textStyle{size: 12, anchor: "middle", rotate: true})
	if sc.Used {
		c.text(20, barsTop+rowLabel+calPlotH+rowGap+calPlotH/2, "used in the period", textStyle{size: 12, anchor: "middle", rotate: true})
	}
	return c.document(width, axisY+bottom+14)
}

// x is the abscissa of d since the start.
func (ch *calChart) x(d time.Duration) float64 {
	return left + plotW*float64(d)/float64(ch.sc.Length())
}

// clip returns s within the picture.
func (ch *calChart) clip(s Span) Span {
	return Span{Start: max(s.Start, 0), End: min(s.End, ch.sc.Length())}
}

// periods draws, in the band from y down, each period's extent as a bracket and its name.
func (ch *calChart) periods(y float64) {
	c := ch.c
	counts := ch.tr.AdmittedIn()
	for i, p := range ch.tr.Periods {
		s := ch.clip(p)
		x0, x1 := ch.x(s.Start), ch.x(s.End)
		by := y + periodBand - 6
		c.line(x0+2, by, x1-2, by, colMuted, 1, "")
		c.line(x0+2, by-4, x0+2, by+4, colMuted, 1, "")
		c.line(x1-2, by-4, x1-2, by+4, colMuted, 1, "")
		start, end := ch.sc.From.Add(p.Start), ch.sc.From.Add(p.End)
		name, standsOut := ch.sc.Period(start.In(ch.sc.From.Location()), end.In(ch.sc.From.Location()))
		c.text((x0+x1)/2, by-7, fmt.Sprintf("%s · admitted %d", name, counts[i]), textStyle{size: 12, anchor: "middle", bold: standsOut})
	}
}

// boundaries draws the period boundaries across a band of height h from y.
func (ch *calChart) boundaries(y, h float64) {
	for _, p := range ch.tr.Periods {
		if p.Start > 0 && p.Start < ch.sc.Length() {
			ch.c.line(ch.x(p.Start), y, ch.x(p.Start), y+h, colBoundary, 1, "4 3")
		}
	}
}

// grid draws a plot's y ticks on the scale of top.
func (ch *calChart) grid(y func(float64) float64, top int) {
	for _, v := range yTicks(top) {
		ch.c.line(left, y(float64(v)), left+plotW, y(float64(v)), colGrid, 1, "")
		ch.c.text(left-6, y(float64(v))+3.5, strconv.Itoa(v), textStyle{size: 10, anchor: "end", fill: colMuted})
	}
}

// barsRow draws the row of the requests from y0 down: admitted and refused per bucket, and
// the Remaining line unless the used row has the state.
func (ch *calChart) barsRow(y0 float64) {
	c, sc, tr := ch.c, ch.sc, ch.tr
	py := y0 + rowLabel
	arrived := PerBucket(arrivals(tr.Trace), sc.Bucket, sc.Length())
	admitted := PerBucket(tr.AdmittedAt(), sc.Bucket, sc.Length())
	top := 0
	for _, n := range arrived {
		top = max(top, n)
	}
	if !sc.Used {
		top = max(top, int(tr.Limit))
	}
	yMax := float64(top)
	y := func(v float64) float64 { return py + calPlotH - calPlotH*v/yMax }

	c.text(left, y0+14, "requests", textStyle{size: 13, bold: true})
	c.text(left+plotW, y0+14, fmt.Sprintf("admitted %d, refused %d", tr.Admitted(), tr.Refused()),
		textStyle{size: 12, anchor: "end", fill: colMuted})
	ch.grid(y, top)
	ch.boundaries(py, calPlotH)
	for j := range arrived {
		bx, bw := ch.x(time.Duration(j)*sc.Bucket)+0.5, ch.x(sc.Bucket)-left-1
		a, r := float64(admitted[j]), float64(arrived[j]-admitted[j])
		if a > 0 {
			c.rect(bx, y(a), bw, y(0)-y(a), colAdmitted)
		}
		if r > 0 {
			c.rect(bx, y(a+r), bw, y(a)-y(a+r), colRefused)
		}
	}
	if !sc.Used {
		ch.stateLine(func(s Sample) float64 { return y(float64(s.Remaining)) })
	}
	c.frame(left, py, plotW, calPlotH, colBoundary)
}

// usedRow draws, from y0 down, what each period has used, on a scale whose top is the limit.
func (ch *calChart) usedRow(y0 float64) {
	c, tr := ch.c, ch.tr
	py := y0 + rowLabel
	yMax := float64(tr.Limit)
	y := func(v float64) float64 { return py + calPlotH - calPlotH*v/yMax }
	c.text(left, y0+14, "used in the period: Limit − Remaining of a cost-0 check", textStyle{size: 13, bold: true})
	c.text(left+plotW, y0+14, fmt.Sprintf("Limit %d a period", tr.Limit), textStyle{size: 12, anchor: "end", fill: colMuted})
	ch.grid(y, int(tr.Limit))
	ch.boundaries(py, calPlotH)
	c.line(left, y(yMax), left+plotW, y(yMax), colOver, 1.5, "6 3")
	ch.stateLine(func(s Sample) float64 { return y(float64(tr.Limit - s.Remaining)) })
	c.frame(left, py, plotW, calPlotH, colBoundary)
}

// stateLine draws the samples as a step line: a corner where the value changes.
func (ch *calChart) stateLine(y func(Sample) float64) {
	var state pathData
	samples := ch.tr.Samples
	for k, s := range samples {
		switch {
		case k == 0:
			state.moveTo(ch.x(s.At), y(s))
		case y(s) != y(samples[k-1]):
			state.h(ch.x(s.At))
			state.v(y(s))
		case k == len(samples)-1:
			state.h(ch.x(s.At))
		}
	}
	ch.c.path(&state, colState, 1.5)
}

// clockChanges marks, from y to axisY, each instant the zone's clock changes within the
// picture, with the clock before and after it.
func (ch *calChart) clockChanges(y, axisY float64) {
	for _, t := range ch.changes() {
		x := ch.x(t.Sub(ch.sc.From))
		ch.c.line(x, y, x, axisY, colReleased, 1.5, "")
		before := t.In(time.FixedZone("", offset(t.Add(-time.Nanosecond)))) // on the clock of before
		label := fmt.Sprintf("clocks go from %s to %s", before.Format("15:04"), t.Format("15:04"))
		ch.c.text(x+4, y+14, label, textStyle{size: 11, fill: colReleased})
	}
}

// changes returns the instants within the picture at which the zone's offset changes.
func (ch *calChart) changes() []time.Time {
	var out []time.Time
	for t := ch.sc.From; ; {
		_, end := t.ZoneBounds()
		if end.IsZero() || !end.Before(ch.sc.To) {
			return out
		}
		out = append(out, end.In(ch.sc.From.Location()))
		t = end
	}
}

// offset is the zone offset of t, in seconds.
func offset(t time.Time) int {
	_, off := t.Zone()
	return off
}

// timeAxis labels the time axis under the last row, at axisY, at the scenario's ticks.
func (ch *calChart) timeAxis(axisY float64) {
	c := ch.c
	for _, t := range ch.sc.Ticks() {
		x := ch.x(t.At.Sub(ch.sc.From))
		c.line(x, axisY, x, axisY+4, colMuted, 1, "")
		for i, label := range []string{t.Label, t.Day} {
			anchor := "middle" // or "end", for a label that would pass the picture's right edge
			if x+textWidth(label, 11, false)/2 > width {
				anchor = "end"
			}
			if label != "" {
				c.text(x, axisY+16+14*float64(i), label, textStyle{size: 11, anchor: anchor, fill: colMuted})
			}
		}
	}
	titleY := axisY + 36
	if slices.ContainsFunc(ch.sc.Ticks(), func(t Tick) bool { return t.Day != "" }) {
		titleY += 14
	}
	c.text(left+plotW/2, titleY, ch.sc.Axis, textStyle{size: 12, anchor: "middle"})
}

// legend explains the marks in lines from (x, y), as many as it takes within the plots'
// width, and returns the baseline of its last line.
func (ch *calChart) legend(x, y float64) float64 {
	c := ch.c
	box, stroke := c.legendBox, c.legendStroke
	items := []legendItem{{"admitted", box(colAdmitted)}, {"refused", box(colRefused)}}
	if ch.sc.Used {
		items = append(items, legendItem{"used in the period", stroke(colState, 1.5, "")}, legendItem{"the Limit", stroke(colOver, 1.5, "6 3")})
	} else {
		items = append(items, legendItem{"state: Remaining of a cost-0 check", stroke(colState, 1.5, "")})
	}
	items = append(items, legendItem{"period boundary", stroke(colBoundary, 1, "4 3")})
	if len(ch.changes()) > 0 {
		items = append(items, legendItem{"the clock changes", func(x, y float64) { c.line(x+7, y-10, x+7, y+1, colReleased, 1.5, "") }})
	}
	return c.legendItems(items, x, y)
}

// durationWords writes a bucket or a window as a person does: "minute", "hour", "day", or
// the duration.
func durationWords(d time.Duration) string {
	switch d {
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return strings.TrimSpace(duration(d))
}
