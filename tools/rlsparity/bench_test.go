package rlsparity

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
)

// benchSettings are the benchmark's, from the environment (RLSBENCH_*).
type benchSettings struct {
	d            time.Duration // each server's load per case, in slices
	slices       int           // the slices d is cut in, the servers alternating
	outageSlices int           // the slices outage is cut in
	callers      int           // concurrent callers
	conns        int           // gRPC connections to each server, the callers over them in turn
	outage       time.Duration // each server's load with Redis down, in slices too
	out          string        // the results file, "" for none
	note         string        // what the results file says of the machine's load
	warmUp       time.Duration // each server's load before the figures, per case
	patience     time.Duration // a call's timeout under load, far above any answer of a server up
	waitCap      time.Duration // a call's timeout with Redis down: above the reference's REDIS_TIMEOUT (10 s)
}

func benchSettingsFrom(t *testing.T, getenv func(string) string) benchSettings {
	t.Helper()
	s := benchSettings{d: 5 * time.Second, slices: 5, callers: 32, conns: 4, outage: 3 * time.Second, outageSlices: 2,
		out: "../../docs/results.md", warmUp: time.Second, patience: 30 * time.Second, waitCap: 15 * time.Second}
	duration := func(name string, p *time.Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				t.Fatalf("%s=%q: want a positive duration, such as 5s", name, v)
			}
			*p = d
		}
	}
	count := func(name string, p *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q: want a count of 1 or more", name, v)
			}
			*p = n
		}
	}
	duration("RLSBENCH_D", &s.d)
	duration("RLSBENCH_OUTAGE", &s.outage)
	count("RLSBENCH_SLICES", &s.slices)
	count("RLSBENCH_CALLERS", &s.callers)
	count("RLSBENCH_CONNS", &s.conns)
	if v, ok := os.LookupEnv("RLSBENCH_OUT"); ok {
		s.out = v
	}
	s.note = getenv("RLSBENCH_NOTE")
	return s
}

// benchServer is a server under load: its gRPC clients and what it answered, by case.
type benchServer struct {
	name     string        // its key in the results: ref, ours, compat, ours10, compat10
	pid      int           // its process
	redis    *redis.Client // the Redis it runs on, for its CPU time
	clients  []rlsv3.RateLimitServiceClient
	tolerant bool           // its calls may fail under load (a bound of 10 ms on a busy machine)
	load     map[int]*tally // by descriptors per call
	outage   tally
}

