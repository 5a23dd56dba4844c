package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
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
		if res.Bad > 0 {
			return fmt.Errorf("%d of the requests to /%s failed or were not 200", res.Bad, name)
		}
		f["http."+name] = res.RPS
		f["http.p50."+name] = micros(res.P50)
		f["http.p99."+name] = micros(res.P99)
		f["http.p999."+name] = micros(res.P999)
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

// load runs the load generator against url for d with e.s.goroutines connections.
func (e *env) load(ctx context.Context, url string, d time.Duration) (loadgen.HTTPResult, error) {
	return loadgen.HTTP(ctx, e.wrk, url, e.s.goroutines, d)
}
