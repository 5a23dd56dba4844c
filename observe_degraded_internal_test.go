package ratelimit

import (
	"slices"
	"testing"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// The features a store reports are the ones observe names, which the metrics modules make
// series of: a feature missing there would be reported and counted nowhere.
func TestDegradationsNamed(t *testing.T) {
	reported := []string{degradedMergedChecks, degradedCompactExpiry, degradedDenialCache, degradedFunctions, degradedQuotaLeases}
	if got := observe.Degradations(); !slices.Equal(got, reported) {
		t.Errorf("observe.Degradations() = %v; the store reports %v", got, reported)
	}
}
