package ratelimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// The access lists' refusal of an unreadable client IP reports an error that is not of kind
// ErrBadRequest (the keyOf path wraps it; verdict does not): the default error log puts it in
// the class of store failures, which one bad request a second then hides.
// The error of a client IP the Deny networks cannot read is a bad request (ErrBadRequest):
// plain, the error log counted it with the store's failures, which it could hide again.
func TestAccessUnreadableAddressIsABadRequest(t *testing.T) {
	for _, v := range []string{"1.1.1.1,junk"} {
		store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
		l := mustNew(t, store, ratelimit.Policy{Name: "p", Limit: 100, Window: time.Minute})
		var got error
		h := ratelimit.Middleware(l,
			ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"),
			ratelimit.WithAccess(ratelimit.Access{Deny: []string{"192.0.2.0/24"}}),
			ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { got = err }),
		)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:4000"
		r.Header.Set("X-Forwarded-For", v)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest || !errors.Is(got, ratelimit.ErrBadRequest) {
			t.Errorf("XFF %q: %d, error %v (ErrBadRequest: %v); want 400 and an ErrBadRequest", v, w.Code, got, errors.Is(got, ratelimit.ErrBadRequest))
		}
	}
}
