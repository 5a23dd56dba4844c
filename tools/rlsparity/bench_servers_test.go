package rlsparity

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
)

// The benchmark's runtime (testdata/bench/runtime/config/bench.yaml), which both servers read.
const benchRoot = "testdata/bench"

// tail is an io.Writer that keeps the last 4096 bytes written to it: a server's log, which an
// outage can make long.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4096

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > tailSize {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// oursCommand starts the command ratelimit-rls over redisAddr with the benchmark's
// configuration and the extra flags; it returns its gRPC address. It is killed when the test
// ends. It returns its gRPC address and its process id.
func oursCommand(t *testing.T, redisAddr string, extra ...string) proc {
	t.Helper()
	bin := oursBin.build(t)
	config, err := filepath.Abs(filepath.Join(benchRoot, runtimeSubdir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	args := append([]string{"-config", config, "-redis", redisAddr, "-grpc-addr", grpcAddr, "-http-addr", httpAddr, "-reload", "0"}, extra...)
	cmd := exec.Command(bin, args...)
	log := &tail{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("ratelimit-rls %v: its log (its end):\n%s", extra, log)
		}
	})
	return proc{grpcAddr, cmd.Process.Pid}
}

// answering returns once c answers a call of the benchmark's domain, or fails the test after
// a minute (a server that never starts; the reference may take a few seconds).
func answering(t *testing.T, c rlsv3.RateLimitServiceClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		if _, err := c.ShouldRateLimit(ctx, benchRequest(1, 0)); err == nil {
			return
		} else if ctx.Err() != nil {
			t.Fatalf("the server never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // a poll of its port, not a deadline
	}
}

// userHZ is the unit of a process's times in /proc/PID/stat: USER_HZ, 100 on Linux.
const userHZ = 100

// cpuTime is the CPU time process pid has used, user and system, from /proc/PID/stat; 0
// where there is none (not Linux).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses and may hold spaces:
	// state is the 3rd field of the line, utime and stime the 14th and 15th.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / userHZ
}

// redisCPUTime is the CPU time of the Redis server of rdb so far (INFO cpu: used_cpu_user and
// used_cpu_sys), 0 when it does not answer (it is down in the outage slices).
func redisCPUTime(ctx context.Context, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	var sum float64
	for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(loadgen.InfoField(info, f), 64)
		if err != nil {
			return 0
		}
		sum += v
	}
	return time.Duration(sum * float64(time.Second))
}

// selfCPUTime is this process's CPU time so far, user and system: the load generator's.
func selfCPUTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// loopback reports whether addr is a loopback address: the load goes nowhere else.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cpuTime reads a process's CPU time, which grows as it works: work, counted in operations
// (not a wall-clock time, which a busy machine could spend elsewhere), until it grows, up to
// far more than the 10 ms of CPU its unit is.
func TestCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/stat is Linux's")
	}
	before := cpuTime(os.Getpid())
	for chunk := 0; cpuTime(os.Getpid()) <= before; chunk++ {
		if chunk == 1000 {
			t.Fatalf("CPU time still %v after 10^8 operations", before)
		}
		for x := range 100_000 {
			_ = strconv.Itoa(x)
		}
	}
	if cpuTime(-1) != 0 {
		t.Error("a process that does not exist has a CPU time")
	}
}
