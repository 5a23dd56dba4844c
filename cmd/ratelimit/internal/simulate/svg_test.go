package simulate

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {-0.001, "0"}, {1, "1"}, {1.5, "1.5"}, {1.25, "1.25"}, {1.234, "1.23"}, {-2.5, "-2.5"}, {960, "960"},
	} {
		if got := num(tc.f); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestTextIsEscaped(t *testing.T) {
	var c canvas
	c.spans(0, 0, textStyle{size: 10}, span{text: "a < b & c"}, span{text: "> d", bold: true})
	want := `<text x="0" y="0" font-size="10">a &lt; b &amp; c<tspan font-weight="bold">&gt; d</tspan></text>` + "\n"
	if got := c.b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if doc := c.document(10, 20); !bytes.HasPrefix(doc, []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="20" viewBox="0 0 10 20"`)) {
		t.Errorf("document starts %q", doc[:80])
	}
}

func TestGoName(t *testing.T) {
	for _, tc := range []struct {
		alg  algorithms.Algorithm
		want string
	}{
		{algorithms.FixedWindow{}, "FixedWindow{}"},
		{algorithms.GCRA{}, "GCRA{}"},
		{algorithms.LeakyBucket{}, "LeakyBucket{}"},
		{algorithms.LeakyBucket{Shaping: true}, "LeakyBucket{Shaping: true}"},
	} {
		if got := GoName(tc.alg); got != tc.want {
			t.Errorf("GoName(%#v) = %q, want %q", tc.alg, got, tc.want)
		}
	}
}

// TestHeadingsFit: in every row the algorithm's name and its figures, estimated on the wide
// side, leave room between them.
func TestHeadingsFit(t *testing.T) {
	for _, sc := range Scenarios() {
		traces, err := RunAll(context.Background(), sc, Memory)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range traces {
			w := textWidth(GoName(tr.Algorithm), 13, true) + 24
			for _, r := range figures(tr) {
				w += textWidth(r.text, 12, r.bold)
			}
			if w > plotW {
				t.Errorf("%s, %s: the heading takes %.0f px of %.0f", sc.Name, GoName(tr.Algorithm), w, plotW)
			}
		}
	}
}

// TestCalendarLabelsFit: in every calendar picture each period's name, estimated on the wide
// side, fits within its bracket.
func TestCalendarLabelsFit(t *testing.T) {
	scenarios, err := CalendarScenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		tr, err := RunCalendar(context.Background(), sc, Memory)
		if err != nil {
			t.Fatal(err)
		}
		var c canvas
		ch := calChart{c: &c, sc: sc, tr: tr}
		for i, p := range tr.Periods {
			s := ch.clip(p)
			name, standsOut := sc.Period(sc.From.Add(p.Start), sc.From.Add(p.End))
			w := textWidth(fmt.Sprintf("%s · admitted %d", name, tr.AdmittedIn()[i]), 12, standsOut)
			if room := ch.x(s.End) - ch.x(s.Start) - 4; w > room {
				t.Errorf("%s, period %d: its name takes %.0f px of %.0f", sc.Name, i, w, room)
			}
		}
	}
}