// TestBench measures both servers on one Redis, as issue 40 asks: checks per second and p50
// and p99 per ShouldRateLimit with 1 and 3 descriptors, under the same load, then with Redis
// killed. Each server runs as a process of its own: the reference (envoyproxy/ratelimit, its
// defaults, its metrics in Prometheus as ours), ours (ratelimit-rls) and ours with
// -key-compat reference (the reference's keys and Redis commands). Under load ours run with
// -timeout 1s, so that every call is a check, as the reference's REDIS_TIMEOUT of 10 s lets
// every one be: a saturating load on a small machine queues some calls past the default bound
// of 10 ms, which the fail mode then answers. Ours at its defaults takes the same load too,
// for its failures. With Redis down, ours and -key-compat reference run at their defaults
// (-timeout 10ms, -fail-mode error). The servers take the load in slices, in turn (ref ours
// compat ours10, then the other way), so that a load that moves on the machine weighs on them
// alike. It writes the section rls of docs/results.md (RLSBENCH_OUT: another file, or none
// when empty). A measure, not a test: it fails only when it cannot measure (a server that does
// not start, or errs with Redis up and its bound far away). RLSBENCH=1 runs it; RLSBENCH_D,
// RLSBENCH_SLICES, RLSBENCH_CALLERS, RLSBENCH_CONNS, RLSBENCH_OUTAGE and RLSBENCH_NOTE change it.
func TestBench(t *testing.T) {
	if os.Getenv("RLSBENCH") != "1" {
		t.Skip("RLSBENCH=1 runs the benchmark against the reference (it builds envoyproxy/ratelimit; a few minutes)")
	}
	s := benchSettingsFrom(t, os.Getenv)
	start, loadStart := time.Now(), procLoadavg()
	redisAddr := redistest.Addr(t)
	if !loopback(redisAddr) {
		t.Fatalf("Redis at %s: the benchmark loads loopback servers only", redisAddr)
	}
	redisVersion, rdb := "?", redistest.Standalone(t)
	if info, err := rdb.Info(t.Context(), "server").Result(); err == nil {
		redisVersion = loadgen.InfoField(info, "redis_version")
	}
	server := func(name string, p proc) *benchServer {
		t.Helper()
		if !loopback(p.addr) {
			t.Fatalf("server at %s: the benchmark loads loopback servers only", p.addr)
		}
		srv := &benchServer{name: name, pid: p.pid, redis: rdb, clients: make([]rlsv3.RateLimitServiceClient, s.conns), load: map[int]*tally{}}
		for i := range srv.clients {
			srv.clients[i] = client(t, p.addr)
		}
		return srv
	}
	// Ours run under load with -timeout 1s (ours, compat) and at their defaults (ours10, and
	// compat10 with Redis down).
	var (
		ref = server("ref", referenceIn(t, redisAddr, benchRoot,
			"USE_STATSD=false", "USE_PROMETHEUS=true", "PROMETHEUS_ADDR="+freeAddr(t))) // metrics as ours: Prometheus
		ours     = server("ours", oursCommand(t, redisAddr, "-timeout", "1s"))
		compat   = server("compat", oursCommand(t, redisAddr, "-timeout", "1s", "-key-compat", "reference"))
		ours10   = server("ours10", oursCommand(t, redisAddr))
		compat10 = server("compat10", oursCommand(t, redisAddr, "-key-compat", "reference"))
		loaded   = []*benchServer{ref, ours, compat, ours10}
		downed   = []*benchServer{ref, ours10, compat10}
	)
	ours10.tolerant = true
	for _, srv := range []*benchServer{ref, ours, compat, ours10, compat10} {
		answering(t, srv.clients[0])
	}
	ctx := t.Context()
	for _, n := range []int{1, 3} {
		for _, srv := range loaded {
			srv.load[n] = &tally{}
			if w := drive(ctx, srv.clients, s.callers, n, s.warmUp, s.patience); w.errs > 0 {
				t.Logf("%s, %d descriptors, warming up: %d calls of %d failed, the last with %v", srv.name, n, w.errs, w.calls(), w.lastErr)
			}
		}
		for k := range s.slices {
			for _, srv := range inTurn(loaded, k) {
				r := srv.drive(ctx, s.callers, n, s.d/time.Duration(s.slices), s.patience)
				if r.over > 0 || r.errs > 0 && !srv.tolerant {
					t.Fatalf("%s, %d descriptors: %d calls failed, %d over the limit (which no load here reaches); the last error %v",
						srv.name, n, r.errs, r.over, r.lastErr)
				}
				srv.load[n].add(r)
			}
		}
		for _, srv := range loaded {
			r := srv.load[n]
			t.Logf("%-8s %d descriptors: %8.0f calls/s  p50 %v  p99 %v  CPU %v a call, Redis %v, load %v (%d calls, %d failed)",
				srv.name, n, r.rate(), r.quantile(0.5), r.quantile(0.99), r.cpuPerCall(), r.perCall(r.redisCPU), r.perCall(r.loadCPU), r.calls(), r.errs)
		}
	}
	// compat10 has taken no load: its connections to Redis are made before Redis goes.
	drive(ctx, compat10.clients, s.callers, 1, s.warmUp, s.patience)

	redistest.Kill(t) // restarted when the test ends
	for k := range s.outageSlices {
		for _, srv := range inTurn(downed, k) {
			srv.outage.add(srv.drive(ctx, s.callers, 1, s.outage/time.Duration(s.outageSlices), s.waitCap))
		}
	}
	for _, srv := range downed {
		r := &srv.outage
		t.Logf("%-8s Redis down: %8.0f calls/s  p50 %v  p99 %v  (%d calls, %d failed, %d timed out; the last error %v)",
			srv.name, r.rate(), r.quantile(0.5), r.quantile(0.99), r.calls(), r.errs, r.timeouts, r.lastErr)
	}

	run := loadgen.Run{
		When: start,
		Machine: fmt.Sprintf("machine: %d cores (GOMAXPROCS %d), %s %s/%s, redis %s; envoyproxy/ratelimit %s (its defaults: REDIS_POOL_SIZE 10, REDIS_TIMEOUT 10s, no pipelining); ratelimit-rls (-fail-mode error; -timeout 1s under load, 10ms at its defaults)",
			runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, redisVersion, referenceVersion()),
		How: fmt.Sprintf("each server a process of its own on one Redis, on loopback; %d callers over %d gRPC connections to each; per case, %s of warm-up each, then %s each in %d slices, the servers in turn (ref ours compat ours10, then the other way); Redis then killed (SIGKILL) and %s each, 1 descriptor, in %d slices, a call's timeout %s; CPU time of each server from /proc/PID/stat; run took %s",
			s.callers, s.conns, s.warmUp, s.d, s.slices, s.outage, s.outageSlices, s.waitCap, time.Since(start).Round(time.Second)),
		Load: fmt.Sprintf("/proc/loadavg %s at the start, %s at the end", loadStart, procLoadavg()),
	}
	if s.note != "" {
		run.Load += "; " + s.note
	}
	body := benchMarkdown(s, ref, ours, compat, ours10, compat10)
	t.Logf("\n%s\n%s\n%s\n\n%s", run.Machine, run.How, run.Load, body)
	if s.out != "" {
		if err := loadgen.WriteSection(s.out, "rls", "rls: beside envoyproxy/ratelimit (tools/rlsparity: TestBench, issue 40)", run, body); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the section rls of %s", s.out)
	}
}

// drive puts the load on srv (see drive), with the CPU time it used meanwhile.
func (srv *benchServer) drive(ctx context.Context, callers, n int, d, callTimeout time.Duration) tally {
	cpu, redisCPU, loadCPU := cpuTime(srv.pid), redisCPUTime(ctx, srv.redis), selfCPUTime()
	r := drive(ctx, srv.clients, callers, n, d, callTimeout)
	r.cpu = cpuTime(srv.pid) - cpu
	r.redisCPU = redisCPUTime(ctx, srv.redis) - redisCPU
	r.loadCPU = selfCPUTime() - loadCPU
	return r
}

// inTurn is the servers in the order of slice k: as listed, then reversed, and so on.
func inTurn(servers []*benchServer, k int) []*benchServer {
	if k%2 == 0 {
		return servers
	}
	r := make([]*benchServer, len(servers))
	for i, s := range servers {
		r[len(r)-1-i] = s
	}
	return r
}

// procLoadavg is the first three fields of /proc/loadavg (the 1, 5 and 15-minute load
// averages), "?" where there is none.
func procLoadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// referenceVersion is the version of envoyproxy/ratelimit's module the test builds.
func referenceVersion() string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/envoyproxy/ratelimit").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
