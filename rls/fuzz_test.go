package rls

import (
	"context"
	"errors"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// FuzzParseConfig parses any bytes: a configuration, or errors that are each a *ConfigError
// naming the file; never a panic.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(semanticsConfig))
	f.Add([]byte(sampleConfig))
	f.Add([]byte(windowsConfig))
	f.Add([]byte(calendarConfig))
	f.Add([]byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	f.Add([]byte("domain: [\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("domain: d\ndescriptors: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(File{Name: "fuzz.yaml", Data: data})
		if err == nil {
			_ = cfg.Dump()
			return
		}
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var ce *ConfigError
			if !errors.As(e, &ce) || ce.File != "fuzz.yaml" {
				t.Fatalf("error %v is not a *ConfigError of fuzz.yaml", e)
			}
		}
	})
}

// FuzzShouldRateLimit answers any request the wire can carry: a response with a status for
// each descriptor, or InvalidArgument; never a panic.
func FuzzShouldRateLimit(f *testing.F) {
	for _, r := range []*rlsv3.RateLimitRequest{
		request("edge", desc("ip", "1")),
		request("edge", desc("path", "/api/x"), hits(3, desc("tenant", "t"))),
		request("edge", desc("user", "u", "plan", "free")),
		request("edge", limited(2, 2, desc("cookie", "c"))),
		request("edge", desc("two", "v"), desc("gcra", "g")),
		request(""),
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	cfg, err := ParseConfig(File{Name: "test.yaml", Data: []byte(bothConfigs)})
	if err != nil {
		f.Fatal(err)
	}
	clk := fakeclock.New(fakeclock.T0)
	srv, err := NewServer(ratelimit.NewMemoryStore(ratelimit.WithClock(clk)), cfg, WithClock(clk), WithLogger(quietLogger()),
		WithIETFHeaders(11), WithResponseHeaders("", "", ""))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req rlsv3.RateLimitRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		resp, err := srv.ShouldRateLimit(context.Background(), &req)
		switch {
		case err != nil && status.Code(err) != codes.InvalidArgument:
			t.Fatalf("error %v, want InvalidArgument", err)
		case err == nil && len(resp.Statuses) != len(req.Descriptors):
			t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(req.Descriptors))
		}
	})
}
