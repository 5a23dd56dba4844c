package ratelimit_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// refundFails is a memory store whose refunds fail.
type refundFails struct{ ratelimit.Store }

func (refundFails) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errors.New("refund refused")
}

// Guard.DoneLater completes a request after its handler returned (a Fiber body stream): the
// completion refunds as Done would, and an error it meets reaches the error handler with what
// it kept of the request (method, path, client address, context values; no headers), for the
// framework may have recycled the request by then. Done afterwards does nothing more.
func TestDoneLater(t *testing.T) {
	type ctxKey struct{}
	var seen ratelimit.Request
	l := mustNew(t, refundFails{ratelimit.NewMemoryStore()}, ratelimit.Policy{Limit: 10, Window: time.Hour})
	g, err := ratelimit.NewGuard(l, ratelimit.CountIf(func(int) bool { return false }),
		ratelimit.WithErrorHandler(func(r ratelimit.Request, err error) { seen = r }))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/export", nil)
	r.Header.Set("X-Trace", "abc")
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "kept"))
	o := g.Check(ratelimit.HTTPRequest(r))
	if !o.Proceed || !o.Pending {
		t.Fatalf("admitted %v, pending %v", o.Proceed, o.Pending)
	}
	done := g.DoneLater(&o)
	g.Done(&o, 200) // the handler's return: nothing more to do
	if seen != nil {
		t.Fatal("Done after DoneLater completed the request again")
	}
	done(200)
	if seen == nil {
		t.Fatal("the completion's failed refund reached no error handler")
	}
	if seen.Method() != "POST" || seen.Path() != "/export" || seen.RemoteAddr() != r.RemoteAddr || seen.Value(ctxKey{}) != "kept" || seen.Header("X-Trace") != "" {
		t.Errorf("the request the error handler saw: %s %s from %s, value %v, header %q; want what DoneLater keeps",
			seen.Method(), seen.Path(), seen.RemoteAddr(), seen.Value(ctxKey{}), seen.Header("X-Trace"))
	}
	if g.DoneLater(&o) != nil {
		t.Error("DoneLater of a completed request returned a completion")
	}
}
