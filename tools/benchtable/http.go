package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
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
		res, err := e.load(ctx, base+"/"+name, e.s.httpPhase)
		if err != nil {
			return err
		}
		if res.bad > 0 {
			return fmt.Errorf("%d of the requests to /%s failed or were not 200", res.bad, name)
		}
		f["http."+name] = res.rps
		f["http.p50."+name] = micros(res.p50)
		f["http.p99."+name] = micros(res.p99)
		f["http.p999."+name] = micros(res.p999)
	}
	f["http.failedopen"] = float64(failed.Load())
	return nil
}

// micros is d in µs.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

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

// loaded is what a load run measured: the requests per second, how many failed or were not
// 200, and the latency of a request at the 50th, 99th and 99.9th percentiles.
type loaded struct {
	rps            float64
	bad            int64
	p50, p99, p999 time.Duration
}

// load runs the load generator against url for d with e.s.goroutines connections.
func (e *env) load(ctx context.Context, url string, d time.Duration) (loaded, error) {
	if e.wrk != "" {
		return runWrk(ctx, e.wrk, url, e.s.goroutines, d)
	}
	return goLoad(url, e.s.goroutines, d)
}

var (
	wrkRate   = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	wrkErrors = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkTail   = regexp.MustCompile(`latency-us p50 (\d+) p99 (\d+) p999 (\d+)`)
)

// wrkScript makes wrk print the percentiles it keeps, in µs, for wrkTail.
const wrkScript = `done = function(summary, latency, requests)
  io.write(string.format("latency-us p50 %d p99 %d p999 %d\n", latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
`

// runWrk runs wrk with one thread per core.
func runWrk(ctx context.Context, path, url string, conns int, d time.Duration) (loaded, error) {
	script, err := os.CreateTemp("", "benchtable-*.lua")
	if err != nil {
		return loaded{}, err
	}
	defer os.Remove(script.Name())
	if _, err := script.WriteString(wrkScript); err != nil {
		return loaded{}, err
	}
	if err := script.Close(); err != nil {
		return loaded{}, err
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	threads := min(runtime.NumCPU(), conns)
	out, err := exec.CommandContext(ctx, path, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns),
		"-d", strconv.Itoa(secs)+"s", "-s", script.Name(), url).CombinedOutput()
	if err != nil {
		return loaded{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		return loaded{}, errors.New("wrk printed no Requests/sec: " + string(out))
	}
	var res loaded
	res.rps, err = strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return loaded{}, err
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		res.bad += n
	}
	if m := wrkErrors.FindSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(string(s), 10, 64)
			res.bad += n
		}
	}
	m = wrkTail.FindSubmatch(out)
	if m == nil {
		return loaded{}, errors.New("wrk printed no percentiles: " + string(out))
	}
	for i, p := range []*time.Duration{&res.p50, &res.p99, &res.p999} {
		us, _ := strconv.ParseInt(string(m[i+1]), 10, 64)
		*p = time.Duration(us) * time.Microsecond
	}
	return res, nil
}

// goLoad is the load generator without wrk: conns goroutines, each with a keep-alive
// connection of its own, one request at a time, each timed.
func goLoad(url string, conns int, d time.Duration) (loaded, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		done, bad atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	took := make([][]time.Duration, conns) // each goroutine's, merged at the end
	start := time.Now()
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 1<<14)
			defer func() { took[i] = mine }()
			for !stop.Load() {
				done.Add(1)
				began := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				mine = append(mine, time.Since(began))
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
				}
			}
		}()
	}
	time.Sleep(d) // a measuring period, not a wait for an event
	stop.Store(true)
	wg.Wait()
	res := loaded{rps: float64(done.Load()) / time.Since(start).Seconds(), bad: bad.Load()}
	all := slices.Concat(took...)
	if len(all) == 0 {
		return loaded{}, errors.New("no request was answered")
	}
	slices.Sort(all)
	at := func(q float64) time.Duration { return all[min(len(all)-1, int(q*float64(len(all))))] }
	res.p50, res.p99, res.p999 = at(0.50), at(0.99), at(0.999)
	return res, nil
}
