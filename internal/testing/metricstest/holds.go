package metricstest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// HoldFigures are what a metrics module shows of the holds of requests charged after they ran,
// at one moment.
type HoldFigures struct {
	Outstanding, Units    int64 // holds taken and not settled, and the units they hold
	Settles, Expired      int64 // settles of holds still held, and of holds that had expired
	SettledUnits          int64 // what the settles charged
	Over, Under           int64 // settles whose cost was above the estimate, and at or below it
	OverUnits, UnderUnits int64 // the sums of their distances from the estimate
	// The estimate error's buckets: the settles under by 0 (exact), under by 10 or less (0
	// included), over by 10 or less.
	UnderBy0, UnderBy10, OverBy10 int64
}

// Holds checks what read reports of holds (obs's figures) as a user meets them: requests
// through the middleware, estimated at 20 and charged what their handler reports
// (ChargeAfter(cost.Reported)) against 100 a minute on a memory store observed by obs, and a
// worker's two reservations at once. A request in its handler is outstanding, with its
// estimate; its settle counts its cost and its distance from the estimate, above (15: it
// reported 35) or at and below it (15: 5; 0: 20). A request that outlives its hold's lifetime
// (the minute), whose hold the next request of its client finds expired and gives back,
// settles an expired hold; until then it is outstanding on this instance.
func Holds(t *testing.T, obs *ratelimit.Observer, read func() HoldFigures) {
	t.Helper()
	clock := fakeclock.New(fakeclock.T0)
	l := MustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithObserver(obs)),
		ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
	var (
		during HoldFigures // read in the handler
		inside func()      // what the next handler does once it read them
	)
	h := ratelimit.Middleware(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }),
		ratelimit.ChargeAfter(cost.Reported))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during = read()
		if f := inside; f != nil {
			inside = nil
			f()
		}
		n, _ := strconv.ParseInt(r.URL.Query().Get("report"), 10, 64)
		cost.Report(r.Context(), n)
	}))
	serve := func(report string) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/?report="+report, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("a request reporting %s answered %d, want 200", report, w.Code)
		}
		clock.Advance(time.Minute) // the next request finds the quota whole
	}
	check := func(when string, got, want HoldFigures) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %+v\nwant %+v", when, got, want)
		}
	}

	serve("35")
	check("in the handler of the first request", during, HoldFigures{Outstanding: 1, Units: 20})
	want := HoldFigures{Settles: 1, SettledUnits: 35, Over: 1, OverUnits: 15}
	check("after a request that cost 35", read(), want)

	serve("5")
	want.Settles, want.SettledUnits, want.Under, want.UnderUnits = 2, 40, 1, 15
	check("after a request that cost 5", read(), want)

	serve("20")
	want.Settles, want.SettledUnits, want.Under, want.UnderBy0, want.UnderBy10 = 3, 60, 2, 1, 1
	check("after a request that cost its estimate", read(), want)

	inside = func() {
		clock.Advance(2 * time.Minute) // the hold of this request lasts a minute
		serve("20")
		in := want
		in.Outstanding, in.Units = 2, 40
		check("in the handler of a request while another outlives its hold", during, in)
	}
	serve("28")
	want.Settles, want.SettledUnits, want.Under, want.UnderBy0, want.UnderBy10 = 4, 80, 3, 2, 2
	want.Expired, want.SettledUnits, want.Over, want.OverUnits, want.OverBy10 = 1, 108, 2, 23, 1
	check("after a request that outlived its hold", read(), want)

	ctx := context.Background()
	a, err := l.Reserve(ctx, "worker", 30)
	if err != nil || !a.Allowed {
		t.Fatalf("Reserve(30): %+v, %v", a, err)
	}
	b, err := l.Reserve(ctx, "worker", 25)
	if err != nil || !b.Allowed {
		t.Fatalf("Reserve(25): %+v, %v", b, err)
	}
	out := want
	out.Outstanding, out.Units = 2, 55
	check("with two reservations out", read(), out)
	if err := l.Settle(ctx, "worker", a, 24); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(ctx, "worker", b, 0); err != nil {
		t.Fatal(err)
	}
	want.Settles, want.SettledUnits, want.Under, want.UnderUnits, want.UnderBy10 = 6, 132, 5, 15+6+25, 3
	check("after both settled", read(), want)
}
