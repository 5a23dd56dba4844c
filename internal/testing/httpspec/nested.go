package httpspec

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// LoginCountedOnce holds a framework's engine behind net/http's middleware to one result told
// a request: engine builds an application whose POST /login has a guard of the framework's
// adapter over l with the options login, answering 200. Two logins pass the middleware and
// are answered 200, then 429 by the route's limit of one a minute: the observer must be told
// allowed, then denied, once each (the route's guard takes over the report the middleware left
// in the request's context).
func LoginCountedOnce(t *testing.T, engine func(l *ratelimit.Limiter, login ...ratelimit.Option) http.Handler) {
	t.Helper()
	told := &Told{}
	l, err := ratelimit.New(Observed(ratelimit.NewMemoryStore(), told.Observer()), ratelimit.Policy{Limit: 10, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l)(engine(l, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 1, Window: time.Minute})))
	for _, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login", nil))
		if w.Code != want {
			t.Fatalf("login: %d, want %d", w.Code, want)
		}
	}
	if got, want := told.Results(), []observe.Result{observe.ResultAllowed, observe.ResultDenied}; !slices.Equal(got, want) {
		t.Errorf("told %v, want %v: one result a login", got, want)
	}
}
