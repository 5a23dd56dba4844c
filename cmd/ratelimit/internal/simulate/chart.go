package simulate

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A colour-blind-safe palette (Okabe and Ito).
const (
	colAdmitted = "#0072B2" // blue
	colRefused  = "#E69F00" // orange
	colState    = "#222222" // near black
	colReleased = "#CC79A7" // reddish purple
	colOver     = "#D55E00" // vermillion: more than the limit in a window
	colGrid     = "#d9d9d9"
	colBoundary = "#8c8c8c"
	colMuted    = "#555555"
)

// Bucket is the width of a bar: requests are counted per Bucket.
const Bucket = Window / 10

// The chart's geometry, in pixels.
const (
	width      = 960.0
	left       = 64.0 // the plots' left edge: room for the y ticks and the axis title
	right      = 24.0 // margin right of the plots
	legendY    = 99.0 // the baseline of the legend's first line
	legendLine = 18.0 // from one line of the legend to the next
	legendGap  = 23.0 // from the legend's last baseline to the first row
	rowLabel   = 20.0 // above each plot: the algorithm and its figures
	plotH      = 60.0
	stripH     = 14.0 // the strip of release ticks under a shaping algorithm's plot
	stripGap   = 4.0
	rowGap     = 16.0
	bottom     = 46.0 // below the last plot: the time axis
	plotW      = width - left - right
)

// chart is one picture being drawn: a scenario's traces, one row each.
type chart struct {
	c    *canvas
	sc   Scenario
	yMax float64 // the top of every plot's scale
}

// Chart draws what every algorithm made of sc's traffic: one row per trace, sharing the time
// axis, each with its admitted and refused requests per [Bucket] as stacked bars and its state
// (the Remaining of a cost-0 check) as a line; under a shaping algorithm's plot, a tick at
// each time a request is released after its Delay.
func Chart(sc Scenario, traces []Trace) []byte {
	ch := chart{c: &canvas{}, sc: sc, yMax: float64(yTop(sc, traces))}
	c := ch.c
	c.text(left, 30, sc.Title, textStyle{size: 19, bold: true})
	c.text(left, 53, sc.Traffic, textStyle{size: 14})
	c.text(left, 73, fmt.Sprintf("Every algorithm under one policy, Limit %d per %s (Burst %d where it has one), through the memory store on a fake clock.",
		Limit, duration(Window), Burst), textStyle{size: 12, fill: colMuted})
	top := legend(c, left, legendY, anyShapes(traces)) + legendGap

	y0 := top
	for _, tr := range traces {
		ch.row(tr, y0)
		y0 += rowHeight(tr)
	}
	axisY := y0 - rowGap
	ch.timeAxis(axisY)
	c.text(20, top+(axisY-top)/2, fmt.Sprintf("requests per %s (bars) · Remaining (line)", duration(Bucket)),
		textStyle{size: 12, anchor: "middle", rotate: true})
	return c.document(width, axisY+bottom)
}

// rowHeight is the height of tr's row, the gap below it included.
func rowHeight(tr Trace) float64 {
	h := rowLabel + plotH + rowGap
	if shapes(tr.Algorithm) {
		h += stripGap + stripH
	}
	return h
}

// x is the abscissa of time t.
func (ch *chart) x(t time.Duration) float64 {
	return left + plotW*float64(t)/float64(ch.sc.Length)
}

