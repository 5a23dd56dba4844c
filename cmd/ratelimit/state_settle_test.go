package main

import (
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// settleDoc is a rules document whose rule is charged after the response: it holds an
// estimate of 500 while each request runs (against 2000 a day, so at most 1000 held; a token comes back every 43 s: none while the test runs).
const settleDoc = `version: "1"
rules:
  - name: completions
    key: api_key
    estimate: 500
    settle: reported
    policies:
      - {name: tokens, limit: 2000, window: 24h}
`

// The command reads a rule charged after the response as the engine does: validate accepts it
// and refuses a settle of nothing it knows, at the field; inspect says what a request holds
// and whether one would be admitted now; push -dry-run shows a changed estimate and settle.
func TestRulesSettle(t *testing.T) {
	client, addr := redistest.Standalone(t), redistest.Addr(t)
	prefix, key := redistest.Prefix(t), redistest.Prefix(t)+"rules"
	files := write(t, "limits.yaml", settleDoc, "bad.yaml", strings.Replace(settleDoc, "settle: reported", "settle: tokens", 1), "v2.yaml", `version: "2"
rules:
  - name: completions
    key: api_key
    estimate: 800
    settle: written
    policies:
      - {name: tokens, limit: 2000, window: 24h}
`)
	cli(t, "validate", files[0]).want(t, 0, "limits.yaml: ok, version 1, 1 rule", "")
	cli(t, "validate", files[1]).want(t, 1, "", files[1]+`:6: rules[0].settle: "tokens" is not a settle source`)

	l := firstRuleLimiter(t, client, prefix, settleDoc)
	const identity = "hdr:x-api-key:abc"
	d, err := l.Reserve(t.Context(), identity, 500) // one request running, as the engine's guard holds it
	if err != nil || !d.Allowed {
		t.Fatalf("Reserve: %+v, %v", d, err)
	}
	if err := l.Settle(t.Context(), identity, d, 1800); err != nil { // it cost 1800
		t.Fatal(err)
	}
	cli(t, "inspect", "-redis", addr, "-prefix", prefix, "-file", files[0], "-rule", "completions", identity).want(t, 0,
		"cost      what each request cost, charged once its response is sent (settle: reported); it holds 500 while it runs (estimate: 500)\n"+
			"next      allowed (a request of cost 1)\n          denied now (a request of the rule's estimate, 500: tokens has 200 left)\n", "")

	push := func(args ...string) result {
		return cli(t, append([]string{"push", "-wait", "0", "-redis", addr, "-key", key}, args...)...)
	}
	push(files[0]).want(t, 0, "pushed limits.yaml", "")
	push("-dry-run", files[2]).want(t, 0, `~ completions: estimate: 500 → 800; settle: "reported" → "written"`, "")
}

// inspect's hold of a rule with settle is what Reserve holds: at least a 1,024th of what the
// tightest policy admits while a hold lives, as the core raises it. It said a request of
// estimate 1 holds 1 and is "allowed" where Reserve held 1,024 and denied it.
func TestInspectHoldsTheLeastHold(t *testing.T) {
	const doc = "version: \"1\"\nrules:\n  - name: completions\n    key: api_key\n    estimate: 1\n    settle: reported\n    policies:\n      - {name: tokens, limit: 1048576, window: 24h, algorithm: fixed_window}\n"
	client, addr := redistest.Standalone(t), redistest.Addr(t)
	prefix := redistest.Prefix(t)
	file := write(t, "limits.yaml", doc)[0]
	l := firstRuleLimiter(t, client, prefix, doc)
	const identity = "hdr:x-api-key:abc"
	if d, err := l.AllowN(t.Context(), identity, 1048576-500); err != nil || !d.Allowed {
		t.Fatalf("AllowN: %+v %v", d, err)
	}
	r := cli(t, "inspect", "-redis", addr, "-prefix", prefix, "-file", file, "-rule", "completions", identity)
	r.want(t, 0, "it holds 1024 while it runs", "")
	r.want(t, 0, "denied now (a request of the rule's estimate, 1024: tokens has 500 left)", "")
	if d, err := l.Reserve(t.Context(), identity, 1); err != nil || d.Allowed {
		t.Fatalf("Reserve of 1: %+v %v; the test needs it denied", d, err)
	}
}

// held, inspect's copy of the core's bounds of a hold, agrees with what Reserve holds, for
// each kind of policy list: a window's capacity, a bucket that refills over a hold's life, one
// that refills so often that holds live shorter, a calendar period that ends before a hold's
// life would (a bucket beside it refills less meanwhile), a tighter shadow policy, and estimates below, between and above the bounds.
func TestHeldAgreesWithReserve(t *testing.T) {
	day, err := ratelimit.ParsePolicy("2000/day@UTC")
	if err != nil {
		t.Fatal(err)
	}
	day.Name, day.Algorithm = "tokens", algorithms.FixedWindow{}
	many, err := ratelimit.ParsePolicy("100000000/day@UTC")
	if err != nil {
		t.Fatal(err)
	}
	many.Name, many.Algorithm = "daily", algorithms.FixedWindow{}
	lists := map[string][]ratelimit.Policy{
		"fixed window":     {{Name: "w", Limit: 1 << 20, Window: 24 * time.Hour, Algorithm: algorithms.FixedWindow{}}},
		"small log":        {{Name: "w", Limit: 10, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}},
		"counter, short":   {{Name: "w", Limit: 1 << 20, Window: time.Minute, Algorithm: algorithms.SlidingCounter{}}},
		"token bucket":     {{Name: "b", Limit: 100_000, Window: time.Minute, Burst: 50_000, Algorithm: algorithms.TokenBucket{}}},
		"gcra":             {{Name: "b", Limit: 10_000, Window: time.Second, Burst: 5000}},
		"fast gcra":        {{Name: "b", Limit: 100_000, Window: time.Second, Burst: 10}},
		"leaky bucket":     {{Name: "b", Limit: 1 << 30, Window: time.Hour, Algorithm: algorithms.LeakyBucket{}}},
		"calendar":         {day},
		"calendar, bucket": {many, {Name: "b", Limit: 1_000_000, Window: time.Hour, Burst: 1000, Algorithm: algorithms.TokenBucket{}}},
		"two policies": {{Name: "a", Limit: 1 << 30, Window: time.Hour, Algorithm: algorithms.FixedWindow{}},
			{Name: "b", Limit: 3000, Window: time.Second, Burst: 5000, Algorithm: algorithms.TokenBucket{}}},
		"shadow tighter": {{Name: "a", Limit: 1 << 20, Window: time.Hour, Algorithm: algorithms.FixedWindow{}},
			{Name: "s", Limit: 10, Window: time.Hour, Shadow: true}},
	}
	// 23:58 UTC: the day's period ends 2 minutes on, before a hold's 5 minutes would.
	at := time.Date(2026, 12, 3, 23, 58, 0, 0, time.UTC)
	for name, policies := range lists {
		for _, estimate := range []int64{0, 1, 700, 1 << 40} {
			l, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(at))), policies...)
			if err != nil {
				t.Fatal(err)
			}
			now, err := l.AllowN(t.Context(), "id", 0)
			if err != nil {
				t.Fatal(err)
			}
			d, err := l.Reserve(t.Context(), "id", estimate)
			if err != nil || !d.Allowed {
				t.Fatalf("%s: Reserve of %d: %+v %v", name, estimate, d, err)
			}
			if got := held(estimate, now, at); got != d.Cost {
				t.Errorf("%s, estimate %d: inspect says a request holds %d, Reserve held %d", name, estimate, got, d.Cost)
			}
		}
	}
}
