package main

import (
	"strings"
	"testing"
	"time"
)

// An invalid -policy or -keyed-by is named as the user wrote it: the errors used to name a
// place in the document the command makes of the flags ("-policy.json:1:
// rules[0].policies[1].window"), which nobody wrote.
func TestPolicyFlagErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		policies []string
		keyedBy  string
		want     string
	}{
		{[]string{"limit=5,window=1m", "limit=5,window=1x"}, "ip", `-policy "limit=5,window=1x": window: "1x" is not a duration`},
		{[]string{"limit=5,window=1m,algorithm=SlidingCounter"}, "ip", `-policy "limit=5,window=1m,algorithm=SlidingCounter": algorithm: unknown algorithm "SlidingCounter"; want one of fixed_window,`},
		{[]string{"limit=5,window=1m"}, "usr", `-keyed-by "usr": unknown key "usr"`},
		{[]string{"limit=5,window=1m,algorithm=in_flight", "limit=5,window=1m,algorithm=in_flight"}, "ip", `-policy: ratelimit: invalid policy "in-flight-5": two policies have this name`},
	} {
		p := &policyFlags{policies: tc.policies, keyedBy: tc.keyedBy}
		_, err := p.set()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "rules[0]") {
			t.Errorf("%v -keyed-by %s: %v; want an error beginning %s", tc.policies, tc.keyedBy, err, tc.want)
		}
	}
}

// TestPolicyFlagDays: -policy window= reads days as the rules files and rates do; a window
// beyond 366 days names that bound.
func TestPolicyFlagDays(t *testing.T) {
	set, err := (&policyFlags{policies: []string{"name=daily,limit=5,window=1d", "name=weekly,limit=20,window=7d"}, keyedBy: "ip"}).set()
	if err != nil {
		t.Fatal(err)
	}
	if ps := set.Rules()[0].Policies; ps[0].Window != 24*time.Hour || ps[1].Window != 7*24*time.Hour {
		t.Errorf("windows %v and %v; want 24h and 168h", ps[0].Window, ps[1].Window)
	}
	_, err = (&policyFlags{policies: []string{"name=long,limit=5,window=367d"}, keyedBy: "ip"}).set()
	if want := `-policy "name=long,limit=5,window=367d": window: ratelimit: invalid policy "long": Window is 367d; it must be at most 366 days`; err == nil || err.Error() != want {
		t.Errorf("window=367d: %v; want %s", err, want)
	}
}
