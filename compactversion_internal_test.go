package ratelimit

import "testing"

// A store with compact state warns of servers before Redis 7.0 (no PEXPIRETIME): which
// versions those are. (The CI's Redis is 7.0: TestCompactStateKeepsTATInExpiry shows no
// warning there.)
func TestBefore7(t *testing.T) {
	for v, want := range map[string]bool{"6.2.14": true, "6.0.0": true, "5.0.7": true, "7.0.15": false, "7.4.1": false, "8.0.0": false, "": false, "x": false} {
		if got := before7(v); got != want {
			t.Errorf("before7(%q) = %v; want %v", v, got, want)
		}
	}
}
