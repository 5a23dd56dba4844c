package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// TestServeKeyCompat runs the command with -key-compat reference and -ietf-headers 11: the
// count is in the reference's key, and the response carries the IETF fields.
func TestServeKeyCompat(t *testing.T) {
	prefix := redistest.Prefix(t)
	r := start(t, noEnv, "-config", exampleConfig, "-redis", redistest.Addr(t), "-timeout", "1m",
		"-key-compat", "reference", "-cache-key-prefix", prefix, "-ietf-headers", "11")
	client := rlsv3.NewRateLimitServiceClient(dial(t, r.grpcAddr))
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{
		{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.9"}}},
	}}
	resp, err := client.ShouldRateLimit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, h := range resp.ResponseHeadersToAdd {
		headers = append(headers, h.Key+": "+h.Value)
	}
	if got, want := strings.Join(headers, " | "), `RateLimit-Policy: "edge.remote_address";q=3;w=60 | RateLimit: "edge.remote_address";r=2;t=60`; got != want {
		t.Errorf("headers %q, want %q", got, want)
	}
	key := prefix + "edge_remote_address_10.0.0.9_" + strconv.FormatInt(fakeclock.T0.Unix(), 10)
	if n, err := redistest.Standalone(t).Get(context.Background(), key).Result(); err != nil || n != "1" {
		t.Errorf("the reference's key %s: %q, %v; want 1", key, n, err)
	}
}

func TestStartRefusedCompat(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-key-compat", "reference"}, "-key-compat reference needs -redis"},
		{[]string{"-key-compat", "theirs"}, `-key-compat "theirs": none or reference`},
		{[]string{"-ietf-headers", "9"}, `-ietf-headers "9": 11`},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"-config", exampleConfig}, tc.args...), noEnv, io.Discard, &stderr, nil)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
