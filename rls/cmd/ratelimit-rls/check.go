package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// check asks a server whether a request of DOMAIN with the descriptors given (each
// key=value,key=value) may pass, as Envoy would, and prints the answer: the overall code,
// then a line per descriptor. It exits 0 when the answer is OK, 1 when it is OVER_LIMIT or the
// call failed, 2 on a usage error.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ratelimit-rls check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "localhost:8081", "the server's gRPC address")
	hits := fs.Uint("hits", 0, "the request's hits_addend (0: 1)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ratelimit-rls check [-addr host:port] [-hits N] DOMAIN KEY=VALUE[,KEY=VALUE...]...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 2 {
		fs.Usage()
		return 2
	}
	req := &rlsv3.RateLimitRequest{Domain: fs.Arg(0), HitsAddend: uint32(*hits)}
	for _, d := range fs.Args()[1:] {
		desc := &rlcommon.RateLimitDescriptor{}
		for _, kv := range strings.Split(d, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				fmt.Fprintf(stderr, "ratelimit-rls check: %q: a descriptor is KEY=VALUE[,KEY=VALUE...]\n", d)
				return 2
			}
			desc.Entries = append(desc.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: k, Value: v})
		}
		req.Descriptors = append(req.Descriptors, desc)
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(stderr, "ratelimit-rls check:", err)
		return 1
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, req)
	if err != nil {
		fmt.Fprintln(stderr, "ratelimit-rls check:", err)
		return 1
	}
	fmt.Fprintln(stdout, resp.OverallCode)
	for i, st := range resp.Statuses {
		fmt.Fprintf(stdout, "  %s: %s", fs.Arg(1+i), st.Code)
		if l := st.CurrentLimit; l != nil {
			fmt.Fprintf(stdout, " limit=%d/%s remaining=%d reset=%s", l.RequestsPerUnit, strings.ToLower(l.Unit.String()),
				st.LimitRemaining, st.DurationUntilReset.AsDuration())
		}
		fmt.Fprintln(stdout)
	}
	if resp.OverallCode != rlsv3.RateLimitResponse_OK {
		return 1
	}
	return 0
}
