package loadgen_test

import (
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

func TestMedians(t *testing.T) {
	odd := loadgen.Medians([]loadgen.Figures{{"a": 3, "b": 1}, {"a": 1, "b": 5}, {"a": 2, "b": 9}})
	even := loadgen.Medians([]loadgen.Figures{{"a": 4}, {"a": 1}, {"a": 2}, {"a": 10}})
	if odd["a"] != 2 || odd["b"] != 5 || even["a"] != 3 || len(loadgen.Medians(nil)) != 0 {
		t.Fatalf("medians %v, %v; want a 2 b 5, then a 3 (the mean of the middle two)", odd, even)
	}
}
