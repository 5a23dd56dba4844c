package rls

import (
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// bothConfigs is semanticsConfig with windowsConfig's descriptors in its domain.
var bothConfigs = semanticsConfig + windowsConfig[len("domain: w\ndescriptors:\n"):]

func headerList(resp *rlsv3.RateLimitResponse) string {
	var parts []string
	for _, h := range resp.ResponseHeadersToAdd {
		parts = append(parts, h.Key+": "+h.Value)
	}
	return strings.Join(parts, " | ")
}

func TestIETFHeaders(t *testing.T) {
	for _, tc := range []struct {
		draft int
		steps []struct {
			req  *rlsv3.RateLimitRequest
			want string
		}
	}{
		{11, []struct {
			req  *rlsv3.RateLimitRequest
			want string
		}{
			{request("edge", desc("cookie", "c")), ""},
			{request("edge", desc("path", "/trial")), ""}, // shadow: left out
			{request("edge", desc("path", "/free")), ""},
			{request("edge", desc("ip", "1")), `RateLimit-Policy: "edge.ip";q=3;w=1 | RateLimit: "edge.ip";r=2;t=1`},
			{request("edge", desc("path", "/api/h"), desc("ip", "1"), desc("path", "/trial")),
				`RateLimit-Policy: "api";q=10;w=60, "edge.ip";q=3;w=1 | RateLimit: "edge.ip";r=1;t=1`},
			{request("edge", desc("two", "v")), `RateLimit-Policy: "pair";q=2;w=1, "pair-2";q=3;w=60 | RateLimit: "pair";r=1;t=1`},
			{request("edge", desc("two", "v"), desc("two", "w")), `RateLimit-Policy: "pair";q=2;w=1, "pair-2";q=3;w=60 | RateLimit: "pair";r=0;t=1`},
			{request("edge", desc("gcra", "g")), `RateLimit-Policy: "edge.gcra";q=1;w=1 | RateLimit: "edge.gcra";r=2;t=1`},
			{request("edge", desc("gcra", "g")), `RateLimit-Policy: "edge.gcra";q=1;w=1 | RateLimit: "edge.gcra";r=1;t=1`},
		}},
		{10, []struct {
			req  *rlsv3.RateLimitRequest
			want string
		}{
			{request("edge", desc("gcra", "g")), `RateLimit-Policy: "edge.gcra";q=1;w=1 | RateLimit: "edge.gcra";r=2;t=1`},
			{request("edge", desc("gcra", "g")), `RateLimit-Policy: "edge.gcra";q=1;w=1 | RateLimit: "edge.gcra";r=1;t=2`}, // fully reset in 2 s
			{request("edge", desc("path", "/api/h")), `RateLimit-Policy: "api";q=10;w=60 | RateLimit: "api";r=9;t=45`},
			{request("edge", limited(5, typev3.RateLimitUnit_HOUR, desc("cookie", "c"))), `RateLimit-Policy: "override";q=5;w=3600 | RateLimit: "override";r=4;t=3585`},
		}},
	} {
		f := newFixture(t, bothConfigs, WithIETFHeaders(tc.draft))
		f.clock.Advance(15 * time.Second)
		for i, s := range tc.steps {
			if got := headerList(f.call(s.req)); got != s.want {
				t.Errorf("draft %d, call %d: %q\nwant %q", tc.draft, i, got, s.want)
			}
		}
	}
	// With WithResponseHeaders, both sets.
	f := newFixture(t, bothConfigs, WithIETFHeaders(11), WithResponseHeaders("", "", ""))
	want := `RateLimit-Limit: 3 | RateLimit-Remaining: 2 | RateLimit-Reset: 1 | RateLimit-Policy: "edge.ip";q=3;w=1 | RateLimit: "edge.ip";r=2;t=1`
	if got := headerList(f.call(request("edge", desc("ip", "1")))); got != want {
		t.Errorf("with WithResponseHeaders: %q\nwant %q", got, want)
	}
}

func TestSFString(t *testing.T) {
	for in, want := range map[string]string{`a.b_/api/*`: `"a.b_/api/*"`, `say "hi"\`: `"say \"hi\"\\"`, "tab\there é": `"tab?here ??"`} {
		if got := sfString(in); got != want {
			t.Errorf("sfString(%q) = %s, want %s", in, got, want)
		}
	}
}
