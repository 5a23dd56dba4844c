package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(exampletest.Main(m)) }

// burst is the example's short policy: what one client is admitted in a few seconds.
const burst = 5

// dial returns a health client of a running example.
func dial(t *testing.T, inst *exampletest.Instance) healthpb.HealthClient {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(inst.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// check makes a Check call and returns its code, header metadata, RetryInfo delay and trailer.
func check(t *testing.T, c healthpb.HealthClient, md ...string) (codes.Code, metadata.MD, time.Duration, metadata.MD) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	var header, trailer metadata.MD
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	st := status.Convert(err)
	var retry time.Duration
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri.GetRetryDelay().AsDuration()
		}
	}
	return st.Code(), header, retry, trailer
}

// TestExample builds the example and runs it: the limits with the memory store, for unary
// and streaming calls; forwarding metadata ignored; Redis shared by two instances; fail-open
// when Redis is down.
func TestExample(t *testing.T) {
	bin := exampletest.Build(t)

	t.Run("memory store", func(t *testing.T) {
		inst := exampletest.Start(t, bin)
		if !strings.Contains(inst.Log(), "using the memory store") {
			t.Fatalf("the instance does not say it uses the memory store:\n%s", inst.Log())
		}
		c := dial(t, inst)
		for i := range burst {
			code, header, _, _ := check(t, c, "x-forwarded-for", fmt.Sprintf("203.0.113.%d", i))
			if code != codes.OK || header.Get("x-ratelimit-remaining")[0] != strconv.Itoa(burst-1-i) ||
				header.Get("ratelimit-policy")[0] != `"burst";q=5;w=10, "hourly";q=100;w=3600` {
				t.Fatalf("call %d: %v %v, want OK with %d remaining and the IETF fields", i+1, code, header, burst-1-i)
			}
		}
		code, header, retry, trailer := check(t, c)
		if code != codes.ResourceExhausted || retry <= 0 || retry > 10*time.Second || header.Get("retry-after") == nil ||
			trailer.Get("grpc-retry-pushback-ms")[0] != strconv.FormatInt(retry.Milliseconds(), 10) {
			t.Errorf("call %d: %v %v %v %v, want ResourceExhausted with RetryInfo, retry-after and pushback", burst+1, code, retry, header, trailer)
		}
		// A stream draws on the same quota.
		ws, err := c.Watch(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = ws.Recv()
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("Watch: %v, want ResourceExhausted", err)
		}
		if log := inst.Stop(); !strings.Contains(log, "msg=call method=/grpc.health.v1.Health/Check remaining=0 policy=burst") {
			t.Errorf("the log does not tell the decision:\n%s", log)
		}
	})

	t.Run("Redis shared by two instances", func(t *testing.T) {
		env := []string{"REDIS_URL=redis://" + redistest.Addr(t) + "/0", "RATELIMIT_PREFIX=" + redistest.Prefix(t)}
		a, b := exampletest.Start(t, bin, env...), exampletest.Start(t, bin, env...)
		for _, inst := range []*exampletest.Instance{a, b} {
			if !strings.Contains(inst.Log(), "using the Redis store") {
				t.Fatalf("the instance does not say it uses Redis:\n%s", inst.Log())
			}
		}
		clients := []healthpb.HealthClient{dial(t, a), dial(t, b)}
		var got []codes.Code
		for i := range burst + 1 {
			code, _, _, _ := check(t, clients[i%2])
			got = append(got, code)
		}
		if want := "[OK OK OK OK OK ResourceExhausted]"; fmt.Sprint(got) != want {
			t.Errorf("alternating between the instances: got %v, want %s", got, want)
		}
	})

	t.Run("fail-open when Redis is down", func(t *testing.T) {
		inst := exampletest.Start(t, bin, "REDIS_URL=redis://127.0.0.1:1/0")
		c := dial(t, inst)
		var got []codes.Code
		for range burst + 1 {
			code, _, _, _ := check(t, c)
			got = append(got, code)
		}
		if want := "[OK OK OK OK OK OK]"; fmt.Sprint(got) != want {
			t.Errorf("got %v, want every call to pass", got)
		}
		if log := inst.Stop(); !strings.Contains(log, "kind=unavailable") {
			t.Errorf("the log does not say Redis is unavailable:\n%s", log)
		}
	})
}
