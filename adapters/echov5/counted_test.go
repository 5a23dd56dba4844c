package echov5limit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	echov5limit "github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/internal/httpspec"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// A login behind net/http's middleware around the Echo v5 server, then the route's Echo guard, is
// one request to the observer: the route's guard takes over the report the middleware left in
// the request's context.
func TestNetHTTPAroundEchoCountsOnce(t *testing.T) {
	told := &httpspec.Told{}
	l := mustNew(httpspec.Observed(ratelimit.NewMemoryStore(), told), ratelimit.Policy{Limit: 10, Window: time.Second})
	e := echo.New()
	e.POST("/login", func(c *echo.Context) error { return c.NoContent(http.StatusOK) },
		echov5limit.New(l, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 1, Window: time.Minute})))
	h := ratelimit.Middleware(l)(e)
	for _, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login", nil))
		if w.Code != want {
			t.Fatalf("login: %d, want %d", w.Code, want)
		}
	}
	got, want := told.Results(), []observe.Result{observe.ResultAllowed, observe.ResultDenied}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("told %v, want %v: one result a login", got, want)
	}
}
