package ratelimit_test

// What only the net/http middleware does. Every request/response scenario of the middleware is
// in the HTTP spec table (internal/testing/httpspec), which runs through net/http (httpspec_nethttp_test.go)
// and every framework adapter alike.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// fixed is a fixed-window policy, whose headers are easy to read: the window ends at a whole
// multiple of its length after t0.
func fixed(limit int64, window time.Duration, name string) ratelimit.Policy {
	return ratelimit.Policy{Name: name, Limit: limit, Window: window, Algorithm: algorithms.FixedWindow{}}
}

// errStore is a store that always fails.
type errStore struct{ err error }

func (s errStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, s.err
}
func (s errStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return s.err
}
func (s errStore) Reset(context.Context, string, []ratelimit.Policy) error { return s.err }

// TestMiddlewareDecisionFrom: the handler behind the middleware finds the decision the headers
// describe in its request's context, and none when the limiter did not decide.
func TestMiddlewareDecisionFrom(t *testing.T) {
	type seen struct {
		decision ratelimit.Decision
		ok       bool
		pattern  string
		user     any
		calls    int
	}
	var got seen
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.decision, got.ok = ratelimit.DecisionFrom(r.Context())
		got.pattern, got.user = r.Pattern, r.Context().Value(userKey{})
		got.calls++
		w.WriteHeader(http.StatusUnauthorized)
	})
	send := func(h http.Handler, target string) *httptest.ResponseRecorder {
		got = seen{}
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r = r.WithContext(context.WithValue(r.Context(), userKey{}, "bob")) // an earlier middleware's value
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	header := func(w *httptest.ResponseRecorder, name string) int64 {
		n, err := strconv.ParseInt(w.Header().Get(name), 10, 64)
		if err != nil {
			return -1 // matches no decision
		}
		return n
	}

	for _, countIf := range []bool{false, true} { // with CountIf, the handler writes through the middleware's writer
		t.Run("CountIf="+strconv.FormatBool(countIf), func(t *testing.T) {
			clock := newFakeClock()
			l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), fixed(10, time.Hour, "hour"), fixed(3, time.Minute, "minute"))
			opts := []ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return r.Path() == "/items/skip" }})}
			if countIf {
				opts = append(opts, ratelimit.CountIf(func(int) bool { return true }))
			}
			mux := http.NewServeMux()
			mux.Handle("GET /items/{id}", ratelimit.Middleware(l, opts...)(record))
			for i, remaining := range []int64{2, 1, 0} {
				clock.Advance(time.Second)
				w := send(mux, "/items/7")
				d := got.decision
				if !got.ok || got.calls != 1 {
					t.Fatalf("request %d: DecisionFrom reported %v, handler calls %d; want the decision, once", i, got.ok, got.calls)
				}
				if !d.Allowed || d.Remaining != remaining || d.Remaining != header(w, "X-RateLimit-Remaining") ||
					d.Limit != 3 || d.Limit != header(w, "X-RateLimit-Limit") || d.Policy.Name != "minute" || d.Delay != 0 || d.RetryAfter != 0 {
					t.Errorf("request %d: got decision %+v with headers %v; want allowed by %q with %d remaining, as the headers say",
						i, d, w.Header(), "minute", remaining)
				}
				if reset := clock.Now().Add(d.ResetAfter); reset.Unix() > header(w, "X-RateLimit-Reset") || reset.Unix() < header(w, "X-RateLimit-Reset")-1 {
					t.Errorf("request %d: ResetAfter %v ends at %v; X-RateLimit-Reset is %d", i, d.ResetAfter, reset, header(w, "X-RateLimit-Reset"))
				}
				if rs := d.Results(); len(rs) != 2 || rs[0].Policy.Name != "hour" || rs[0].Remaining != 9-int64(i) ||
					rs[1].Policy.Name != "minute" || rs[1].Remaining != remaining || !rs[0].Allowed || !rs[1].Allowed {
					t.Errorf("request %d: got results %+v, want every policy's, in order", i, rs)
				}
				// The middleware hands the handler the request it had, the mux's pattern and an
				// earlier middleware's values included.
				if got.pattern != "GET /items/{id}" || got.user != "bob" {
					t.Errorf("request %d: the handler saw pattern %q and user %v", i, got.pattern, got.user)
				}
			}
			if w := send(mux, "/items/7"); w.Code != http.StatusTooManyRequests || got.calls != 0 {
				t.Errorf("a denied request: got status %d, %d handler calls; want 429, none", w.Code, got.calls)
			}
			if send(mux, "/items/skip"); got.calls != 1 || got.ok || got.user != "bob" {
				t.Errorf("a skipped request: got decision %v (%+v) in %d calls; want none, in one call", got.ok, got.decision, got.calls)
			}
		})
	}

	t.Run("failed open", func(t *testing.T) {
		l := mustNew(t, errStore{errors.New("disk on fire")}, fixed(1, time.Minute, "minute"))
		h := ratelimit.Middleware(l, ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))(record)
		if w := send(h, "/"); w.Code != http.StatusUnauthorized || got.calls != 1 || got.ok {
			t.Errorf("got status %d, %d handler calls, decision %v; want the handler's 401 without a decision", w.Code, got.calls, got.ok)
		}
	})
	if d, ok := ratelimit.DecisionFrom(context.Background()); ok || d.Limit != 0 {
		t.Errorf("DecisionFrom of a context without a decision: got %+v, %v", d, ok)
	}
}

