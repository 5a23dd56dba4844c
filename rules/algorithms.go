package rules

import (
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// defaultAlgorithm is the algorithm of a policy that names none, as in ratelimit.Policy.
var defaultAlgorithm algorithms.Algorithm = algorithms.GCRA{}

// algorithmNamed returns the algorithm whose Name is name. The names are the core's own, read
// from its registry of algorithms, so an algorithm added to the core is known here at once.
func algorithmNamed(name string) (algorithms.Algorithm, bool) {
	for _, v := range algo.Values() {
		if a, ok := v.(algorithms.Algorithm); ok && a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

// algorithmNames lists the names algorithmNamed knows, in the core's order.
func algorithmNames() []string {
	var names []string
	for _, v := range algo.Values() {
		if a, ok := v.(algorithms.Algorithm); ok {
			names = append(names, a.Name())
		}
	}
	return names
}
