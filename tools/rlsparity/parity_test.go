package rlsparity

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rls"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestMain(m *testing.M) {
	code := redistest.Main(m)
	for _, b := range []*binary{&referenceBin, &oursBin} {
		if b.dir != "" {
			_ = os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

// binary is a command built once for every test that runs it, in a temporary directory that
// TestMain removes.
type binary struct {
	pkg, name string // the package to build, the file's name
	once      sync.Once
	dir, path string
	err       error
}

// The two servers: envoyproxy/ratelimit's and ours (rls/cmd/ratelimit-rls), each run as a
// process of its own.
var (
	referenceBin = binary{pkg: "github.com/envoyproxy/ratelimit/src/service_cmd", name: "ratelimit"}
	oursBin      = binary{pkg: "github.com/a7d3e0dd/ratelimit/rls/cmd/ratelimit-rls", name: "ratelimit-rls"}
)

// build returns the path of b, built the first time it is asked.
func (b *binary) build(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "rlsparity"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, b.name)
		if out, err := exec.Command("go", "build", "-o", b.path, b.pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// The reference's runtime: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config, which both servers read.
const (
	runtimeRoot   = "testdata"
	runtimeSubdir = "runtime"
)

// freeAddr is a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// reference starts envoyproxy/ratelimit's server (built once) over redisAddr; it returns its
// gRPC address.
func reference(t *testing.T, redisAddr string) string {
	t.Helper()
	return referenceIn(t, redisAddr, runtimeRoot, "USE_STATSD=false").addr
}

// proc is a server started as a process of its own: its gRPC address and its process id.
type proc struct {
	addr string
	pid  int
}

// referenceIn starts envoyproxy/ratelimit's server over redisAddr, its runtime under
// runtimeRoot (RUNTIME_SUBDIRECTORY/config in it), with the environment env besides its
// addresses' (such as its stats sink: USE_STATSD=false writes them to its log); it returns its
// gRPC address and its process id.
func referenceIn(t *testing.T, redisAddr, runtimeRoot string, env ...string) proc {
	t.Helper()
	bin := referenceBin.build(t)
	root, err := filepath.Abs(runtimeRoot)
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr, debugAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	port := func(a string) string { _, p, _ := net.SplitHostPort(a); return p }
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), env...), "LOG_LEVEL=warn", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr,
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY="+runtimeSubdir, "RUNTIME_WATCH_ROOT=false", "RUNTIME_IGNOREDOTFILES=true",
		"HOST=127.0.0.1", "PORT="+port(httpAddr), "GRPC_HOST=127.0.0.1", "GRPC_PORT="+port(grpcAddr),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+port(debugAddr))
	log := &tail{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the reference's log (its end):\n%s", log)
		}
	})
	return proc{grpcAddr, cmd.Process.Pid}
}

