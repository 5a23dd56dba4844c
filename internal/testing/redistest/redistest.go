// Package redistest gives tests a real Redis server and a real Redis Cluster.
//
// By default the package starts its own redis-server processes on free
// loopback ports: one standalone server and one 3-master cluster per test
// binary, each started lazily the first time a test asks for it and shared by
// every test in the binary. Tests isolate themselves from each other with
// unique key prefixes (see [Prefix]) rather than by flushing the server.
//
// Every test binary that uses this package should stop those servers through
// [Main]:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
//
// On Linux the servers are additionally started with a parent-death signal,
// so they exit even if the test binary is killed or panics before [Main]
// gets to stop them.
//
// The behaviour is controlled by environment variables:
//
//   - REDIS_ADDR (host:port): use this standalone server instead of starting one.
//   - REDIS_CLUSTER_ADDRS (comma-separated host:port list): use this cluster
//     instead of starting one.
//   - RATELIMIT_REQUIRE_REDIS=1: fail, rather than skip, tests that need a
//     server this package would have to start when redis-server is not
//     installed (use it in CI so a missing dependency cannot go unnoticed).
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Environment variables read by this package.
const (
	envAddr         = "REDIS_ADDR"
	envClusterAddrs = "REDIS_CLUSTER_ADDRS"
	envRequire      = "RATELIMIT_REQUIRE_REDIS"
)

// serverBinary is the executable this package starts.
const serverBinary = "redis-server"

// errNotInstalled reports that redis-server could not be found in PATH.
var errNotInstalled = errors.New("redis-server not found in PATH")

// standalone holds the lazily initialised shared standalone server.
var standalone struct {
	once sync.Once
	addr string  // address clients connect to
	srv  *server // nil when REDIS_ADDR is used
	err  error   // non-nil when the server is unavailable
}

// cluster holds the lazily initialised shared cluster.
var cluster struct {
	once  sync.Once
	addrs []string  // seed addresses clients connect to
	srvs  []*server // nil when REDIS_CLUSTER_ADDRS is used
	err   error     // non-nil when the cluster is unavailable
}

// Standalone returns a go-redis client connected to a real standalone Redis
// server, shared by all tests of the test binary.
//
// If the environment variable REDIS_ADDR is set, the client connects to that
// address. Otherwise the first call starts a redis-server on a free
// 127.0.0.1 port, with a temporary working directory and persistence
// disabled; later calls reuse it and [Main] stops it.
//
// If redis-server is not installed the test is skipped, or fails if
// RATELIMIT_REQUIRE_REDIS=1. If the server cannot be started or REDIS_ADDR
// does not answer, the test fails.
//
// Every call returns a new client, closed by t.Cleanup. The server is never
// flushed: tests must keep their keys apart with [Prefix].
func Standalone(t testing.TB) *redis.Client {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: Addr(t)})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// Addr returns the host:port address of the shared standalone server, starting
// the server if needed, under the same rules as [Standalone].
func Addr(t testing.TB) string {
	t.Helper()
	standalone.once.Do(initStandalone)
	if standalone.err != nil {
		failUnavailable(t, "standalone redis", standalone.err)
	}
	return standalone.addr
}

// initStandalone resolves standalone.addr, starting a server if needed. It runs
// once per test binary and must not touch any testing.TB.
func initStandalone() {
	if addr := strings.TrimSpace(os.Getenv(envAddr)); addr != "" {
		standalone.addr = addr
		standalone.err = pingExternal(addr)
		return
	}
	srv, err := startServer("standalone", nil)
	if err != nil {
		standalone.err = err
		return
	}
	standalone.srv = srv
	standalone.addr = srv.addr()
}

