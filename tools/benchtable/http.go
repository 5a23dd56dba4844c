package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

// httpFigures takes the allocations of one request through the middleware and through the
// floor wrapper (one trivial EVALSHA, then the handler), and the requests per second of a
// real net/http server on loopback, under the same load generator, for the bare handler, the
// floor wrapper and the middleware. Every request comes from one address, so the middleware
// has a policy that never denies it.
func (e *env) httpFigures(ctx context.Context, r int, f figures) error {
	l, err := limiter(e.client, fmt.Sprintf("bt%d:http:", r), oneClient)
	if err != nil {
		return err
	}
	var failed atomic.Int64
	ours := ratelimit.Middleware(l, ratelimit.WithErrorHandler(func(ratelimit.Request, error) { failed.Add(1) }))(okHandler)
	floor := e.evalshaWrapper(okHandler)
	f["allocs.mw.floor"] = handlerAllocs(floor)
	f["allocs.mw"] = handlerAllocs(ours)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/bare", okHandler)
	mux.Handle("/evalsha", floor)
	mux.Handle("/ours", ours)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	for _, name := range []string{"bare", "evalsha", "ours"} {
		rps, bad, err := e.load(ctx, base+"/"+name, e.s.httpPhase)
		if err != nil {
			return err
		}
		if bad > 0 {
			return fmt.Errorf("%d of the requests to /%s failed or were not 200", bad, name)
		}
		f["http."+name] = rps
	}
	f["http.failedopen"] = float64(failed.Load())
	return nil
}

// evalshaWrapper is the floor of the middleware: one trivial EVALSHA on the client's
// address, then next.
func (e *env) evalshaWrapper(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if err := e.evalsha(r.Context(), "ip:"+host); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// discardWriter is the cheapest http.ResponseWriter, so that allocations are the handler's.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// handlerAllocs returns the allocations of one request through h.
func handlerAllocs(h http.Handler) float64 {
	return testing.AllocsPerRun(allocRuns, serveOne(h))
}

// serveOne returns a function that serves one request through h, to a discardWriter: what the
// allocation and time figures of a handler call.
func serveOne(h http.Handler) func() {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "203.0.113.7:1234"
	w := &discardWriter{h: http.Header{}}
	return func() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// load runs the load generator against url for d with e.s.goroutines connections and returns
// the requests per second and how many failed or were not 200.
func (e *env) load(ctx context.Context, url string, d time.Duration) (float64, int64, error) {
	if e.wrk != "" {
		return runWrk(ctx, e.wrk, url, e.s.goroutines, d)
	}
	return goLoad(url, e.s.goroutines, d)
}

var (
	wrkRate   = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	wrkErrors = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// runWrk runs wrk with one thread per core.
func runWrk(ctx context.Context, path, url string, conns int, d time.Duration) (float64, int64, error) {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	threads := min(runtime.NumCPU(), conns)
	out, err := exec.CommandContext(ctx, path, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns),
		"-d", strconv.Itoa(secs)+"s", url).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("wrk: %w: %s", err, out)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		return 0, 0, errors.New("wrk printed no Requests/sec: " + string(out))
	}
	rps, err := strconv.ParseFloat(string(m[1]), 64)
	var bad int64
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		bad += n
	}
	if m := wrkErrors.FindSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(string(s), 10, 64)
			bad += n
		}
	}
	return rps, bad, err
}

// goLoad is the load generator without wrk: conns goroutines, each with a keep-alive
// connection of its own, one request at a time.
func goLoad(url string, conns int, d time.Duration) (float64, int64, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		done, bad atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				done.Add(1)
				resp, err := client.Get(url)
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
				}
			}
		}()
	}
	time.Sleep(d) // a measuring period, not a wait for an event
	stop.Store(true)
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), bad.Load(), nil
}
