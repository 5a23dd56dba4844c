// Package algo is the engine side of the rate-limiting algorithms: the parameters, state and
// results the stores pass to them, the [Model] each algorithm implements, and the one list of
// them ([Register], [Of], [All]).
//
// Package algorithms holds the public algorithm types and registers each with its model;
// nothing outside this module can reach a model, so the state of an algorithm is never part of
// the public API. Every model is transcribed line by line into Lua (package
// internal/redisscripts), and the conformance and differential tests hold the two to the same
// results.
//
// All arithmetic is in integers: times in microseconds, the emission interval of the
// rate-based algorithms as an exact fraction Num/Den of a microsecond. Every value a model
// computes stays below 2^53, where Lua's doubles are exact; [Params] refuses parameters that
// would need more.
package algo

import (
	"fmt"
	"sort"
	"sync"
)

// Never is the RetryAfter of a request that can never be admitted: its cost exceeds the
// policy's capacity.
const Never int64 = -1

// Exact is the bound of exact arithmetic in both engines: Lua numbers are doubles.
const Exact = 1 << 53

// Params are the parameters of one policy, in integer units.
type Params struct {
	// Limit is the number of units of cost admitted per Window.
	Limit int64
	// Window is the policy's window in microseconds.
	Window int64
	// Burst is the capacity of the bucket algorithms; 0 means Limit.
	Burst int64
	// Num/Den is the emission interval Window/Limit in microseconds, as a reduced fraction.
	Num, Den int64
	// Start is, for a calendar period (see [Calendared]), the instant it starts, in
	// microseconds since the Unix epoch; Window is then its length. 0 for other policies.
	Start int64
}

// NewParams returns the parameters of limit units per window microseconds with the given
// burst, the emission interval reduced to lowest terms.
func NewParams(limit, window, burst int64) Params {
	g := gcd(window, limit)
	return Params{Limit: limit, Window: window, Burst: burst, Num: window / g, Den: limit / g}
}

// Capacity is the largest cost one request can ever have: Burst when set, else Limit.
func (p Params) Capacity() int64 {
	if p.Burst > 0 {
		return p.Burst
	}
	return p.Limit
}

// State is the stored state of one policy for one key. Its meaning depends on the algorithm;
// the zero value (Init false) is "no state": a key never seen, or expired.
type State struct {
	// Init reports whether the state holds anything.
	Init bool
	// A, B and C are the algorithm's integers.
	A, B, C int64
	// Log holds the sliding log's admitted timestamps, oldest first, one per unit of cost.
	Log []int64
}

// Result is the outcome of checking one request against one policy, in microseconds.
type Result struct {
	// Allowed reports whether the request fits the policy.
	Allowed bool
	// Remaining is how many units of cost the policy would still admit now, after this
	// request when it is allowed.
	Remaining int64
	// ResetAfter is the time until the policy's state is back to fresh.
	ResetAfter int64
	// RetryAfter is the time until this request's cost would be admitted: 0 when allowed,
	// [Never] when the cost exceeds the policy's capacity.
	RetryAfter int64
	// Delay is the time the request must wait for its slot (shaping only).
	Delay int64
	// Next is the time until the policy would admit one unit of cost more than Remaining,
	// were Remaining spent now: the longest time within which no more than Remaining can be
	// admitted (the effective window of the IETF RateLimit field's t, draft -11). 0 for the
	// in-flight slots, which come back when requests end, not with time.
	Next int64
}

