package observe

import (
	"strconv"
	"sync"
	"testing"
)

// Get makes a name's series once, however many goroutines ask at once, and at most
// MaxPolicies of them: the names beyond share OtherPolicy's.
func TestPolicies(t *testing.T) {
	var mu sync.Mutex
	made := map[string]int{}
	p := Policies[string]{New: func(label string) *string {
		mu.Lock()
		made[label]++
		mu.Unlock()
		return &label
	}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range MaxPolicies + 10 {
				name := "p" + strconv.Itoa(i)
				if got := *p.Get(name); got != name && got != OtherPolicy {
					t.Errorf("Get(%q) = %q", name, got)
				}
			}
		}()
	}
	wg.Wait()
	if len(made) != MaxPolicies+1 {
		t.Errorf("%d labels made; want %d names and %q", len(made), MaxPolicies, OtherPolicy)
	}
	for label, n := range made {
		if n != 1 {
			t.Errorf("label %q made %d times", label, n)
		}
	}
	if got := *p.Get("p0"); got != "p0" {
		t.Errorf("a known name after the bound: %q", got)
	}
	seen := 0
	p.Each(func(*string) { seen++ })
	if seen != MaxPolicies+1 {
		t.Errorf("Each saw %d series; want %d", seen, MaxPolicies+1)
	}
}
