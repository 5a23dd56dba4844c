package ratelimit_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// An outgoing call to an LLM provider: the Transport holds its estimate while it is in flight
// and, when the caller closes the body, charges the usage the caller read from the response and
// reported on the request's context (resp.Request.Context()); a call the caller reports
// nothing of is charged its estimate, the bytes read with cost.Written, and a round trip that
// fails, nothing.
func TestTransportChargeAfter(t *testing.T) {
	clock := &sleepingClock{now: t0}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Name: "tpm", Limit: 1000, Window: time.Minute})
	left := func() int64 { return remaining(t, l, "llm") }
	srv, _ := api(t, func(_ int64, w http.ResponseWriter) {
		io.WriteString(w, `{"usage":{"total_tokens":123}}`)
	})
	transport := func(charge func(cost.After) int64) *http.Client {
		return &http.Client{Transport: &ratelimit.Transport{Limiter: l, Key: func(*http.Request) string { return "llm" },
			Cost: func(*http.Request) int64 { return 200 }, ChargeAfter: charge}}
	}

	resp, err := transport(cost.Reported).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := left(); got != 800 {
		t.Errorf("%d left while the response is open, want 800: the estimate held", got)
	}
	var body struct {
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if !cost.Report(resp.Request.Context(), body.Usage.TotalTokens) {
		t.Fatal("the response's request carries no meter")
	}
	resp.Body.Close()
	if got := left(); got != 1000-123 {
		t.Errorf("%d left after the body was closed, want %d: the usage reported", got, 1000-123)
	}

	resp, err = transport(cost.Reported).Get(srv.URL) // nothing reported: the estimate
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := left(); got != 1000-123-200 {
		t.Errorf("%d left, want %d: the estimate of a call that reported nothing", got, 1000-123-200)
	}

	resp, err = transport(cost.Written).Get(srv.URL) // the bytes read
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := left(); got != 1000-123-200-n {
		t.Errorf("%d left, want %d: the %d bytes read", got, 1000-123-200-n, n)
	}

	before := left()
	srv.Close()
	if _, err := transport(cost.Reported).Get(srv.URL); err == nil {
		t.Fatal("a call to a closed server succeeded")
	}
	if got := left(); got != before {
		t.Errorf("%d left after a failed round trip, want %d: nothing charged", got, before)
	}
}
