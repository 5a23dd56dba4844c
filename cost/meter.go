package cost

import (
	"context"
	"math"
	"sync/atomic"
)

// A Meter counts what one request reports of its cost and what its response wrote. A guard
// that charges after the response gives each request it admits one (ratelimit.Outcome's
// Meter), in the handler's context; the framework adapters count the bytes with [Meter.Wrote].
// It is safe for concurrent use: a handler may report from goroutines of its own.
type Meter struct {
	outer    *Meter // the meter of a guard in front of this one's, which a report reaches too
	reported atomic.Int64
	reports  atomic.Int32
	written  atomic.Int64
}

// meterKey is the context key of a request's meter.
type meterKey struct{}

// NewContext returns a copy of parent that carries m, for [Report]. When parent carries a
// meter already (a request through two guards that charge after the response), a report
// reaches both.
func NewContext(parent context.Context, m *Meter) context.Context {
	if outer := FromContext(parent); outer != nil && m.outer == nil && !outer.reaches(m) {
		m.outer = outer
	}
	return context.WithValue(parent, meterKey{}, m)
}

// Detach returns a copy of ctx that carries no meter: a report on it, or on a context made from
// it with NewContext, reaches none of ctx's. A client's own meter (ratelimit.Transport's, of a
// call a handler makes) is made under it, so that what the call reports of its usage is not
// charged to the incoming request too.
func Detach(ctx context.Context) context.Context {
	if FromContext(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, meterKey{}, (*Meter)(nil))
}

// FromContext returns the meter ctx carries, or nil.
func FromContext(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// Report adds n to the cost of the request whose context is ctx (the tokens a completion
// used, say, as its response's usage tells them), and reports whether a guard meters that
// request. Several reports add up; a negative n is ignored (a cost is never given back this
// way: see ratelimit.ChargeAfter).
func Report(ctx context.Context, n int64) bool {
	m := FromContext(ctx)
	if m == nil {
		return false
	}
	m.Report(n)
	return true
}

// reaches reports whether a report to m reaches to: linking to to again would loop.
func (m *Meter) reaches(to *Meter) bool {
	for ; m != nil; m = m.outer {
		if m == to {
			return true
		}
	}
	return false
}

// Report adds n to the request's reported cost; a negative n is ignored.
func (m *Meter) Report(n int64) {
	if n < 0 {
		return
	}
	for ; m != nil; m = m.outer {
		addCapped(&m.reported, n)
		m.reports.Add(1)
	}
}

// addCapped adds n, not negative, to v, stopping at the largest int64 rather than wrapping to
// a negative sum.
func addCapped(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		sum := old + n
		if sum < old {
			sum = math.MaxInt64
		}
		if v.CompareAndSwap(old, sum) {
			return
		}
	}
}

// Wrote adds n to the bytes the request's response wrote (its body; the headers not).
func (m *Meter) Wrote(n int64) {
	if n > 0 {
		addCapped(&m.written, n)
	}
}

// After returns what the request cost so far, as the guard hands it to its ChargeAfter
// function, given the status its client got and its estimate.
func (m *Meter) After(status int, estimate int64) After {
	a := After{Status: status, Estimate: estimate}
	if m != nil {
		a.Written, a.Reported, a.HasReport = m.written.Load(), m.reported.Load(), m.reports.Load() > 0
	}
	return a
}
