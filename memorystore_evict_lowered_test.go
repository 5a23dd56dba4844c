package ratelimit_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// docs/stores.md: "An identity that used half its limit or more is never forgotten."
// The entry's weight is taken from the policy that created it: after the limit is lowered
// (a plan downgrade, same Name, so the count carries over) the identity's 6 of 10 weigh as
// 6 of 100, and it is forgotten and handed a fresh 10.
// At its bound, the memory store weighs an identity's use by the policy that charged it last:
// it weighed it by the one that made its entry, so after a plan lowered from 100 to 10 (the
// same name: the state carries over) 6 of the new 10 weighed 0.06 of the old 100, under half,
// and the identity was forgotten and given a fresh 10 in the same hour.
func TestMemoryStoreWeighsUseByTheLatestPolicy(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(64))
	old := mustNew(t, store, ratelimit.Policy{Name: "plan", Limit: 100, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
	now := mustNew(t, store, ratelimit.Policy{Name: "plan", Limit: 10, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
	allow(t, old, "victim", 1) // created under the old plan
	for range 5 {
		allow(t, now, "victim", 1) // 6 of 10 under the new one: more than half
	}
	for i := range 2000 {
		allow(t, now, "flood-"+strconv.Itoa(i), 1)
	}
	admitted := 0
	for range 20 {
		if allow(t, now, "victim", 1).Allowed {
			admitted++
		}
	}
	if admitted > 4 {
		t.Fatalf("the victim, having used 6 of 10 in the hour, was admitted %d more (total %d of 10): forgotten though it used more than half its limit", admitted, 6+admitted)
	}
}
