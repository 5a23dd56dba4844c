// Package legacyobserver keeps the Observer interface of eleven methods that
// ratelimit.Observer was before it became a struct of optional hooks, and turns an
// implementation of it into those hooks, so that an observer written against the interface
// keeps working for one release while it moves to the new shape.
//
// Deprecated: this package goes away in the next release. Set the hooks of a
// ratelimit.Observer instead: ratelimit.WithObserver(&ratelimit.Observer{Decided: o.Decided,
// ...}), with SlotHeld for Leased.
package legacyobserver

import (
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Observer is the interface ratelimit.Observer was: one method per event. Each method is
// documented at the hook of ratelimit.Observer of the same name, but for Leased, which is
// ratelimit.Observer.SlotHeld.
//
// Deprecated: set the hooks of a ratelimit.Observer instead; this interface goes away in the
// next release, and learns no event added after it.
type Observer interface {
	Decided(e ratelimit.DecisionEvent)
	Answered(e observe.RequestEvent)
	StoreFailed(err error)
	BreakerChanged(from, to observe.BreakerState)
	MemoryStoreFull(overflow bool)
	KeyFellBack(reason string)
	RedisEvictionPolicy(policy string, evicts bool)
	DenialCacheDeaf(deaf bool)
	StoreDegraded(feature string, degraded bool)
	Leased(acquired bool, held time.Duration)
	Queued(entered bool)
}

// Hooks returns the ratelimit.Observer whose every hook calls the method of o of its name
// (SlotHeld calls Leased), to give to a store: ratelimit.WithObserver(legacyobserver.Hooks(o)).
// Call it once per observer and give the result to every store of it: guards over stores
// that share the one pointer count a request they both check once.
//
// Hooks(nil) is nil, which ratelimit.WithObserver refuses. The hooks added after the old
// interface (Held, of the holds of ratelimit.Limiter.Reserve) are left nil: it has no
// method for them.
//
// Deprecated: set the hooks of a ratelimit.Observer instead; this function goes away in the
// next release.
func Hooks(o Observer) *ratelimit.Observer {
	if o == nil {
		return nil
	}
	return &ratelimit.Observer{
		Decided:             o.Decided,
		Answered:            o.Answered,
		StoreFailed:         o.StoreFailed,
		BreakerChanged:      o.BreakerChanged,
		MemoryStoreFull:     o.MemoryStoreFull,
		KeyFellBack:         o.KeyFellBack,
		RedisEvictionPolicy: o.RedisEvictionPolicy,
		DenialCacheDeaf:     o.DenialCacheDeaf,
		StoreDegraded:       o.StoreDegraded,
		SlotHeld:            o.Leased,
		Queued:              o.Queued,
	}
}
