package simulate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// HoldsScenario is concurrent requests whose cost is known only once they end (the tokens of a
// completion), against one policy, run twice: charged after the fact, and with holds
// (Limiter.Reserve, then Limiter.Settle). The picture of README's "Costs known after the
// response".
type HoldsScenario struct {
	// Name is the stem of the picture: "holds" draws holds.svg.
	Name string
	// Title heads the picture.
	Title string
	// Traffic says in one line what arrives when.
	Traffic string
	// Policy is the one policy, of one identity.
	Policy ratelimit.Policy
	// Requests arrive Every apart from 0; each takes Takes once admitted.
	Requests     int
	Every, Takes time.Duration
	// Estimate is what a reservation holds; Actual what each request costs.
	Estimate, Actual int64
	// Shown are the stretches of time the picture shows, side by side; what falls between
	// them is left out (the test checks that nothing happens there).
	Shown []Span
	// SampleEvery is how often the state is read.
	SampleEvery time.Duration
}

// Length is the time the run lasts: to the end of the last stretch shown.
func (sc HoldsScenario) Length() time.Duration { return sc.Shown[len(sc.Shown)-1].End }

// Holds is the case: 100 tokens a minute, ten requests 500 ms apart, each estimated at
// 20 tokens and costing 30, each taking 5 s. A refused request comes back after its
// Retry-After, as a client that honours it does.
func Holds() HoldsScenario {
	return HoldsScenario{
		Name:        "holds",
		Title:       "Costs known after the response: charged after the fact, or held",
		Traffic:     "Ten requests 500 ms apart, each estimated at 20 tokens, costing 30 and taking 5 s.",
		Policy:      ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute, Algorithm: algorithms.SlidingLog{}},
		Requests:    10,
		Every:       500 * time.Millisecond,
		Takes:       5 * time.Second,
		Estimate:    20,
		Actual:      30,
		Shown:       []Span{{0, 10 * time.Second}, {58 * time.Second, 72 * time.Second}},
		SampleEvery: 100 * time.Millisecond,
	}
}

// HoldsMode is how a run charges a request whose cost is known at its end.
type HoldsMode int

const (
	// ChargedAfter admits a request when one more unit would be (Limiter.Peek: a check of
	// cost 1 that charges nothing) and charges its actual cost when it ends
	// (Limiter.Settle): the shape of gateways that count tokens from the response.
	ChargedAfter HoldsMode = iota
	// Held admits a request when its estimate fits beside what is used and held
	// (Limiter.Reserve), and charges its actual cost in place of the estimate when it ends
	// (Limiter.Settle).
	Held
)

// Call names the mode and its calls, as the picture does.
func (m HoldsMode) Call(sc HoldsScenario) string {
	if m == Held {
		return fmt.Sprintf("Held: Reserve(%d), then Settle(%d)", sc.Estimate, sc.Actual)
	}
	return fmt.Sprintf("After the fact: Peek, then Settle(%d)", sc.Actual)
}

// Attempt is one try of a request and the limiter's decision on it.
type Attempt struct {
	At         time.Duration
	Request    int
	Allowed    bool
	RetryAfter time.Duration
}

// Charge is what the limiter was asked to count at a time: a reservation's estimate (Held
// until its request settles), or what a settle charged beyond what its decision had (the
// whole actual when it had charged nothing).
type Charge struct {
	At      time.Duration
	Request int
	Units   int64
	// Estimate marks a reservation's estimate; Settled is when its request settled it.
	Estimate bool
	Settled  time.Duration
}

// HoldsSample is the state of the policy at one time: what the charges of the last Window
// come to, settled and held, and the Remaining of a cost-0 check (which stops at 0).
type HoldsSample struct {
	At         time.Duration
	Used, Held int64
	Remaining  int64
	// InFlight is how many requests were admitted and had not settled.
	InFlight int
}

// HoldsTrace is what the limiter made of one run.
type HoldsTrace struct {
	Mode     HoldsMode
	Attempts []Attempt
	Charges  []Charge
	Samples  []HoldsSample
	// Settles are the times requests ended and settled, in order.
	Settles []time.Duration
}

