package main

import (
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
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

	set, err := rules.Parse("limits.yaml", []byte(settleDoc))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), set.Rules()[0].Policies...)
	if err != nil {
		t.Fatal(err)
	}
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