// TestMiddlewareClientGone: a request whose client is gone before the check is not served,
// and nobody is paged for it.
func TestMiddlewareClientGone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store, fixed(1, time.Minute, "minute"))
		var reported []error
		handled := false
		h := ratelimit.Middleware(l, ratelimit.WithTimeout(time.Minute), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}),
			ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		if w.Code != 499 || handled || len(reported) != 0 || w.Header().Get("Retry-After") != "" ||
			w.Body.String() != "Client Closed Request: the request was cancelled.\n" {
			t.Errorf("got status %d, body %q, handled %v, reported %v; want 499, not handled, nothing reported", w.Code, w.Body, handled, reported)
		}
		// Nothing was charged.
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusOK || !handled {
			t.Errorf("the next request: got status %d, handled %v; want 200", w.Code, handled)
		}
	})
}

// TestCountIfSeesTheStatus runs count-by-outcome through handlers that answer in every way.
func TestCountIfSeesTheStatus(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		counted bool
	}{
		{"WriteHeader", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }, true},
		{"interim response first", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(103); w.WriteHeader(401) }, true},
		{"Write only", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }, false},
		{"Write, then a status too late", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")); w.WriteHeader(401) }, false},
		{"nothing", func(w http.ResponseWriter, r *http.Request) {}, false},
		{"Flush", func(w http.ResponseWriter, r *http.Request) { w.(http.Flusher).Flush(); w.WriteHeader(401) }, false},
		{"ResponseController", func(w http.ResponseWriter, r *http.Request) {
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Error(err)
			}
		}, false},
		{"Hijack unsupported", func(w http.ResponseWriter, r *http.Request) {
			if _, _, err := w.(http.Hijacker).Hijack(); err == nil {
				t.Error("a recorder was hijacked")
			}
			w.WriteHeader(401)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), fixed(1, time.Minute, "minute"))
			h := ratelimit.Middleware(l, ratelimit.CountIf(func(s int) bool { return s == 401 }))(c.handler)
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			if counted := w.Code == 429; counted != c.counted {
				t.Errorf("counted: got %v, want %v", counted, c.counted)
			}
		})
	}
}

// TestMiddlewareWriterPassesThrough: with CountIf the handler writes through the middleware's
// writer, which still flushes, hijacks and reaches the server's writer for
// http.ResponseController, on a real server.
func TestMiddlewareWriterPassesThrough(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), fixed(1, time.Minute, "minute"))
	countIf := ratelimit.CountIf(func(s int) bool { return s >= 400 })

	t.Run("Flush", func(t *testing.T) {
		h := ratelimit.Middleware(l, countIf, ratelimit.WithKey(keyOfTest(t)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if !w.Flushed || w.Body.String() != "partial" {
			t.Errorf("flushed %v, body %q; want the handler's flush to reach the recorder", w.Flushed, w.Body)
		}
	})

	t.Run("ResponseController", func(t *testing.T) {
		srv := httptest.NewServer(ratelimit.Middleware(l, countIf, ratelimit.WithKey(keyOfTest(t)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			// Only the server's own writer has deadlines: reached through Unwrap.
			if err := rc.SetWriteDeadline(time.Now().Add(time.Hour)); err != nil {
				t.Errorf("SetWriteDeadline: %v", err)
			}
			if err := rc.EnableFullDuplex(); err != nil {
				t.Errorf("EnableFullDuplex: %v", err)
			}
			w.WriteHeader(http.StatusAccepted)
		})))
		defer srv.Close()
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("got status %d, want 202", resp.StatusCode)
		}
	})

	// A hijacked connection's status is 101 Switching Protocols, which does not count here:
	// both requests are served under a limit of 1.
	t.Run("Hijack", func(t *testing.T) {
		notSwitching := ratelimit.CountIf(func(s int) bool { return s != http.StatusSwitchingProtocols })
		h := ratelimit.Middleware(l, notSwitching, ratelimit.WithKey(keyOfTest(t)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 418 I'm a teapot\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			rw.Flush()
		}))
		served := make(chan struct{}, 1) // the middleware has returned: the request is complete
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			served <- struct{}{}
		}))
		defer srv.Close()
		for i := range 2 {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			conn.Close()
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if resp.StatusCode != http.StatusTeapot {
				t.Errorf("request %d: got status %d, want the hijacker's 418", i, resp.StatusCode)
			}
			<-served
		}
	})
}