// Model is one algorithm as the engines run it.
//
// Check evaluates a request of cost units at time now (microseconds) without charging it,
// writes its verdict to r, and normalises the state in place (what has expired dropped,
// windows rolled), which changes no decision: the caller may keep the normalised state or
// throw it away. Charge then adds the request to that state; the caller charges only when
// every policy of a list allowed the request. A cost of 0 is always allowed and reads the
// state.
//
// Everything is passed by pointer and the state changed in place: a store calls the model once
// or twice per policy and request, and passing the State, Params and Result structs by value
// through the interface copied them several times a call (and copying a struct just written
// field by field stalls the CPU), which took longer than the algorithms' own arithmetic. A
// caller that keeps the state it started from passes a copy. The sliding log's Log may share
// its array with the copy's: Check only re-slices it and Charge appends to it, so keep only the
// state changed last.
type Model interface {
	// Code is the algorithm's short code in storage keys and in the Lua dispatch.
	Code() string
	// UsesBurst reports whether the algorithm has a capacity apart from its limit.
	UsesBurst() bool
	// Shapes reports whether an admitted request may have to wait for its slot (Delay).
	Shapes() bool
	// ExactWait reports whether a denial's RetryAfter is the exact wait: the same cost (or a
	// larger one) is denied at every instant before it, by time alone, and admitted at it.
	// Only a refund, a reset or a charge under other parameters of the same state can admit
	// it sooner. A store may then answer the request again itself until then (the denial
	// cache). TestInvariantsRandom in package algorithms holds every model that says so to it.
	ExactWait() bool
	// Validate reports why p is beyond what the algorithm can compute exactly, or nil.
	Validate(p Params) error
	// Check evaluates a request, writes its verdict to r and normalises s; see the type
	// comment.
	Check(p *Params, s *State, now, cost int64, r *Result)
	// Charge adds a request that Check allowed to the state Check left, and returns how long,
	// in microseconds, the new state matters: after that it is equivalent to no state and may
	// be dropped.
	Charge(p *Params, s *State, now, cost int64) (ttl int64)
	// Refund gives back a charge of cost units made at time at, as far as the charge still
	// weighs on s, and returns how long the new state matters. It never gives back what time
	// has given back already, so nothing is credited twice.
	Refund(p *Params, s *State, now, cost, at int64) (ttl int64)
}

// Renewer is a model whose charges are leases, held until given back (Refund) or until Window
// after they were made: the in-flight slots. Renew moves a charge of cost units made at time
// at to now, so that it lasts another Window, and returns how long the new state matters. It
// adds the charge even when it had already expired: its request is still running.
type Renewer interface {
	Model
	Renew(p *Params, s *State, now, cost, at int64) (ttl int64)
}

// LogKeeper is a model whose state is a log of timestamps ([State].Log) rather than integers:
// the sliding log and the in-flight slots. The Redis store keeps such a state as a sorted set
// of its own, never as a field of an identity's hash (WithHashState).
type LogKeeper interface {
	Model
	KeepsLog()
}

// KeepsLog reports whether m's state is a log (see [LogKeeper]).
func KeepsLog(m Model) bool {
	_, ok := m.(LogKeeper)
	return ok
}

// Calendared is a model that can also count calendar periods (package calendar): Calendar
// returns the model that does, whose Params hold one period, its Start and its length as the
// Window (a day of 23 or 25 hours, a month of 28 to 31 days). The store keeps its state under
// a key of its own per period (the period's tag is in the key), never in a field of an
// identity's hash, whose fields would outlive their periods.
type Calendared interface {
	Model
	Calendar() Model
}

// CalendarOf returns the model that counts calendar periods the way m counts windows, or nil
// when m cannot (see [Calendared]).
func CalendarOf(m Model) Model {
	if c, ok := m.(Calendared); ok {
		return c.Calendar()
	}
	return nil
}

// Holds reports whether m's charges are leases (see [Renewer]).
func Holds(m Model) bool {
	_, ok := m.(Renewer)
	return ok
}

var (
	mu     sync.RWMutex
	models = map[any]Model{}
	values []any // the public values, in registration order
)

// Register makes m the model of the public algorithm value a. Package algorithms calls it
// once for each algorithm, when it is initialised; a second model for one value or code is a
// defect and panics.
func Register(a any, m Model) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := models[a]; dup {
		panic(fmt.Sprintf("algo: %#v registered twice", a))
	}
	for _, o := range models {
		if o.Code() == m.Code() {
			panic("algo: code " + m.Code() + " registered twice")
		}
	}
	models[a] = m
	values = append(values, a)
}

// Of returns the model of the public algorithm value a, or nil if a has none.
func Of(a any) Model {
	mu.RLock()
	defer mu.RUnlock()
	return models[a]
}

// Values returns every registered public algorithm value, in the order registered. Tests
// range over it, so an added algorithm is tested everywhere without another list to edit.
func Values() []any {
	mu.RLock()
	defer mu.RUnlock()
	return append([]any(nil), values...)
}

// All returns every registered model, ordered by code.
func All() []Model {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Model, 0, len(models))
	for _, m := range models {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code() < out[j].Code() })
	return out
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// FloorDiv is a/b rounded down, for b > 0 and any a.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
