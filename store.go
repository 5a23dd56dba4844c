package ratelimit

import (
	"context"
	"errors"
	"time"
)

// Store keeps the state of rate limits. [NewMemoryStore] and [NewRedisStore] make the two this
// package has; a wrapper (metrics, a cache, a circuit breaker of your own) is a Store around
// another.
//
// A Store written outside this package can only wrap one of the two: the algorithms' state and
// its arithmetic are theirs (one Go state machine and its Lua transcription, held to the same
// results by one conformance table), and the policies a Store is given carry what [New]
// compiled for them, which no other code can read. A wrapper passes the policies on unchanged
// and declares Unwrap (below); the conformance table runs on the Redis store wrapped so, by a
// store written in this module's external tests. Name the kind of your own errors with a
// method ErrorKind() string (see observe.ErrorKind).
//
// Every method must return by its context's deadline: the [Guard] gives each call one.
//
// A store may also declare what it can do, with methods the guard looks for once, when it is
// built — as io.Copy looks for io.WriterTo — instead of knowing any store's type:
//
//	Local() bool    // the store answers in this process, without I/O: the guard calls it
//	                // without a deadline (no timer per request)
//	Clock() Clock   // the clock the store's limits run on; the guard waits on it for a
//	                // shaping policy's slot. Without it: the system clock
//	Unwrap() Store  // the store this one wraps: what the wrapper does not declare itself is
//	                // asked of the wrapped store, so a pass-through wrapper keeps every
//	                // fast path by declaring Unwrap alone
//	Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error)
//	                // the store holds in-flight slots ([algorithms.InFlight]): Renew moves the
//	                // slots Check charged at time at to now, so that their lifetimes start again,
//	                // and returns the time it did. New refuses an in-flight policy on a store
//	                // without it. Check charges a slot and Refund gives it back
//	PassesHolds() bool // with Unwrap: true when the reservations of Limiter.Reserve (and
//	                // ChargeAfter) may go past this wrapper to the store it wraps, which keeps
//	                // them. A wrapper without it, or false, is refused for them: they do not
//	                // run through its Check (its metrics, its cache would not see them)
type Store interface {
	// Check evaluates a request of cost units from identity key against every policy, all or
	// nothing: when charge is set and every policy allows the request, it is charged to all of
	// them; otherwise nothing changes. It writes policy i's result to out[i] (out has
	// len(policies) elements; Check sets every field but Policy) and returns the time of the
	// check on the store's clock.
	Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (at time.Time, err error)
	// Refund gives back a charge of cost units that Check made for identity key at time at, as
	// far as the charge still weighs on each policy: never what time has given back already.
	Refund(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) error
	// Reset forgets the state of identity key under the policies.
	Reset(ctx context.Context, key string, policies []Policy) error
}

// The capabilities a store may declare; see [Store].
type (
	localStore   interface{ Local() bool }
	clockedStore interface{ Clock() Clock }
	wrapperStore interface{ Unwrap() Store }
	renewer      interface {
		Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error)
	}
	// localDecider is a layer that decides in the store's place while it is unavailable (the
	// fallback): the slots of its decisions are held in its store, under its policies.
	localDecider interface {
		local(policies []Policy) (Store, []Policy)
	}
	// fallbackCauser is a layer whose fallback decides on the store's failures: it tells the
	// last, for a guard's log.
	fallbackCauser interface{ fallbackCause() error }
	// overflowStore is a store that decides the identities it cannot hold on a shared overflow
	// quota (the memory store at its bound): what such a decision charged is refunded, and
	// its slots released and renewed, on the store it returns.
	overflowStore interface{ overflowQuota() Store }
)

// errNoSlots is the error of renewing on a store that holds no in-flight slots.
var errNoSlots = errors.New("ratelimit: the store holds no in-flight slots")

// capability returns the first store of the chain s, s.Unwrap(), ... that declares C.
func capability[C any](s Store) (C, bool) {
	for s != nil {
		if c, ok := s.(C); ok {
			return c, true
		}
		w, ok := s.(wrapperStore)
		if !ok {
			break
		}
		s = w.Unwrap()
	}
	var zero C
	return zero, false
}

// isLocal reports whether s answers without I/O.
func isLocal(s Store) bool {
	l, ok := capability[localStore](s)
	return ok && l.Local()
}

// clockOf returns the clock s runs on.
func clockOf(s Store) Clock {
	if c, ok := capability[clockedStore](s); ok && c.Clock() != nil {
		return c.Clock()
	}
	return defaultClock
}