// keyOfTest keys every request by the test's name, so tests sharing a store stay apart.
func keyOfTest(t *testing.T) ratelimit.KeyFunc {
	key := keyOf(t)
	return func(ratelimit.Request) (string, error) { return key, nil }
}

// TestMiddlewareFallbackKey: around a handler in front of the mux the route is not known yet
// (net/http sets r.Pattern when the mux routes the request), so a key of the client IP and the
// route finds no key, and every request is limited by its client IP: the client behind the
// trusted proxies, not the load balancer. Around the mux itself the middleware asks it the
// route, and on the route's handler the route is known: each route has its own quota.
func TestMiddlewareFallbackKey(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		ipAndRoute := ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())
		proxies := ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8")
		send := func(h http.Handler, client, path string) int {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = "10.0.0.1:5555" // the load balancer
			r.Header.Set("X-Forwarded-For", client+", 10.0.0.2")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w.Code
		}
		perRoute := []struct {
			client, path string
			want         int
		}{
			{"203.0.113.1", "/items/7", 200}, {"203.0.113.1", "/items/8", 200}, {"203.0.113.1", "/items/9", 429},
			{"203.0.113.1", "/other", 200}, {"203.0.113.2", "/items/7", 200},
		}
		t.Run("around the mux", func(t *testing.T) {
			l := mustNew(t, store, fixed(2, time.Minute, "around-mux"))
			mux := http.NewServeMux()
			mux.Handle("GET /items/{id}", okHandler)
			mux.Handle("GET /other", okHandler)
			h := ratelimit.Middleware(l, ratelimit.WithKey(ipAndRoute), proxies, ratelimit.WithTimeout(time.Minute), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}))(mux)
			for i, c := range perRoute {
				if got := send(h, c.client, c.path); got != c.want {
					t.Errorf("request %d, %s from %s: got status %d, want %d", i, c.path, c.client, got, c.want)
				}
			}
		})
		t.Run("around a handler in front of the mux", func(t *testing.T) {
			l := mustNew(t, store, fixed(2, time.Minute, "around"))
			mux := http.NewServeMux()
			mux.Handle("GET /items/{id}", okHandler)
			mux.Handle("GET /other", okHandler)
			h := ratelimit.Middleware(l, ratelimit.WithKey(ipAndRoute), proxies, ratelimit.WithTimeout(time.Minute), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}))(http.HandlerFunc(mux.ServeHTTP))
			for i, c := range []struct {
				client, path string
				want         int
			}{
				{"203.0.113.1", "/items/7", 200}, {"203.0.113.1", "/items/7", 200}, {"203.0.113.1", "/other", 429},
				{"203.0.113.2", "/items/7", 200}, {"203.0.113.2", "/other", 200}, {"203.0.113.2", "/items/8", 429},
				{"198.51.100.7", "/items/7", 200},
			} {
				if got := send(h, c.client, c.path); got != c.want {
					t.Errorf("request %d, %s from %s: got status %d, want %d", i, c.path, c.client, got, c.want)
				}
			}
		})
		t.Run("on the route", func(t *testing.T) {
			l := mustNew(t, store, fixed(2, time.Minute, "on-route"))
			mw := ratelimit.Middleware(l, ratelimit.WithKey(ipAndRoute), proxies, ratelimit.WithTimeout(time.Minute), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}))
			mux := http.NewServeMux()
			mux.Handle("GET /items/{id}", mw(okHandler))
			mux.Handle("GET /other", mw(okHandler))
			for i, c := range perRoute {
				if got := send(mux, c.client, c.path); got != c.want {
					t.Errorf("request %d, %s from %s: got status %d, want %d", i, c.path, c.client, got, c.want)
				}
			}
		})
	})
}

// TestRouteQuotaAcrossMethods: a route registered without a method answers every method, and
// its quota is one: cycling the methods does not multiply it. Per-method quotas are asked for by
// joining KeyByMethod.
func TestRouteQuotaAcrossMethods(t *testing.T) {
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "BREW"}
	serve := func(t *testing.T, key ratelimit.KeyFunc) int {
		l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 5, Window: time.Hour})
		mux := http.NewServeMux()
		mux.Handle("/export", ratelimit.Middleware(l, ratelimit.WithKey(key))(okHandler))
		admitted := 0
		for range 5 {
			for _, m := range methods {
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, httptest.NewRequest(m, "/export", nil))
				if w.Code == http.StatusOK {
					admitted++
				}
			}
		}
		return admitted
	}
	if got := serve(t, ratelimit.KeyByRoute()); got != 5 {
		t.Errorf("5 per hour on the route, 9 methods 5 times each: %d admitted, want 5", got)
	}
	perMethod := ratelimit.KeyJoin(ratelimit.KeyByRoute(), ratelimit.KeyByMethod())
	if got := serve(t, perMethod); got != 5*len(methods) {
		t.Errorf("5 per hour per route and method, 9 methods 5 times each: %d admitted, want %d", got, 5*len(methods))
	}
}
