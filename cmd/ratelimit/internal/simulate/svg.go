package simulate

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// canvas writes an SVG document by hand. Every number is written in one fixed format and
// every element in the order it is drawn, so the same picture is always the same bytes. The
// zero canvas is empty and ready to draw on.
type canvas struct {
	b bytes.Buffer
}

// fontFamily is the pictures' typeface: the first one the viewer has.
const fontFamily = "Helvetica, Arial, DejaVu Sans, sans-serif"

// document returns the SVG document of w × h pixels holding what was drawn, on a white
// ground, so it reads the same on a dark page.
func (c *canvas) document(w, h float64) []byte {
	var doc bytes.Buffer
	fmt.Fprintf(&doc, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %[1]s %[2]s" font-family="%s">`+"\n",
		num(w), num(h), fontFamily)
	fmt.Fprintf(&doc, `<rect width="%s" height="%s" fill="#ffffff"/>`+"\n", num(w), num(h))
	doc.Write(c.b.Bytes())
	doc.WriteString("</svg>\n")
	return doc.Bytes()
}

// rect fills a rectangle.
func (c *canvas) rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", num(x), num(y), num(w), num(h), fill)
}

// frame outlines a rectangle.
func (c *canvas) frame(x, y, w, h float64, stroke string) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="%s"/>`+"\n", num(x), num(y), num(w), num(h), stroke)
}

// circle fills a circle of radius r about (x, y).
func (c *canvas) circle(x, y, r float64, fill string) {
	fmt.Fprintf(&c.b, `<circle cx="%s" cy="%s" r="%s" fill="%s"/>`+"\n", num(x), num(y), num(r), fill)
}

// line draws a straight line; dash is a stroke-dasharray, or "" for a solid line.
func (c *canvas) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
		num(x1), num(y1), num(x2), num(y2), stroke, num(width), dashAttr(dash))
}

// path draws an open path through the commands of d, on a white halo that sets it off from
// the bars beneath.
func (c *canvas) path(d *pathData, stroke string, width float64) {
	for _, pass := range []struct {
		stroke string
		width  float64
	}{{"#ffffff", width + 2.5}, {stroke, width}} {
		fmt.Fprintf(&c.b, `<path d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"/>`+"\n",
			d.b.String(), pass.stroke, num(pass.width))
	}
}

// area fills the closed outline d.
func (c *canvas) area(d *pathData, fill string) {
	fmt.Fprintf(&c.b, `<path d="%sZ" fill="%s"/>`+"\n", d.b.String(), fill)
}

// textStyle is how a text is set.
type textStyle struct {
	size   float64
	anchor string // "start" (the default), "middle" or "end"
	bold   bool
	fill   string // default black
	rotate bool   // a quarter turn anticlockwise about (x, y), for a vertical axis
}

// text sets s with its baseline at y.
func (c *canvas) text(x, y float64, s string, st textStyle) {
	c.spans(x, y, st, span{text: s})
}

// span is a run of text set apart from the rest of its line.
type span struct {
	text string
	bold bool
	fill string // default: the line's
}

// spans sets one line made of runs, with its baseline at y: one text element, so the runs
// never overlap whatever the font.
func (c *canvas) spans(x, y float64, st textStyle, runs ...span) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" font-size="%s"`, num(x), num(y), num(st.size))
	if st.anchor != "" && st.anchor != "start" {
		fmt.Fprintf(&c.b, ` text-anchor="%s"`, st.anchor)
	}
	if st.bold {
		c.b.WriteString(` font-weight="bold"`)
	}
	if st.fill != "" {
		fmt.Fprintf(&c.b, ` fill="%s"`, st.fill)
	}
	if st.rotate {
		fmt.Fprintf(&c.b, ` transform="rotate(-90 %s %s)"`, num(x), num(y))
	}
	c.b.WriteString(">")
	for _, r := range runs {
		if !r.bold && r.fill == "" {
			escape(&c.b, r.text)
			continue
		}
		c.b.WriteString("<tspan")
		if r.bold {
			c.b.WriteString(` font-weight="bold"`)
		}
		if r.fill != "" {
			fmt.Fprintf(&c.b, ` fill="%s"`, r.fill)
		}
		c.b.WriteString(">")
		escape(&c.b, r.text)
		c.b.WriteString("</tspan>")
	}
	c.b.WriteString("</text>\n")
}

// pathData builds the d attribute of a path.
type pathData struct{ b strings.Builder }

func (p *pathData) moveTo(x, y float64) { fmt.Fprintf(&p.b, "M%s %s", num(x), num(y)) }
func (p *pathData) h(x float64)         { fmt.Fprintf(&p.b, "H%s", num(x)) }
func (p *pathData) v(y float64)         { fmt.Fprintf(&p.b, "V%s", num(y)) }

// num writes a coordinate with at most two decimals and no trailing zeros.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

// escape writes s as XML character data.
func escape(b *bytes.Buffer, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
}

// textWidth estimates the width of s set at size, on the wide side (DejaVu Sans), to lay out
// texts that must not meet.
func textWidth(s string, size float64, bold bool) float64 {
	em := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("il.,:;'|!()[]{}", r):
			em += 0.34
		case r == ' ':
			em += 0.32
		case r >= 'A' && r <= 'Z', r == 'm', r == 'w', r == '×', r == '—':
			em += 0.78
		default:
			em += 0.62
		}
	}
	if bold {
		em *= 1.1
	}
	return em * size
}
