package rls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// desc makes a descriptor of key, value pairs.
func desc(kv ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// hits sets a descriptor's own hits_addend.
func hits(n uint64, d *rlcommon.RateLimitDescriptor) *rlcommon.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// limited sets a request-supplied limit on a descriptor.
func limited(perUnit uint32, unit typev3.RateLimitUnit, d *rlcommon.RateLimitDescriptor) *rlcommon.RateLimitDescriptor {
	d.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: perUnit, Unit: unit}
	return d
}

func request(domain string, ds ...*rlcommon.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fixture is a server of a configuration over a memory store on a fake clock at T0.
type fixture struct {
	t     *testing.T
	clock *fakeclock.Clock
	srv   *Server
}

func newFixture(t *testing.T, yaml string, opts ...Option) *fixture {
	t.Helper()
	return newFixtureOn(t, memoryStore, yaml, opts...)
}

// A store maker makes a store on a clock, for one test.
type storeMaker func(t *testing.T, clk ratelimit.Clock) ratelimit.Store

func memoryStore(_ *testing.T, clk ratelimit.Clock) ratelimit.Store {
	return ratelimit.NewMemoryStore(ratelimit.WithClock(clk))
}

// stores are the stores every semantics test runs on (redis_test.go adds Redis).
var stores = []struct {
	name string
	make storeMaker
}{{"memory", memoryStore}}

func newFixtureOn(t *testing.T, store storeMaker, yaml string, opts ...Option) *fixture {
	t.Helper()
	return newFixtureAt(t, store, fakeclock.T0, yaml, opts...)
}

// newFixtureAt is newFixtureOn with the clock at start.
func newFixtureAt(t *testing.T, store storeMaker, start time.Time, yaml string, opts ...Option) *fixture {
	t.Helper()
	cfg, err := ParseConfig(File{Name: "test.yaml", Data: []byte(yaml)})
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(start)
	// No deadline of the server's on a busy machine's Redis: the fail-fast tests have theirs.
	opts = append([]Option{WithClock(clk), WithLogger(quietLogger()), WithTimeout(time.Minute)}, opts...)
	srv, err := NewServer(store(t, clk), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, clock: clk, srv: srv}
}

func (f *fixture) call(req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
	f.t.Helper()
	resp, err := f.srv.ShouldRateLimit(context.Background(), req)
	if err != nil {
		f.t.Fatalf("ShouldRateLimit: %v", err)
	}
	return resp
}

// summary writes a response as "OVERALL: CODE remaining/limit reset, ...", the limit as
// perUnit/UNIT, "-" for none.
func summary(resp *rlsv3.RateLimitResponse) string {
	var b strings.Builder
	b.WriteString(resp.OverallCode.String() + ":")
	for _, st := range resp.Statuses {
		fmt.Fprintf(&b, " %s", st.Code)
		if st.CurrentLimit == nil {
			fmt.Fprintf(&b, " %d/-", st.LimitRemaining)
		} else {
			fmt.Fprintf(&b, " %d/%d/%s", st.LimitRemaining, st.CurrentLimit.RequestsPerUnit, st.CurrentLimit.Unit)
		}
		if st.DurationUntilReset != nil {
			fmt.Fprintf(&b, " %v", st.DurationUntilReset.AsDuration())
		}
		b.WriteString(",")
	}
	return strings.TrimSuffix(b.String(), ",")
}

const semanticsConfig = `domain: edge
descriptors:
  - key: ip
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 10, name: api}
  - key: path
    value: /trial
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /free
    rate_limit: {unlimited: true}
  - key: path
    value: /closed
    rate_limit: {unit: hour, requests_per_unit: 0}
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 5, replaces: [{name: api}]}
  - key: quota
    quota_mode: true
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: user
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: month, requests_per_unit: 2}
`

// TestShouldRateLimit runs calls in turn on one server, each with the response it must get.
func TestShouldRateLimit(t *testing.T) {
	type step struct {
		advance time.Duration // moves the clock before the call
		req     *rlsv3.RateLimitRequest
		want    string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"unknown domain", []step{
			{0, request("nowhere", desc("ip", "1")), "OK: OK 0/-"},
		}},
		{"no rule", []step{
			{0, request("edge", desc("cookie", "x"), desc("ip", "1", "port", "80"), desc("user", "u")), "OK: OK 0/-, OK 0/-, OK 0/-"},
		}},
		{"a window fills and resets", []step{
			{0, request("edge", desc("ip", "1")), "OK: OK 2/3/SECOND 1s"},
			{250 * time.Millisecond, request("edge", desc("ip", "1")), "OK: OK 1/3/SECOND 1s"},
			{0, request("edge", desc("ip", "1")), "OK: OK 0/3/SECOND 1s"},
			{0, request("edge", desc("ip", "1")), "OVER_LIMIT: OVER_LIMIT 0/3/SECOND 1s"},
			{0, request("edge", desc("ip", "2")), "OK: OK 2/3/SECOND 1s"}, // another value, another count
			{750 * time.Millisecond, request("edge", desc("ip", "1")), "OK: OK 2/3/SECOND 1s"},
		}},
		{"reset in whole seconds", []step{
			{20*time.Second + 500*time.Millisecond, request("edge", desc("path", "/api/x")), "OK: OK 9/10/MINUTE 40s"},
			{0, request("edge", desc("user", "u", "plan", "free")), "OK: OK 1/2/MONTH 97h59m40s"},
		}},
		{"statuses in request order, OVER_LIMIT if any is", []step{
			{0, request("edge", desc("ip", "1"), hits(3, desc("ip", "2"))), "OK: OK 2/3/SECOND 1s, OK 0/3/SECOND 1s"},
			{0, request("edge", desc("path", "/api/a"), desc("ip", "2"), desc("cookie", "c")), "OVER_LIMIT: OK 9/10/MINUTE 1m0s, OVER_LIMIT 0/3/SECOND 1s, OK 0/-"},
		}},
		{"hits_addend", []step{
			{0, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{desc("path", "/api/a")}, HitsAddend: 4}, "OK: OK 6/10/MINUTE 1m0s"},
			{0, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{hits(2, desc("path", "/api/a"))}, HitsAddend: 4}, "OK: OK 4/10/MINUTE 1m0s"},
			{0, request("edge", hits(0, desc("path", "/api/a"))), "OK: OK 4/10/MINUTE 1m0s"}, // 0: a check, counting nothing
			{0, request("edge", desc("path", "/api/a")), "OK: OK 3/10/MINUTE 1m0s"},          // none: 1
		}},
		{"a denied hit counts nothing", []step{
			{0, request("edge", hits(8, desc("path", "/api/b"))), "OK: OK 2/10/MINUTE 1m0s"},
			{0, request("edge", hits(5, desc("path", "/api/b"))), "OVER_LIMIT: OVER_LIMIT 2/10/MINUTE 1m0s"},
			{0, request("edge", hits(2, desc("path", "/api/b"))), "OK: OK 0/10/MINUTE 1m0s"},
			{0, request("edge", hits(0, desc("path", "/api/b"))), "OK: OK 0/10/MINUTE 1m0s"},
			{0, request("edge", hits(11, desc("path", "/api/c"))), "OVER_LIMIT: OVER_LIMIT 10/10/MINUTE 1m0s"}, // more than the limit
		}},
		{"shadow mode counts and never denies", []step{
			{0, request("edge", desc("path", "/trial")), "OK: OK 1/2/MINUTE 1m0s"},
			{0, request("edge", desc("path", "/trial")), "OK: OK 0/2/MINUTE 1m0s"},
			{0, request("edge", desc("path", "/trial")), "OK: OK 0/2/MINUTE 1m0s"},
		}},
		{"unlimited", []step{
			{0, request("edge", desc("path", "/free"), desc("path", "/free")), fmt.Sprintf("OK: OK %d/-, OK %d/-", uint32(math.MaxUint32), uint32(math.MaxUint32))},
		}},
		{"zero requests per unit", []step{
			{90 * time.Second, request("edge", desc("path", "/closed")), "OVER_LIMIT: OVER_LIMIT 0/0/HOUR 58m30s"},
		}},
		{"replaces", []step{
			{0, request("edge", desc("path", "/api/r"), desc("tenant", "t")), "OK: OK 0/-, OK 4/5/HOUR 1h0m0s"},
			{0, request("edge", desc("path", "/api/r")), "OK: OK 9/10/MINUTE 1m0s"}, // the replaced limit was not counted
		}},
		{"quota mode", []step{ // T0 is 22:00 UTC
			{0, request("edge", desc("quota", "q")), "OK: OK 0/1/DAY 2h0m0s"},
			{0, request("edge", desc("quota", "q"), desc("quota", "r")), "OK: OVER_LIMIT 0/1/DAY 2h0m0s, OK 0/1/DAY 2h0m0s"},
			{0, request("edge", desc("quota", "q"), desc("quota", "r"), desc("ip", "9")), "OVER_LIMIT: OVER_LIMIT 0/1/DAY 2h0m0s, OVER_LIMIT 0/1/DAY 2h0m0s, OK 2/3/SECOND 1s"}, // every quota descriptor over
		}},
		{"request-supplied limit", []step{
			{0, request("edge", limited(2, typev3.RateLimitUnit_MINUTE, desc("cookie", "c"))), "OK: OK 1/2/MINUTE 1m0s"},
			{0, request("edge", limited(2, typev3.RateLimitUnit_MINUTE, desc("cookie", "c"))), "OK: OK 0/2/MINUTE 1m0s"},
			{0, request("edge", limited(2, typev3.RateLimitUnit_MINUTE, desc("cookie", "c"))), "OVER_LIMIT: OVER_LIMIT 0/2/MINUTE 1m0s"},
			{0, request("edge", limited(5, typev3.RateLimitUnit_MINUTE, desc("cookie", "c"))), "OK: OK 2/5/MINUTE 1m0s"}, // one count per descriptor and unit
			{0, request("edge", limited(1, typev3.RateLimitUnit_HOUR, desc("ip", "7"))), "OK: OK 0/1/HOUR 1h0m0s"},       // over the file's rule
			{0, request("edge", desc("ip", "7")), "OK: OK 2/3/SECOND 1s"},                                                // which has its own count
			{0, request("edge", limited(0, typev3.RateLimitUnit_SECOND, desc("cookie", "z"))), "OVER_LIMIT: OVER_LIMIT 0/0/SECOND 1s"},
			{0, request("nowhere", limited(1, typev3.RateLimitUnit_SECOND, desc("cookie", "z"))), "OK: OK 0/-"},
		}},
	} {
		for _, store := range stores {
			t.Run(store.name+"/"+tc.name, func(t *testing.T) {
				f := newFixtureOn(t, store.make, semanticsConfig)
				for i, s := range tc.steps {
					f.clock.Advance(s.advance)
					if got := summary(f.call(s.req)); got != s.want {
						t.Errorf("step %d: got  %s\n        want %s", i, got, s.want)
					}
				}
			})
		}
	}
}

