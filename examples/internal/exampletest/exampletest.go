// Package exampletest runs an example server of this module as a user would: it builds the
// command in the test's directory, starts it on a free loopback port with the environment a
// test gives, waits for its "serving" log line, sends it requests, and stops it with SIGTERM,
// failing the test unless it shuts down cleanly.
package exampletest

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

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

// Main runs the tests with redistest's servers, then removes the built example.
func Main(m *testing.M) int {
	code := redistest.Main(m)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	return code
}

// Build builds the command in the current directory once per test binary and returns the
// executable. It skips the test when the go command is not in PATH.
func Build(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not in PATH")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "example-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "example")
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

// Instance is a running example server.
type Instance struct {
	URL  string
	mu   sync.Mutex
	buf  strings.Builder
	stop context.CancelFunc // sends SIGTERM
	read chan struct{}      // closed when the whole log has been read
}

// Stop stops the instance (SIGTERM) and returns its whole log, read to its end. What it logged
// while serving a request may reach Log only after the response has reached the client: a
// check of a line that a request logs reads Stop's log, which has every line.
func (i *Instance) Stop() string {
	i.stop()
	<-i.read
	return i.Log()
}

// Log returns what the instance has logged so far.
func (i *Instance) Log() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.buf.String()
}

var serving = regexp.MustCompile(`msg=serving url=(http://\S+)`)

// Start runs the example on a free loopback port with env added to the environment; it is
// stopped (SIGTERM, then SIGKILL) when the test ends.
func Start(t *testing.T, bin string, env ...string) *Instance {
	t.Helper()
	return StartArgs(t, bin, nil, env...)
}

// StartArgs is Start with the command-line arguments args (an example's flags).
func StartArgs(t *testing.T, bin string, args []string, env ...string) *Instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
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
	inst := &Instance{stop: cancel, read: make(chan struct{})}
	t.Cleanup(func() {
		cancel() // SIGTERM: the example shuts down and exits 0
		err := cmd.Wait()
		if st := cmd.ProcessState; st == nil || !st.Success() {
			t.Errorf("the example did not shut down cleanly: %v (%v)\n%s", st, err, inst.Log())
		}
	})
	found := make(chan string, 1)
	go func() {
		defer close(inst.read)
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
	case inst.URL = <-found:
		return inst
	case <-time.After(15 * time.Second):
		t.Fatalf("the example did not start serving within 15 s:\n%s", inst.Log())
		return nil
	}
}

var client = &http.Client{Timeout: 5 * time.Second}

// Do sends a request without a body, with the header name, value pairs given, and returns
// the response, its body read and closed.
func Do(t *testing.T, method, url string, header ...string) *http.Response {
	t.Helper()
	resp, _ := Read(t, method, url, header...)
	return resp
}

// Read is Do, and returns the body too.
func Read(t *testing.T, method, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return &http.Response{Header: http.Header{}}, ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return resp, string(body)
}

// CheckDecision checks that the body of a page tells the client's remaining quota under the
// policy named burst, as the handler read it from the limiter's decision, and that it is the
// quota of the X-RateLimit-Remaining header.
func CheckDecision(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	want := fmt.Sprintf("%s requests left under %q\n", resp.Header.Get("X-RateLimit-Remaining"), "burst")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-RateLimit-Remaining") == "" || !strings.HasSuffix(body, want) {
		t.Errorf("got %d %q with X-RateLimit-Remaining %q, want 200 and a body ending %q",
			resp.StatusCode, body, resp.Header.Get("X-RateLimit-Remaining"), want)
	}
}

// Statuses sends n requests and returns their statuses. A 429 must carry Retry-After.
func Statuses(t *testing.T, n int, method, url string, header ...string) []int {
	t.Helper()
	var got []int
	for range n {
		resp := Do(t, method, url, header...)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: a 429 without Retry-After: %v", method, url, resp.Header)
		}
		got = append(got, resp.StatusCode)
	}
	return got
}