// Cluster returns a go-redis cluster client connected to a real Redis Cluster
// with three masters (and no replicas), shared by all tests of the test binary.
//
// If the environment variable REDIS_CLUSTER_ADDRS is set (a comma-separated
// list of host:port seed addresses), the client connects to that cluster.
// Otherwise the first call starts three cluster-enabled redis-server
// processes on free 127.0.0.1 ports, assigns each a third of the hash slots,
// joins them with CLUSTER MEET and waits until the cluster is usable; later
// calls reuse it and [Main] stops it.
//
// Missing redis-server skips the test, or fails it if
// RATELIMIT_REQUIRE_REDIS=1. Any other failure to provide the cluster fails
// the test.
//
// Every call returns a new client, closed by t.Cleanup. The cluster is never
// flushed: tests must keep their keys apart with [Prefix].
func Cluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cluster.once.Do(initCluster)
	if cluster.err != nil {
		failUnavailable(t, "redis cluster", cluster.err)
	}
	// Every cluster client of the tests gets addresses of its own: go-redis keeps the slice it is
	// given and appends a node it meets to it (appendIfNotExist), so clients made from one
	// slice — another client's Options().Addrs — wrote to one array under two locks (a data
	// race the detector found in CI while slots moved).
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(cluster.addrs)})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// initCluster resolves cluster.addrs, starting a cluster if needed. It runs
// once per test binary and must not touch any testing.TB.
func initCluster() {
	if env := strings.TrimSpace(os.Getenv(envClusterAddrs)); env != "" {
		for _, a := range strings.Split(env, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cluster.addrs = append(cluster.addrs, a)
			}
		}
		cluster.err = pingExternalCluster(cluster.addrs)
		return
	}
	srvs, err := startCluster()
	if err != nil {
		cluster.err = err
		return
	}
	cluster.srvs = srvs
	for _, s := range srvs {
		cluster.addrs = append(cluster.addrs, s.addr())
	}
}

// failUnavailable ends the test because what stands for the requested server
// is not available: a skip when redis-server is simply not installed (unless
// RATELIMIT_REQUIRE_REDIS=1), a failure otherwise.
func failUnavailable(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, errNotInstalled) {
		if os.Getenv(envRequire) == "1" {
			t.Fatalf("redistest: redis-server not installed, but %s=1 requires it: %v "+
				"(install redis-server, e.g. `apt-get install redis-server`, or set %s / %s)",
				envRequire, err, envAddr, envClusterAddrs)
		}
		t.Skipf("redistest: redis-server not installed; skipping test that needs %s "+
			"(install redis-server or set %s / %s; set %s=1 to make this a failure)",
			what, envAddr, envClusterAddrs, envRequire)
	}
	t.Fatalf("redistest: %s unavailable: %v", what, err)
}

// pingExternal checks that a user-supplied standalone server answers.
func pingExternal(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return errors.New(envAddr + "=" + addr + " does not answer PING: " + err.Error())
	}
	return nil
}

// pingExternalCluster checks that a user-supplied cluster answers.
func pingExternalCluster(addrs []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(addrs), MaxRetries: -1})
	defer c.Close()
	err := c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Ping(ctx).Err()
	})
	if err != nil {
		return errors.New(envClusterAddrs + "=" + strings.Join(addrs, ",") +
			" does not answer PING: " + err.Error())
	}
	return nil
}

// prefixSeq numbers the prefixes handed out by Prefix within this process.
var prefixSeq atomic.Uint64

// prefixNonce distinguishes this test binary from others that share the same
// server (for example several packages tested in parallel against REDIS_ADDR).
var prefixNonce = func() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return strconv.Itoa(os.Getpid())
	}
	return hex.EncodeToString(b)
}()

// maxPrefixName bounds how much of the test name goes into a prefix.
const maxPrefixName = 120

// Prefix returns a key prefix unique to this call, of the form
// "rlt:<test name>:<nonce>-<n>:". The test name is sanitized so the prefix
// contains only ASCII letters, digits and "_-./:" (in particular no '{', '}'
// or spaces, so it never creates or breaks a cluster hash tag). The nonce is
// random per test binary and n counts calls, so prefixes differ between
// calls, between tests and between test binaries sharing one server.
func Prefix(t testing.TB) string {
	t.Helper()
	name := sanitize(t.Name())
	if len(name) > maxPrefixName {
		name = name[:maxPrefixName]
	}
	return "rlt:" + name + ":" + prefixNonce + "-" + strconv.FormatUint(prefixSeq.Add(1), 10) + ":"
}

// sanitize replaces every byte of s that is not safe in a key prefix.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '-', c == '.', c == '/':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// Main runs the tests and then stops every redis-server this package started,
// by PID: SIGTERM, up to 5 seconds for it to exit, then SIGKILL. It removes
// the servers' temporary directories and returns m.Run's exit code. Call it
// from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
//
// A runnable example cannot call [Standalone]: it reads REDIS_ADDR, as a user's
// program would. Name such examples and Main provides the server before the
// run, setting REDIS_ADDR to its address; where redis-server is not installed
// (and RATELIMIT_REQUIRE_REDIS is not 1) it skips them instead, through -test.skip.
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "ExampleNewRedisStore")) }
func Main(m *testing.M, examplesNeedingRedis ...string) int {
	if len(examplesNeedingRedis) > 0 {
		if code, ok := exportAddr(examplesNeedingRedis); !ok {
			return code
		}
	}
	code := m.Run()
	stopAll()
	return code
}