// row draws tr's row from y0 down.
func (ch *chart) row(tr Trace, y0 float64) {
	c := ch.c
	py := y0 + rowLabel // the plot's top
	y := func(v float64) float64 { return py + plotH - plotH*v/ch.yMax }
	rowHeading(c, y0, tr)

	// Grid: the y ticks, then the window boundaries.
	for _, v := range yTicks(int(ch.yMax)) {
		c.line(left, y(float64(v)), left+plotW, y(float64(v)), colGrid, 1, "")
		c.text(left-6, y(float64(v))+3.5, strconv.Itoa(v), textStyle{size: 10, anchor: "end", fill: colMuted})
	}
	ch.boundaries(py, plotH)

	// Bars: admitted below, refused stacked above.
	arrived := PerBucket(arrivals(tr), Bucket, ch.sc.Length)
	admitted := PerBucket(tr.AdmittedAt(), Bucket, ch.sc.Length)
	for j := range arrived {
		bx, bw := ch.x(time.Duration(j)*Bucket)+0.5, ch.x(Bucket)-left-1
		a, r := float64(admitted[j]), float64(arrived[j]-admitted[j])
		if a > 0 {
			c.rect(bx, y(a), bw, y(0)-y(a), colAdmitted)
		}
		if r > 0 {
			c.rect(bx, y(a+r), bw, y(a)-y(a+r), colRefused)
		}
	}

	// The state, a step line through the samples: a corner where it changes.
	var state pathData
	for k, s := range tr.Samples {
		switch {
		case k == 0:
			state.moveTo(ch.x(s.At), y(float64(s.Remaining)))
		case s.Remaining != tr.Samples[k-1].Remaining:
			state.h(ch.x(s.At))
			state.v(y(float64(s.Remaining)))
		case k == len(tr.Samples)-1:
			state.h(ch.x(s.At))
		}
	}
	c.path(&state, colState, 1.5)
	c.frame(left, py, plotW, plotH, colBoundary)

	if shapes(tr.Algorithm) {
		ch.releases(tr, py+plotH+stripGap)
	}
}

// releases draws, in a strip from sy down, a tick at each time an admitted request proceeds.
func (ch *chart) releases(tr Trace, sy float64) {
	c := ch.c
	ch.boundaries(sy, stripH)
	for _, t := range tr.ReleasedAt() {
		if t <= ch.sc.Length {
			c.line(ch.x(t), sy+2, ch.x(t), sy+stripH-2, colReleased, 2, "")
		}
	}
	c.frame(left, sy, plotW, stripH, colBoundary)
	c.text(left-6, sy+stripH-3.5, "released", textStyle{size: 10, anchor: "end", fill: colMuted})
}

// boundaries draws the window boundaries across a band of height h from y.
func (ch *chart) boundaries(y, h float64) {
	for b := Window; b < ch.sc.Length; b += Window {
		ch.c.line(ch.x(b), y, ch.x(b), y+h, colBoundary, 1, "4 3")
	}
}

// timeAxis labels the shared time axis under the last row, at axisY.
func (ch *chart) timeAxis(axisY float64) {
	c := ch.c
	for t := time.Duration(0); t <= ch.sc.Length; t += Window / 2 {
		c.line(ch.x(t), axisY, ch.x(t), axisY+4, colMuted, 1, "")
		c.text(ch.x(t), axisY+16, seconds(t), textStyle{size: 11, anchor: "middle", fill: colMuted})
	}
	c.text(left+plotW/2, axisY+36, "time since the start (s)", textStyle{size: 12, anchor: "middle"})
}

// rowHeading writes a row's algorithm on the left and its figures on the right.
func rowHeading(c *canvas, y0 float64, tr Trace) {
	c.text(left, y0+14, GoName(tr.Algorithm), textStyle{size: 13, bold: true})
	c.spans(left+plotW, y0+14, textStyle{size: 12, anchor: "end", fill: colMuted}, figures(tr)...)
}

// figures are a row's figures: what was admitted and refused, and the most admitted in any
// window, which stands out when it is over the limit.
func figures(tr Trace) []span {
	most := MostWithin(tr.AdmittedAt(), Window)
	runs := []span{
		{text: fmt.Sprintf("admitted %d, refused %d · most admitted in any %s: ", tr.Admitted(), tr.Refused(), duration(Window))},
		{text: strconv.Itoa(most)},
	}
	if most > Limit {
		runs[1] = span{text: fmt.Sprintf("%d (+%d%%)", most, 100*(most-Limit)/Limit), bold: true, fill: colOver}
	}
	if shapes(tr.Algorithm) {
		runs = append(runs, span{text: fmt.Sprintf(" · released: %d", MostWithin(tr.ReleasedAt(), Window))})
	}
	return runs
}

