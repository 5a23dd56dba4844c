package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/redistest"
)

func TestMain(m *testing.M) {
	code := redistest.Main(m)
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// burst is the example's short policy: what one client is admitted in a few seconds.
const burst = 5

// TestSharedLimitAcrossInstances builds the example, runs three instances of it sharing one
// Redis, and sends concurrent requests from one client across all three: the instances
// together admit exactly what the policy allows.
func TestSharedLimitAcrossInstances(t *testing.T) {
	bin := buildExample(t)
	env := []string{"REDIS_URL=redis://" + redistest.Addr(t) + "/0", "RATELIMIT_PREFIX=" + redistest.Prefix(t)}
	var urls []string
	for range 3 {
		inst := start(t, bin, env...)
		if !strings.Contains(inst.log(), "using the Redis store") {
			t.Fatalf("the instance does not say it uses Redis:\n%s", inst.log())
		}
		urls = append(urls, inst.url)
	}

	const perInstance = 20
	start := time.Now()
	codes := make(chan int, 3*perInstance)
	var wg sync.WaitGroup
	for i := range 3 * perInstance {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := get(t, urls[i%3]+"/items/"+fmt.Sprint(i))
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Errorf("a 429 without Retry-After: %v", resp.Header)
			}
			if resp.Header.Get("X-RateLimit-Limit") != fmt.Sprint(burst) {
				t.Errorf("got X-RateLimit-Limit %q, want %d", resp.Header.Get("X-RateLimit-Limit"), burst)
			}
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	if elapsed := time.Since(start); elapsed > 9*time.Second {
		t.Fatalf("the requests took %v, longer than the 10 s window the count relies on", elapsed)
	}
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[200] != burst || count[429] != 3*perInstance-burst {
		t.Errorf("got %v, want %d admitted and the other %d refused", count, burst, 3*perInstance-burst)
	}
}

// TestMemoryStore runs the example without Redis.
func TestMemoryStore(t *testing.T) {
	inst := start(t, buildExample(t))
	if !strings.Contains(inst.log(), "using the memory store") {
		t.Fatalf("the instance does not say it uses the memory store:\n%s", inst.log())
	}
	var got []int
	for range burst + 1 {
		got = append(got, get(t, inst.url+"/").StatusCode)
	}
	if want := "[200 200 200 200 200 429]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildExample builds the example once per test binary and returns the executable.
func buildExample(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not in PATH")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nethttp-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "nethttp")
		out, err := exec.Command(goBin, "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// instance is a running example server.
type instance struct {
	url string
	mu  sync.Mutex
	buf strings.Builder
}

func (i *instance) log() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.buf.String()
}

var serving = regexp.MustCompile(`msg=serving url=(http://\S+)`)

// start runs the example on a free loopback port, stopped (SIGTERM, then SIGKILL) when the test
// ends.
func start(t *testing.T, bin string, env ...string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), append([]string{"ADDR=127.0.0.1:0"}, env...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inst := &instance{}
	t.Cleanup(func() {
		cancel() // SIGTERM: the example shuts down and exits 0
		err := cmd.Wait()
		if st := cmd.ProcessState; st == nil || !st.Success() {
			t.Errorf("the example did not shut down cleanly: %v (%v)\n%s", st, err, inst.log())
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			inst.mu.Lock()
			inst.buf.WriteString(sc.Text() + "\n")
			inst.mu.Unlock()
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case inst.url = <-found:
		return inst
	case <-time.After(15 * time.Second):
		t.Fatalf("the example did not start serving within 15 s:\n%s", inst.log())
		return nil
	}
}

var client = &http.Client{Timeout: 5 * time.Second}

// get sends GET url and returns the response, its body read.
func get(t *testing.T, url string) *http.Response {
	resp, err := client.Get(url)
	if err != nil {
		t.Error(err)
		return &http.Response{Header: http.Header{}}
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