// RunHolds drives sc's requests through a limiter of sc.Policy over a store from newStore, on a
// fake clock standing at a whole hour, charging them as mode says, and reads the state every
// sc.SampleEvery, from 0 to sc.Length included. At one instant, requests that end settle
// first, then requests arrive or come back in the order they first arrived, then the state is
// read.
func RunHolds(ctx context.Context, sc HoldsScenario, mode HoldsMode, newStore NewStore) (HoldsTrace, error) {
	clock := &stepClock{now: t0}
	limiter, err := ratelimit.New(newStore(clock), sc.Policy)
	if err != nil {
		return HoldsTrace{}, err
	}
	tr := HoldsTrace{Mode: mode}
	type event struct {
		at      time.Duration
		settle  bool // else an attempt
		request int
		d       ratelimit.Decision
	}
	var queue []event
	for i := range sc.Requests {
		queue = append(queue, event{at: time.Duration(i) * sc.Every, request: i})
	}
	// next takes the event that comes first out of the queue, if it comes by at: at one
	// instant, settles before tries, and tries in the order the requests first arrived.
	next := func(at time.Duration) (event, bool) {
		if len(queue) == 0 {
			return event{}, false
		}
		i := 0
		for k, ev := range queue {
			if c := queue[i]; ev.at < c.at || ev.at == c.at && (ev.settle && !c.settle || ev.settle == c.settle && ev.request < c.request) {
				i = k
			}
		}
		ev := queue[i]
		if ev.at > at {
			return event{}, false
		}
		queue = slices.Delete(queue, i, i+1)
		return ev, true
	}
	estimates := map[int]int{} // the request's estimate's index in tr.Charges
	inFlight := 0
	for at := time.Duration(0); at <= sc.Length(); at += sc.SampleEvery {
		for ev, ok := next(at); ok; ev, ok = next(at) {
			clock.set(t0.Add(ev.at))
			if ev.settle {
				if err := limiter.Settle(ctx, key, ev.d, sc.Actual); err != nil {
					return HoldsTrace{}, fmt.Errorf("%s, request %d settling at %v: %w", sc.Name, ev.request, ev.at, err)
				}
				if i, ok := estimates[ev.request]; ok {
					tr.Charges[i].Settled = ev.at
				}
				tr.Charges = append(tr.Charges, Charge{At: ev.at, Request: ev.request, Units: sc.Actual - ev.d.Cost})
				tr.Settles = append(tr.Settles, ev.at)
				inFlight--
				continue
			}
			var d ratelimit.Decision
			if mode == Held {
				d, err = limiter.Reserve(ctx, key, sc.Estimate)
			} else {
				d, err = limiter.Peek(ctx, key)
			}
			if err != nil {
				return HoldsTrace{}, fmt.Errorf("%s, request %d at %v: %w", sc.Name, ev.request, ev.at, err)
			}
			tr.Attempts = append(tr.Attempts, Attempt{At: ev.at, Request: ev.request, Allowed: d.Allowed, RetryAfter: d.RetryAfter})
			if !d.Allowed {
				queue = append(queue, event{at: ev.at + max(d.RetryAfter, time.Millisecond), request: ev.request})
				continue
			}
			if d.Cost > 0 {
				estimates[ev.request] = len(tr.Charges)
				tr.Charges = append(tr.Charges, Charge{At: ev.at, Request: ev.request, Units: d.Cost, Estimate: true, Settled: -1})
			}
			inFlight++
			queue = append(queue, event{at: ev.at + sc.Takes, settle: true, request: ev.request, d: d})
		}
		clock.set(t0.Add(at))
		d, err := limiter.AllowN(ctx, key, 0)
		if err != nil {
			return HoldsTrace{}, fmt.Errorf("%s, state at %v: %w", sc.Name, at, err)
		}
		s := HoldsSample{At: at, Remaining: d.Remaining, InFlight: inFlight}
		s.Used, s.Held = tr.counted(at, sc.Policy.Window)
		tr.Samples = append(tr.Samples, s)
	}
	return tr, nil
}
