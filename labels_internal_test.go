package ratelimit

import (
	"slices"
	"testing"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// The labels this package reports are the ones package observe lists, for the metrics modules
// to pre-create their series from.
func TestLabelsAreObserves(t *testing.T) {
	if got := keyFallbackReasons[:]; !slices.Equal(got, observe.KeyFallbackReasons()) {
		t.Errorf("key fallback reasons %v; observe lists %v", got, observe.KeyFallbackReasons())
	}
	var labels []string
	for _, k := range []*storeKind{kindUnavailable, kindTimeout, kindBreakerOpen, kindBusy, kindOOM, kindReadOnly, kindScript, kindOther} {
		labels = append(labels, k.label)
	}
	if !slices.Equal(labels, observe.ErrorKinds()) {
		t.Errorf("store error kinds %v; observe lists %v", labels, observe.ErrorKinds())
	}
	if len(kinds) != len(labels) {
		t.Errorf("%d kinds by label; want %d", len(kinds), len(labels))
	}
}
