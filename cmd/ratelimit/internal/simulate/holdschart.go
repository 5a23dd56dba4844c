package simulate

import (
	"fmt"
	"strconv"
	"time"
)

// The holds chart's colours and geometry, beside the algorithm charts' (chart.go).
const (
	colHeld    = "#56B4E9" // sky blue: estimates held
	colSettled = colState
	holdsPlotH = 120.0
	marksH     = 34.0 // the strip of tries and settles under a plot
	marksGap   = 4.0
	breakGap   = 18.0 // between two stretches of time shown
	markStep   = 6.0  // from one mark to the next of the same instant
)

// holdsChart is the holds picture being drawn.
type holdsChart struct {
	c    *canvas
	sc   HoldsScenario
	yMax float64 // the top of every plot's scale: the most charged in any run, up to whole limits
}

// HoldsChart draws what the limiter made of sc's requests in each run: one row per trace,
// sharing the time axis, each with what the charges of the last minute come to, settled and
// held, as stacked areas against the limit, and under it a strip with a mark at each try,
// admitted or refused, and at each settle. The axis shows sc.Shown side by side.
func HoldsChart(sc HoldsScenario, traces []HoldsTrace) []byte {
	limit, most := sc.Policy.Limit, sc.Policy.Limit
	for _, tr := range traces {
		most = max(most, tr.MostCounted(sc.Policy.Window))
	}
	ch := holdsChart{c: &canvas{}, sc: sc, yMax: float64((most + limit - 1) / limit * limit)}
	c := ch.c
	c.text(left, 30, sc.Title, textStyle{size: 19, bold: true})
	c.text(left, 53, sc.Traffic, textStyle{size: 14})
	muted := textStyle{size: 12, fill: colMuted}
	c.text(left, 73, fmt.Sprintf("One identity, Limit %d per %s, %s (at most %[1]d in any %[2]s), through the memory store on a fake clock.",
		sc.Policy.Limit, durationWords(sc.Policy.Window), GoName(sc.Policy.Algorithm)), muted)
	c.text(left, 90, fmt.Sprintf("A refused request comes back after its Retry-After. The axis leaves out %s s to %s s, where nothing changes.",
		seconds(sc.Shown[0].End), seconds(sc.Shown[1].Start)), muted)
	top := ch.legend(left, legendY+17) + legendGap

	y0 := top
	for _, tr := range traces {
		ch.row(tr, y0)
		y0 += rowLabel + holdsPlotH + marksGap + marksH + rowGap
	}
	axisY := y0 - rowGap
	ch.timeAxis(axisY)
	c.text(20, top+(axisY-top)/2, fmt.Sprintf("tokens charged in the last %s", durationWords(sc.Policy.Window)),
		textStyle{size: 12, anchor: "middle", rotate: true})
	return c.document(width, axisY+bottom)
}

// shownWidth is the width of the plots' stretches together, the gaps between them left out.
func (ch *holdsChart) shownWidth() float64 {
	return plotW - breakGap*float64(len(ch.sc.Shown)-1)
}

// x is the abscissa of time t, and whether t is shown.
func (ch *holdsChart) x(t time.Duration) (float64, bool) {
	var total time.Duration
	for _, s := range ch.sc.Shown {
		total += s.End - s.Start
	}
	x := left
	for _, s := range ch.sc.Shown {
		w := ch.shownWidth() * float64(s.End-s.Start) / float64(total)
		if t >= s.Start && t <= s.End {
			return x + w*float64(t-s.Start)/float64(s.End-s.Start), true
		}
		x += w + breakGap
	}
	return 0, false
}

// xs is the abscissa of a time known to be shown.
func (ch *holdsChart) xs(t time.Duration) float64 {
	x, _ := ch.x(t)
	return x
}

// frames outlines each stretch of a band of height h from y, and draws the marks of the
// break between them.
func (ch *holdsChart) frames(y, h float64) {
	for i, s := range ch.sc.Shown {
		x0, x1 := ch.xs(s.Start), ch.xs(s.End)
		ch.c.frame(x0, y, x1-x0, h, colBoundary)
		if i > 0 {
			mid := x0 - breakGap/2
			for _, dx := range []float64{-2.5, 2.5} {
				ch.c.line(mid+dx-3, y+h/2+5, mid+dx+3, y+h/2-5, colMuted, 1, "")
			}
		}
	}
}

// row draws tr's row from y0 down.
func (ch *holdsChart) row(tr HoldsTrace, y0 float64) {
	c, sc := ch.c, ch.sc
	py := y0 + rowLabel
	y := func(v float64) float64 { return py + holdsPlotH - holdsPlotH*v/ch.yMax }
	c.text(left, y0+14, tr.Mode.Call(sc), textStyle{size: 13, bold: true})
	c.spans(left+plotW, y0+14, textStyle{size: 12, anchor: "end", fill: colMuted}, ch.figures(tr)...)

	for v := int64(0); v <= int64(ch.yMax); v += sc.Policy.Limit {
		for _, s := range sc.Shown {
			c.line(ch.xs(s.Start), y(float64(v)), ch.xs(s.End), y(float64(v)), colGrid, 1, "")
		}
		c.text(left-6, y(float64(v))+3.5, strconv.FormatInt(v, 10), textStyle{size: 10, anchor: "end", fill: colMuted})
	}
	// Settled below, held stacked above, each stretch's as two areas.
	for _, st := range sc.Shown {
		var shown []HoldsSample
		for _, s := range tr.Samples {
			if s.At >= st.Start && s.At <= st.End {
				shown = append(shown, s)
			}
		}
		used := func(s HoldsSample) float64 { return y(float64(s.Used)) }
		both := func(s HoldsSample) float64 { return y(float64(s.Used + s.Held)) }
		floor := func(HoldsSample) float64 { return y(0) }
		c.area(ch.band(shown, floor, used), colAdmitted)
		c.area(ch.band(shown, used, both), colHeld)
	}
	// A minute after the first request, its charges leave the window.
	if x, ok := ch.x(sc.Policy.Window); ok {
		c.line(x, py, x, py+holdsPlotH, colBoundary, 1, "4 3")
	}
	for _, s := range sc.Shown {
		c.line(ch.xs(s.Start), y(float64(sc.Policy.Limit)), ch.xs(s.End), y(float64(sc.Policy.Limit)), colOver, 1.5, "6 3")
	}
	ch.frames(py, holdsPlotH)
	ch.marks(tr, py+holdsPlotH+marksGap)
}