// exportAddr makes the standalone server's address available through REDIS_ADDR
// or skips the named examples. It reports false, with an exit code, when the run
// must not go on.
func exportAddr(examples []string) (int, bool) {
	standalone.once.Do(initStandalone)
	switch err := standalone.err; {
	case err == nil:
		if err := os.Setenv(envAddr, standalone.addr); err != nil {
			fmt.Fprintln(os.Stderr, "redistest:", err)
			return 1, false
		}
	case errors.Is(err, errNotInstalled) && os.Getenv(envRequire) != "1":
		if !flag.Parsed() {
			flag.Parse()
		}
		skip := "^(" + strings.Join(examples, "|") + ")$"
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip = prev + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintln(os.Stderr, "redistest:", err)
			return 1, false
		}
	default:
		fmt.Fprintf(os.Stderr, "redistest: standalone redis unavailable for %s: %v\n",
			strings.Join(examples, ", "), err)
		stopAll()
		return 1, false
	}
	return 0, true
}

// Kill stops the shared standalone server abruptly (SIGKILL, as in a crash)
// and waits for the process to exit, so clients see connection errors until
// [Restart]. The data set is lost: servers run without persistence.
//
// Kill affects every test using the server, so it must not be called from a
// parallel test. If the test does not call [Restart] itself, the server is
// restarted when the test finishes. Kill skips the test when the server was
// not started by this package (REDIS_ADDR is set).
func Kill(t testing.TB) {
	t.Helper()
	srv := ownStandalone(t)
	if err := srv.kill(); err != nil {
		t.Fatalf("redistest: kill standalone redis-server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.restart(); err != nil {
			t.Errorf("redistest: restarting standalone redis-server after Kill: %v", err)
		}
	})
}

// Restart starts the shared standalone server again after [Kill], on the same
// address, and waits until it answers. It does nothing if the server is
// running. Restart skips the test when the server was not started by this
// package (REDIS_ADDR is set).
func Restart(t testing.TB) {
	t.Helper()
	srv := ownStandalone(t)
	if err := srv.restart(); err != nil {
		t.Fatalf("redistest: restart standalone redis-server: %v", err)
	}
}

// ownStandalone returns the standalone server started by this package,
// skipping the test when the server is external.
func ownStandalone(t testing.TB) *server {
	t.Helper()
	Addr(t)
	if standalone.srv == nil {
		t.Skipf("redistest: %s is set; Kill/Restart need a redis-server started by this package", envAddr)
	}
	return standalone.srv
}

// lookPath finds redis-server, wrapping errNotInstalled on failure.
func lookPath() (string, error) {
	path, err := exec.LookPath(serverBinary)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", errNotInstalled, err)
	}
	return path, nil
}

// Private starts a redis-server of the test's own, with the extra configuration args (such
// as "--maxmemory", "1mb"), and returns its address; it is stopped when the test ends. Use it
// for faults that would disturb other tests sharing the standalone server: a busy script, a
// full memory. Missing redis-server skips or fails the test as [Standalone] does.
func Private(t testing.TB, args ...string) string {
	t.Helper()
	if _, err := lookPath(); err != nil {
		failUnavailable(t, "a private redis", err)
	}
	srv, err := startServer("private", func(string, int) []string { return args })
	if err != nil {
		t.Fatalf("redistest: private redis-server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.stop(); err != nil {
			t.Errorf("redistest: stopping private redis-server: %v", err)
		}
	})
	return srv.addr()
}

// OneShardCluster starts a redis-server of the test's own in cluster mode, holding every
// slot, and returns its address once the cluster is ok: a managed service's one shard, which
// a plain client reaches at one address and which refuses a call naming keys of several
// slots (CROSSSLOT). It is stopped when the test ends.
func OneShardCluster(t testing.TB) string {
	t.Helper()
	addr := Private(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf") // in the server's own directory
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("redistest: one-shard cluster: %v", err)
	}
	for !strings.Contains(c.ClusterInfo(ctx).Val(), "cluster_state:ok") {
		time.Sleep(10 * time.Millisecond) // polls for an event; the test's timeout bounds it
	}
	return addr
}