// legendItem is one mark of a legend and its label.
type legendItem struct {
	label string
	mark  func(x, y float64)
}

// legendBox is the mark of a legend item drawn as a box of fill.
func (c *canvas) legendBox(fill string) func(x, y float64) {
	return func(x, y float64) { c.rect(x, y-9, 14, 10, fill) }
}

// legendStroke is the mark of a legend item drawn as a line.
func (c *canvas) legendStroke(col string, w float64, dash string) func(x, y float64) {
	return func(x, y float64) { c.line(x, y-4, x+14, y-4, col, w, dash) }
}

// legendItems draws items in lines from (x, y), as many as it takes within the plots' width,
// and returns the baseline of its last line.
func (c *canvas) legendItems(items []legendItem, x, y float64) float64 {
	start := x
	for _, it := range items {
		w := 19 + textWidth(it.label, 12, false)
		if x > start && x+w > left+plotW {
			x, y = start, y+legendLine
		}
		it.mark(x, y)
		c.text(x+19, y, it.label, textStyle{size: 12})
		x += w + 18
	}
	return y
}

// legend explains the marks in lines from (x, y), as many as it takes within the plots'
// width, and returns the baseline of its last line.
func legend(c *canvas, x, y float64, shaping bool) float64 {
	box, stroke := c.legendBox, c.legendStroke
	items := []legendItem{
		{"admitted", box(colAdmitted)},
		{"refused", box(colRefused)},
		{"state: Remaining of a cost-0 check", stroke(colState, 1.5, "")},
	}
	if shaping {
		items = append(items, legendItem{"released after its Delay (shaping)", func(x, y float64) {
			c.line(x+7, y-10, x+7, y+1, colReleased, 2, "")
		}})
	}
	items = append(items, legendItem{"window boundary", stroke(colBoundary, 1, "4 3")})
	return c.legendItems(items, x, y)
}

// yTop is the top of every row's scale: the capacity, or the most requests that arrive in one
// bucket when that is more.
func yTop(sc Scenario, traces []Trace) int {
	top := Burst
	for _, tr := range traces {
		for _, n := range PerBucket(arrivals(tr), Bucket, sc.Length) {
			top = max(top, n)
		}
	}
	return top
}

// yTicks returns 0, the middle and the top of a scale.
func yTicks(top int) []int {
	if top%2 != 0 {
		return []int{0, top}
	}
	return []int{0, top / 2, top}
}

func arrivals(tr Trace) []time.Duration {
	at := make([]time.Duration, len(tr.Requests))
	for i, r := range tr.Requests {
		at[i] = r.At
	}
	return at
}

func anyShapes(traces []Trace) bool {
	for _, tr := range traces {
		if shapes(tr.Algorithm) {
			return true
		}
	}
	return false
}

// shapes reports whether alg delays the requests it admits.
func shapes(alg algorithms.Algorithm) bool {
	lb, ok := alg.(algorithms.LeakyBucket)
	return ok && lb.Shaping
}

// GoName is the algorithm as a user writes it, its zero fields left out: "FixedWindow{}",
// "LeakyBucket{}", "LeakyBucket{Shaping: true}".
func GoName(alg algorithms.Algorithm) string {
	v := reflect.ValueOf(alg)
	var fields []string
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsZero() {
			fields = append(fields, fmt.Sprintf("%s: %v", v.Type().Field(i).Name, f.Interface()))
		}
	}
	return v.Type().Name() + "{" + strings.Join(fields, ", ") + "}"
}

// seconds writes t in seconds, as briefly as it goes: "0", "0.5", "1".
func seconds(t time.Duration) string {
	return strconv.FormatFloat(t.Seconds(), 'f', -1, 64)
}

// duration writes d as a person does: "1 s", "100 ms".
func duration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}