// band is the outline of the area between two step lines through samples, lower and upper:
// along upper, then back along lower. A value holds from its sample to the next.
func (ch *holdsChart) band(samples []HoldsSample, lower, upper func(HoldsSample) float64) *pathData {
	var d pathData
	if len(samples) == 0 {
		return &d
	}
	d.moveTo(ch.xs(samples[0].At), lower(samples[0]))
	d.v(upper(samples[0]))
	for k := 1; k < len(samples); k++ {
		if upper(samples[k]) != upper(samples[k-1]) {
			d.h(ch.xs(samples[k].At))
			d.v(upper(samples[k]))
		}
	}
	last := samples[len(samples)-1]
	d.h(ch.xs(last.At))
	d.v(lower(last))
	for k := len(samples) - 1; k > 0; k-- {
		if lower(samples[k]) != lower(samples[k-1]) {
			d.h(ch.xs(samples[k].At))
			d.v(lower(samples[k-1]))
		}
	}
	d.h(ch.xs(samples[0].At))
	return &d
}

// marks draws, in a strip from sy down, a dot at each try (admitted or refused) and a tick at
// each settle; the tries of one instant stand one above the other.
func (ch *holdsChart) marks(tr HoldsTrace, sy float64) {
	c := ch.c
	if x, ok := ch.x(ch.sc.Policy.Window); ok {
		c.line(x, sy, x, sy+marksH, colBoundary, 1, "4 3")
	}
	base := sy + marksH - 6
	for i, a := range tr.Attempts {
		x, ok := ch.x(a.At)
		if !ok {
			continue
		}
		n := 0 // the tries before this one at its instant
		for j := i - 1; j >= 0 && tr.Attempts[j].At == a.At; j-- {
			n++
		}
		fill := colAdmitted
		if !a.Allowed {
			fill = colRefused
		}
		c.circle(x, base-markStep*float64(n), 2.6, fill)
	}
	for _, at := range tr.Settles {
		if x, ok := ch.x(at); ok {
			c.line(x, sy+3, x, sy+12, colSettled, 1.5, "")
		}
	}
	ch.frames(sy, marksH)
}

// figures are a row's figures: the requests admitted, how many at once, the refusals, the
// most charged in any window, which stands out when it is over the limit, and when a request
// was admitted again after a refusal.
func (ch *holdsChart) figures(tr HoldsTrace) []span {
	limit := ch.sc.Policy.Limit
	most := tr.MostCounted(ch.sc.Policy.Window)
	runs := []span{
		{text: fmt.Sprintf("at most %d at once · %d refused · most in any %s: ", tr.MostInFlight(), tr.Refusals(), durationWords(ch.sc.Policy.Window))},
		{text: strconv.FormatInt(most, 10)},
	}
	if most > limit {
		runs[1] = span{text: fmt.Sprintf("%d (+%d%%)", most, 100*(most-limit)/limit), bold: true, fill: colOver}
	}
	if at := tr.Readmitted(); at >= 0 {
		runs = append(runs, span{text: " · next admitted at " + seconds(at) + " s"})
	}
	return runs
}

// timeAxis labels the shared time axis under the last row, at axisY: every 2 s of each
// stretch.
func (ch *holdsChart) timeAxis(axisY float64) {
	c := ch.c
	for i, s := range ch.sc.Shown {
		for t := s.Start; t <= s.End; t += 2 * time.Second {
			x := ch.xs(t)
			anchor := "middle" // or away from the break, beside the next stretch's label
			switch {
			case t == s.Start && i > 0:
				anchor = "start"
			case t+2*time.Second > s.End && i+1 < len(ch.sc.Shown):
				anchor = "end"
			}
			c.line(x, axisY, x, axisY+4, colMuted, 1, "")
			c.text(x, axisY+16, seconds(t), textStyle{size: 11, anchor: anchor, fill: colMuted})
		}
	}
	c.text(left+plotW/2, axisY+36, "time since the first request (s)", textStyle{size: 12, anchor: "middle"})
}

// legend explains the marks in lines from (x, y) and returns the baseline of its last line.
func (ch *holdsChart) legend(x, y float64) float64 {
	c := ch.c
	box, stroke := c.legendBox, c.legendStroke
	dot := func(fill string) func(x, y float64) {
		return func(x, y float64) { c.circle(x+7, y-4, 2.6, fill) }
	}
	return c.legendItems([]legendItem{
		{"settled (charged)", box(colAdmitted)},
		{"held (an estimate)", box(colHeld)},
		{fmt.Sprintf("the Limit (%d)", ch.sc.Policy.Limit), stroke(colOver, 1.5, "6 3")},
		{"admitted", dot(colAdmitted)},
		{"refused", dot(colRefused)},
		{"settled", func(x, y float64) { c.line(x+7, y-9, x+7, y, colSettled, 1.5, "") }},
		{fmt.Sprintf("a %s after the first request", durationWords(ch.sc.Policy.Window)), stroke(colBoundary, 1, "4 3")},
	}, x, y)
}
