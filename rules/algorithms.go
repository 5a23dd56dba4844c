package rules

import "github.com/a7d3e0dd/ratelimit/algorithms"

// defaultAlgorithm is the algorithm of a policy that names none, as in ratelimit.Policy.
var defaultAlgorithm algorithms.Algorithm = algorithms.GCRA{}

// calendarAlgorithm is the algorithm of a calendar policy (one with a period): the one the
// core counts calendar periods with, which ratelimit.Policy gives a Period whose Algorithm is
// nil. The rules name it rather than leave it nil, so that every policy of a Rule has one.
var calendarAlgorithm algorithms.Algorithm = algorithms.FixedWindow{}

// algorithmNamed returns the algorithm whose Name is name. The names are the core's own
// (algorithms.All), so an algorithm added to the core is known here at once.
func algorithmNamed(name string) (algorithms.Algorithm, bool) {
	for _, a := range algorithms.All() {
		if a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

// algorithmNames lists the names algorithmNamed knows, in the core's order.
func algorithmNames() []string {
	var names []string
	for _, a := range algorithms.All() {
		names = append(names, a.Name())
	}
	return names
}