func TestGlobalShadowMode(t *testing.T) {
	f := newFixture(t, semanticsConfig, WithGlobalShadowMode())
	f.call(request("edge", hits(3, desc("ip", "1"))))
	if got, want := summary(f.call(request("edge", desc("ip", "1")))), "OK: OVER_LIMIT 0/3/SECOND 1s"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestCurrentLimitName(t *testing.T) {
	f := newFixture(t, semanticsConfig)
	resp := f.call(request("edge", desc("path", "/api/n")))
	if got := resp.Statuses[0].CurrentLimit.Name; got != "api" {
		t.Errorf("current_limit.name = %q, want api", got)
	}
}

func TestSetConfigKeepsCounts(t *testing.T) {
	f := newFixture(t, semanticsConfig)
	f.call(request("edge", hits(2, desc("ip", "1"))))
	raised, err := ParseConfig(File{Name: "new.yaml", Data: []byte(strings.Replace(semanticsConfig, "requests_per_unit: 3", "requests_per_unit: 5", 1))})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.SetConfig(raised); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(f.call(request("edge", desc("ip", "1")))), "OK: OK 2/5/SECOND 1s"; got != want {
		t.Errorf("after raising 3 to 5 with 2 counted: got %s, want %s", got, want)
	}
	if got := f.srv.Config(); got != raised {
		t.Errorf("Config() is not the configuration set")
	}
}

func TestBadRequests(t *testing.T) {
	long := strings.Repeat("x", MaxEntryBytes+1)
	many := func(n int) []*rlcommon.RateLimitDescriptor {
		ds := make([]*rlcommon.RateLimitDescriptor, n)
		for i := range ds {
			ds[i] = desc("ip", "1")
		}
		return ds
	}
	entries := func(n int) *rlcommon.RateLimitDescriptor {
		kv := make([]string, 0, 2*n)
		for range n {
			kv = append(kv, "k", "v")
		}
		return desc(kv...)
	}
	for _, tc := range []struct {
		name string
		req  *rlsv3.RateLimitRequest
		want string // in the message
	}{
		{"nil", nil, "no request"},
		{"empty domain", request("", desc("ip", "1")), "domain must not be empty"},
		{"no descriptors", request("edge"), "descriptor list must not be empty"},
		{"too many descriptors", &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: many(MaxDescriptors + 1)}, "257 descriptors: at most 256"},
		{"too many entries", request("edge", entries(MaxEntries+1)), "65 entries: at most 64"},
		{"empty descriptor", request("edge", desc("ip", "1"), desc()), "descriptor 1 has no entries"},
		{"nil descriptor", request("edge", nil), "descriptor 0 has no entries"},
		{"nil entry", request("edge", &rlcommon.RateLimitDescriptor{Entries: []*rlcommon.RateLimitDescriptor_Entry{nil}}), "entry 0 is empty"},
		{"long key", request("edge", desc(long, "v")), "more than 4096 bytes"},
		{"long value", request("edge", desc("ip", long)), "more than 4096 bytes"},
		{"long domain", request(long, desc("ip", "1")), "the domain has 4097 bytes"},
		{"unknown override unit", request("edge", limited(1, typev3.RateLimitUnit_UNKNOWN, desc("ip", "1"))), "unit UNKNOWN is not one of"},
		{"override unit out of range", request("edge", limited(1, typev3.RateLimitUnit(99), desc("ip", "1"))), "is not one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, semanticsConfig)
			resp, err := f.srv.ShouldRateLimit(context.Background(), tc.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want InvalidArgument with %q", resp, err, tc.want)
			}
		})
	}
	// At the bounds, a request is answered.
	f := newFixture(t, semanticsConfig)
	at := strings.Repeat("x", MaxEntryBytes)
	ds := append(many(MaxDescriptors-1), desc(at, at))
	if _, err := f.srv.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: ds}); err != nil {
		t.Errorf("at the bounds: %v", err)
	}
	if _, err := f.srv.ShouldRateLimit(context.Background(), request("edge", entries(MaxEntries))); err != nil {
		t.Errorf("%d entries: %v", MaxEntries, err)
	}
}

