package ratelimit_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// loggingErrStore is errStore with a logger, so that the guard's default error log goes to it.
// loggingErrStore is a store that always fails, on the test's clock (which the guard's error
// log reads).
type loggingErrStore struct {
	errStore
	clock *fakeClock
}

func (s loggingErrStore) Clock() ratelimit.Clock { return s.clock }

// TestAdv5BadRequestsMaskStoreFailureLog: the default error handler logs one error a second,
// whichever comes first. A client that sends one malformed request at the start of every
// second (a repeated X-API-Key) takes that line each second, so a store outage that lets every
// other request through unlimited (fail-open) is never logged as such: its only trace is
// not_logged_since of the "answered 400" lines.
// A client that sends one bad request each second (two X-API-Key lines) cannot keep a store
// outage out of the log: the default error handler logged the first error of each second of
// any kind, so 1,000 requests let through unlimited because the store failed went unsaid.
func TestBadRequestsDoNotHideStoreFailures(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(prev)
	clock := newFakeClock()
	l := mustNew(t, loggingErrStore{errStore{errors.New("connection refused")}, clock}, ratelimit.Policy{Name: "p", Limit: 10, Window: time.Minute})
	h := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(keys ...string) int {
		r := httptest.NewRequest("GET", "/", nil)
		for _, k := range keys {
			r.Header.Add("X-API-Key", k)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	unlimited := 0
	for s := 0; s < 10; s++ {
		clock.Advance(time.Second)
		send("a", "b") // the attacker's request: 400, logged
		for i := 0; i < 100; i++ {
			if send("good") == 200 {
				unlimited++ // the store failed: let through unlimited
			}
		}
	}
	if !strings.Contains(logs.String(), "store failed") {
		t.Errorf("%d requests were let through unlimited because the store failed, but no log line says so; the log:\n%s", unlimited, logs.String())
	}
}

// A settle that fails after the handler served a limited request is logged as what it is, not
// as the fail mode's answer: the client got a limited 200, and the hold, left in the store,
// ends with its lifetime having charged nothing.
func TestASettleThatFailsIsLoggedAsASettle(t *testing.T) {
	for _, closed := range []bool{false, true} {
		proxy := faultproxy.Start(t, redistest.Addr(t))
		client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { client.Close() })
		var buf syncBuffer
		store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 1000, Window: time.Minute})
		opts := []ratelimit.Option{ratelimit.ChargeAfter(cost.Reported)}
		if closed {
			opts = append(opts, ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}))
		}
		h := ratelimit.Middleware(l, opts...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			proxy.Refuse() // Redis goes away while the handler runs
			w.WriteHeader(http.StatusOK)
		}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") == "" {
			t.Fatalf("status %d, headers %v", w.Code, w.Header())
		}
		out := buf.String()
		if strings.Contains(out, "let through unlimited") || strings.Contains(out, "refused (fail-closed)") || !strings.Contains(out, "could not be settled") {
			t.Errorf("FailClosed %v: a failed settle of a limited, served request is not logged as one:\n%s", closed, out)
		}
	}
}

// The same when the store's breaker is open by the time the settle runs: the breaker refuses it
// without naming an operation, and the log took the refusal for the request's fail mode (found
// by a review; the test above met it now and then, when a failed dial opened the breaker first).
func TestASettleRefusedByTheOpenBreakerIsLoggedAsASettle(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	var buf syncBuffer
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithBreaker(1, time.Hour),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 1000, Window: time.Minute})
	other := mustNew(t, store, ratelimit.Policy{Name: "other", Limit: 1000, Window: time.Minute})
	h := ratelimit.Middleware(l, ratelimit.ChargeAfter(cost.Reported))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.Refuse()
		for range 3 {
			_, _ = other.Allow(r.Context(), "k") // fails, and opens the breaker
		}
		w.WriteHeader(http.StatusOK)
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	out := buf.String()
	if w.Code != http.StatusOK || !strings.Contains(out, "circuit breaker opened") {
		t.Fatalf("status %d; the breaker did not open:\n%s", w.Code, out)
	}
	if strings.Contains(out, "let through unlimited") || !strings.Contains(out, "could not be settled") {
		t.Errorf("a settle refused by the open breaker is not logged as a settle:\n%s", out)
	}
}