// ours starts the rls server over redisAddr, with opts; it returns its gRPC address.
func ours(t *testing.T, redisAddr string, opts ...rls.Option) string {
	t.Helper()
	cfg, err := rls.LoadConfig(filepath.Join(runtimeRoot, runtimeSubdir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	store := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithPrefix(redistest.Prefix(t)))
	t.Cleanup(func() { _ = store.Close() })
	srv, err := rls.NewServer(store, cfg, append([]rls.Option{rls.WithTimeout(time.Minute)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv.Register(g)
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	return ln.Addr().String()
}

func client(t *testing.T, addr string) rlsv3.RateLimitServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return rlsv3.NewRateLimitServiceClient(conn)
}

// answer writes a response as the parity compares it: the codes, limits and remaining counts,
// and the resets apart (the servers read the time apart, a second may turn between).
func answer(resp *rlsv3.RateLimitResponse) (string, []time.Duration) {
	var b strings.Builder
	var resets []time.Duration
	b.WriteString(resp.OverallCode.String())
	for _, st := range resp.Statuses {
		fmt.Fprintf(&b, " | %s %d", st.Code, st.LimitRemaining)
		if l := st.CurrentLimit; l != nil {
			fmt.Fprintf(&b, " %d/%s %q", l.RequestsPerUnit, l.Unit, l.Name)
		}
		resets = append(resets, st.DurationUntilReset.AsDuration())
	}
	return b.String(), resets
}

func desc(kv ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func hits(n uint64, d *rlcommon.RateLimitDescriptor) *rlcommon.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

func override(perUnit uint32, unit typev3.RateLimitUnit, d *rlcommon.RateLimitDescriptor) *rlcommon.RateLimitDescriptor {
	d.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: perUnit, Unit: unit}
	return d
}

func req(hitsAddend uint32, ds ...*rlcommon.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: "parity", Descriptors: ds, HitsAddend: hitsAddend}
}

// The parity table: each case is a sequence of calls, sent to both servers in turn; every
// answer must be the same. Each case uses descriptor values of its own.
//
// Not in the table, where the servers differ on purpose (rls/README.md, "Where it differs"):
// a refused request of several hits (the reference counts it, rls does not, so the next,
// smaller request differs); a supplied limit on a descriptor a rule of the file also limits in
// the same unit (the reference shares one count, rls keeps them apart) — both of which rls
// counts as the reference in the reference's keys, which TestSharedCounts (shared_test.go)
// shows; bad input (rls refuses
// it with InvalidArgument, the reference answers or panics); and a configuration rls refuses
// and the reference accepts (a known field out of place). And quota_mode: this reference (of
// January 2026) answers a quota descriptor over its limit OK, without a reset, and never
// OVER_LIMIT overall; rls follows envoyproxy/ratelimit's main branch since (OVER_LIMIT, and
// overall OVER_LIMIT when every quota descriptor of the call is over), which the module proxy
// does not serve yet.
var cases = []struct {
	name  string
	calls []*rlsv3.RateLimitRequest
}{
	{"a window fills", []*rlsv3.RateLimitRequest{
		req(0, desc("remote_address", "a1")), req(0, desc("remote_address", "a1")),
		req(0, desc("remote_address", "a1")), req(0, desc("remote_address", "a1")), req(0, desc("remote_address", "a1")),
	}},
	{"values count apart", []*rlsv3.RateLimitRequest{
		req(3, desc("remote_address", "b1")), req(0, desc("remote_address", "b2")), req(0, desc("remote_address", "b1")),
	}},
	{"wildcard and exact values", []*rlsv3.RateLimitRequest{
		req(0, desc("path", "/api/c1")), req(0, desc("path", "/api/login")), req(0, desc("path", "/api/login")),
		req(0, desc("path", "/api/login")), req(0, desc("path", "/api/")), req(0, desc("path", "/web")),
	}},
	{"nested, with a default value", []*rlsv3.RateLimitRequest{
		req(0, desc("user", "d1", "plan", "free")), req(0, desc("user", "d1", "plan", "gold")),
		req(0, desc("user", "d1")), req(0, desc("user", "d1", "plan", "free", "x", "y")),
		req(0, desc("user", "d1", "plan", "free")), req(0, desc("user", "d1", "plan", "free")),
	}},
	{"no rule, unknown domain", []*rlsv3.RateLimitRequest{
		req(0, desc("cookie", "e1")), req(0, desc("nolimit", "e1")), req(0, desc("remote_address", "e1", "path", "/api/x")),
		{Domain: "nowhere", Descriptors: []*rlcommon.RateLimitDescriptor{desc("remote_address", "e1")}},
	}},
	{"hits_addend", []*rlsv3.RateLimitRequest{
		req(2, desc("user", "f1", "plan", "silver")), req(5, hits(1, desc("user", "f1", "plan", "silver"))),
		req(0, hits(0, desc("user", "f1", "plan", "silver"))), req(0, desc("user", "f1", "plan", "silver")),
		req(0, desc("user", "f1", "plan", "silver")),
	}},
	{"several descriptors, in order", []*rlsv3.RateLimitRequest{
		req(0, desc("remote_address", "g1"), desc("path", "/api/g1"), desc("cookie", "g1")),
		req(2, desc("remote_address", "g1"), desc("path", "/api/g1")),
		req(0, desc("path", "/api/g1"), desc("remote_address", "g1")),
	}},
	{"shadow mode", []*rlsv3.RateLimitRequest{
		req(0, desc("path", "/trial")), req(0, desc("path", "/trial")), req(0, desc("path", "/trial"), desc("remote_address", "h1")),
	}},
	{"unlimited", []*rlsv3.RateLimitRequest{
		req(0, desc("path", "/free")), req(0, desc("path", "/free"), desc("remote_address", "i1")),
	}},
	{"replaces", []*rlsv3.RateLimitRequest{
		req(0, desc("path", "/api/j1"), desc("tenant", "j1")), req(0, desc("path", "/api/j1")),
	}},
	{"share_threshold: one count for every value of the wildcard", []*rlsv3.RateLimitRequest{
		req(0, desc("team", "m1", "file", "filesA")), req(0, desc("team", "m1", "file", "filesB")),
		req(0, desc("team", "m1", "file", "files")), req(0, desc("team", "m1", "file", "filesA")),
		req(0, desc("team", "m2", "file", "filesA")),
	}},
	{"a supplied limit", []*rlsv3.RateLimitRequest{
		req(0, override(2, typev3.RateLimitUnit_HOUR, desc("cookie", "l1"))), req(0, override(2, typev3.RateLimitUnit_HOUR, desc("cookie", "l1"))),
		req(0, override(5, typev3.RateLimitUnit_HOUR, desc("cookie", "l1"))), req(0, override(0, typev3.RateLimitUnit_DAY, desc("cookie", "l2"))),
		req(0, override(3, typev3.RateLimitUnit_HOUR, desc("cookie", "l1"))), // over: the last of the case, see above
	}},
}

// TestParity runs the table on both servers over one Redis. RLSPARITY=1 runs it.
func TestParity(t *testing.T) {
	if os.Getenv("RLSPARITY") != "1" {
		t.Skip("RLSPARITY=1 runs the parity test (it builds envoyproxy/ratelimit)")
	}
	redisAddr := redistest.Addr(t)
	ref, our := client(t, reference(t, redisAddr)), client(t, ours(t, redisAddr))
	started(t, ref)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inOneMinute(len(tc.calls))
			for i, call := range tc.calls {
				want, wantResets := ask(t, ref, call)
				got, gotResets := ask(t, our, call)
				if got != want {
					t.Errorf("call %d:\n rls       %s\n reference %s", i, got, want)
				}
				for j := range wantResets {
					if d := gotResets[j] - wantResets[j]; d < -time.Second || d > time.Second {
						t.Errorf("call %d, descriptor %d: reset %v, the reference's %v", i, j, gotResets[j], wantResets[j])
					}
				}
			}
		})
	}
}

// started returns once the reference answers.
func started(t *testing.T, ref rlsv3.RateLimitServiceClient) {
	t.Helper()
	for {
		if _, err := ref.ShouldRateLimit(t.Context(), req(0, desc("cookie", "start"))); err == nil {
			return
		}
		if t.Context().Err() != nil {
			t.Fatal("the reference never answered")
		}
		time.Sleep(50 * time.Millisecond) // a poll of its port, not a deadline
	}
}

// inOneMinute waits, when the end of the minute could cut a case of n calls in two, for the
// next minute to begin (the windows are a minute at least).
func inOneMinute(n int) {
	if s := time.Now().Second(); s >= 55-n/4 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
}

func ask(t *testing.T, c rlsv3.RateLimitServiceClient, r *rlsv3.RateLimitRequest) (string, []time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.ShouldRateLimit(ctx, r)
	if err != nil {
		return "error " + err.Error(), nil
	}
	return answer(resp)
}