func TestIdentityUnambiguous(t *testing.T) {
	pairs := [][2][]entry{
		{{{"a", "b|c=d"}}, {{"a", "b"}, {"c", "d"}}},
		{{{"a=b", ""}}, {{"a", "b"}}},
		{{{"a", "%7C"}}, {{"a", "|"}}},
	}
	for _, p := range pairs {
		if x, y := identity("d", p[0]), identity("d", p[1]); x == y {
			t.Errorf("%v and %v share the identity %q", p[0], p[1], x)
		}
	}
	if got := identity("edge", []entry{{"ip", "10.0.0.1"}, {"path", "/a"}}); got != "edge|ip=10.0.0.1|path=/a" {
		t.Errorf("identity = %q, want edge|ip=10.0.0.1|path=/a", got)
	}
}

// failingStore is a store that cannot decide.
type failingStore struct{ err error }

func (s failingStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, s.err
}
func (s failingStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return s.err
}
func (s failingStore) Reset(context.Context, string, []ratelimit.Policy) error { return s.err }

func TestFailModes(t *testing.T) {
	cfg, err := ParseConfig(File{Name: "test.yaml", Data: []byte(semanticsConfig)})
	if err != nil {
		t.Fatal(err)
	}
	req := request("edge", desc("ip", "1"), desc("cookie", "c"), desc("path", "/api/x"))
	for _, tc := range []struct {
		mode FailMode
		want string // the summary, or the gRPC code
	}{
		{FailError, "Unavailable"},
		{FailAllow, "OK: OK 0/-, OK 0/-, OK 0/-"},
		{FailDeny, "OVER_LIMIT: OVER_LIMIT 0/3/SECOND 1s, OK 0/-, OVER_LIMIT 0/10/MINUTE 1m0s"},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			clk := fakeclock.New(fakeclock.T0)
			srv, err := NewServer(failingStore{errors.New("down")}, cfg, WithFailMode(tc.mode), WithClock(clk), WithLogger(quietLogger()))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.ShouldRateLimit(context.Background(), req)
			got := status.Code(err).String()
			if err == nil {
				got = summary(resp)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseFailMode(t *testing.T) {
	for _, m := range []FailMode{FailError, FailAllow, FailDeny} {
		if got, err := ParseFailMode(strings.ToUpper(m.String())); got != m || err != nil {
			t.Errorf("ParseFailMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseFailMode("maybe"); err == nil {
		t.Error("ParseFailMode(maybe) succeeded")
	}
}

func TestNewServerRefuses(t *testing.T) {
	cfg, _ := ParseConfig()
	store := ratelimit.NewMemoryStore()
	for name, f := range map[string]func() (*Server, error){
		"no store":    func() (*Server, error) { return NewServer(nil, cfg) },
		"no config":   func() (*Server, error) { return NewServer(store, nil) },
		"nil option":  func() (*Server, error) { return NewServer(store, cfg, nil) },
		"bad timeout": func() (*Server, error) { return NewServer(store, cfg, WithTimeout(0)) },
		"bad mode":    func() (*Server, error) { return NewServer(store, cfg, WithFailMode(7)) },
		"nil logger":  func() (*Server, error) { return NewServer(store, cfg, WithLogger(nil)) },
		"nil clock":   func() (*Server, error) { return NewServer(store, cfg, WithClock(nil)) },
	} {
		if s, err := f(); err == nil || s != nil {
			t.Errorf("%s: got %v, %v; want an error", name, s, err)
		}
	}
}

func TestResponseHeaders(t *testing.T) {
	headers := func(resp *rlsv3.RateLimitResponse) string {
		var parts []string
		for _, h := range resp.ResponseHeadersToAdd {
			parts = append(parts, h.Key+"="+h.Value)
		}
		return strings.Join(parts, " ")
	}
	f := newFixture(t, semanticsConfig, WithResponseHeaders("", "X-Left", ""))
	f.clock.Advance(15 * time.Second)
	for i, tc := range []struct {
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{request("edge", desc("cookie", "c")), ""}, // no limit, no headers
		{request("edge", desc("path", "/free")), ""},
		{request("edge", desc("path", "/api/h"), desc("ip", "1")), "RateLimit-Limit=3 X-Left=2 RateLimit-Reset=1"}, // the least remaining
		{request("edge", hits(5, desc("path", "/api/h"))), "RateLimit-Limit=10 X-Left=4 RateLimit-Reset=45"},
		{request("edge", hits(3, desc("ip", "1")), desc("path", "/api/h")), "RateLimit-Limit=3 X-Left=2 RateLimit-Reset=1"}, // over its limit: that one, with what it left
		{request("edge", desc("quota", "q"), desc("quota", "q"), desc("path", "/api/h")), "RateLimit-Limit=1 X-Left=0 RateLimit-Reset=7185"},
	} {
		if got := headers(f.call(tc.req)); got != tc.want {
			t.Errorf("call %d: headers %q, want %q", i, got, tc.want)
		}
	}
	if got := headers(newFixture(t, semanticsConfig).call(request("edge", desc("ip", "1")))); got != "" {
		t.Errorf("without WithResponseHeaders: %q, want none", got)
	}
}
