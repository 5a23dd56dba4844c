package loadgen

import "slices"

// Figures maps a figure's name ("lat.gcra1", "tail.gin.p99.ours") to its value: one round of a
// measuring program.
type Figures map[string]float64

// Medians returns the median of each figure over the rounds (of an even count, the mean of the
// middle two). A figure missing from a round is taken as 0 there.
func Medians(rounds []Figures) Figures {
	med := Figures{}
	if len(rounds) == 0 {
		return med
	}
	for k := range rounds[0] {
		var vs []float64
		for _, f := range rounds {
			vs = append(vs, f[k])
		}
		slices.Sort(vs)
		if n := len(vs); n%2 == 1 {
			med[k] = vs[n/2]
		} else {
			med[k] = (vs[n/2-1] + vs[n/2]) / 2
		}
	}
	return med
}
