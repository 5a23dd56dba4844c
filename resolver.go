package ratelimit

import (
	"container/list"
	"crypto/sha256"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// opResolve names a Resolver's failure in the guard's errors.
const opResolve = "resolving the policies of the client"

// maxShared bounds how many distinct policy lists a resolver cache keeps compiled for the keys
// that share them.
const maxShared = 1024

// resolverCache keeps a [Resolver]'s answers: the limiter of each key, for a TTL, at most Size
// keys, the least recently used going first. Keys that resolve to the same policies share one
// limiter.
type resolverCache struct {
	g   *Guard
	r   Resolver
	fit func(*Limiter) error // what the guard's options need of the policies

	mu      sync.Mutex
	entries map[string]*resolution
	lru     list.List           // of *resolution, the most recently used first
	shared  map[string]*Limiter // by policies' signature
}

// resolution is the answer for one key, or the promise of it while Resolve runs.
type resolution struct {
	id      string
	limiter *Limiter
	expires time.Time
	done    bool
	failed  bool          // Resolve failed: limiter is the guard's own
	ready   chan struct{} // closed when done
	elem    *list.Element
}

func newResolverCache(g *Guard, gc *guardConfig) *resolverCache {
	return &resolverCache{g: g, r: *gc.resolver, fit: gc.fits, entries: map[string]*resolution{}, shared: map[string]*Limiter{}}
}

// limiter returns the limiter of request r, whose key is key: the cached answer, or Resolve's.
// A request left on the guard's own limiter by a failed resolution, its own or one kept, is
// counted (KeyFellBack, resolver_failed); the failure itself goes to the guard's error handler.
func (c *resolverCache) limiter(r Request, key string) *Limiter {
	id := cacheID(key)
	c.mu.Lock()
	e, ok := c.entries[id]
	if ok && (!e.done || c.g.clock.Now().Before(e.expires)) {
		c.lru.MoveToFront(e.elem)
		if e.done {
			l, failed := e.limiter, e.failed
			c.mu.Unlock()
			if failed {
				c.failed()
			}
			return l
		}
		c.mu.Unlock()
		select {
		case <-e.ready: // limiter and failed were written before ready was closed
			if e.failed {
				c.failed()
			}
			return e.limiter
		case <-r.Context().Done():
			return c.g.limiter // the request is over; its decision hardly matters
		}
	}
	if ok {
		c.lru.Remove(e.elem)
	}
	e = &resolution{id: id, ready: make(chan struct{})}
	e.elem = c.lru.PushFront(e)
	c.entries[id] = e
	for c.lru.Len() > c.r.Size {
		old := c.lru.Remove(c.lru.Back()).(*resolution)
		delete(c.entries, old.id)
	}
	c.mu.Unlock()

	l, ttl, failed := c.g.limiter, min(resolverRetry, c.r.TTL), true
	defer func() { // also when Resolve panics (a failure), so that no request waits for ever
		c.mu.Lock()
		e.limiter, e.expires, e.failed, e.done = l, c.g.clock.Now().Add(ttl), failed, true
		c.mu.Unlock()
		close(e.ready)
	}()
	policies, err := c.r.Resolve(r, key)
	if err == nil && len(policies) > 0 {
		var resolved *Limiter
		if resolved, err = c.compile(policies); err == nil {
			l = resolved
		}
	}
	if err != nil {
		c.g.onError(r, &opError{opResolve, nil, err})
		c.failed()
		return l
	}
	ttl, failed = c.r.TTL, false
	return l
}

// failed reports a request left on the guard's own policies by a failed resolution.
func (c *resolverCache) failed() {
	if c.g.observer != nil {
		c.g.observer.keyFellBack(keyFallbackReasons[reasonResolverFailed])
	}
}

// compile returns the limiter of policies over the guard's store, shared with the keys that
// resolved to the same policies.
func (c *resolverCache) compile(policies []Policy) (*Limiter, error) {
	sig := signature(policies)
	c.mu.Lock()
	l, ok := c.shared[sig]
	c.mu.Unlock()
	if ok {
		return l, nil
	}
	l, err := c.g.limiter.with(policies)
	if err == nil {
		err = c.fit(l)
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.shared) >= maxShared {
		clear(c.shared)
	}
	c.shared[sig] = l
	c.mu.Unlock()
	return l, nil
}

// signature identifies a list of policies by every field of Policy, Go syntax and all (the
// algorithm with its options, strings quoted), but the compiled form New adds: two lists share
// a limiter only when nothing New, a store or the guard reads tells them apart (NoDenialCache
// and Lease change no limit, and still the store's behaviour). A field added to Policy is
// covered as it is; a pointer in it would only keep equal lists apart (the algorithm's is
// followed, see algorithmValue).
// TestSignatureCoversEveryField holds it to that. It runs once per resolution, not per
// request.
func signature(policies []Policy) string {
	var b []byte
	for _, p := range policies {
		p.compiled = nil
		period := p.Period
		p.Period = nil // written as its text, which names its zone where %#v would a pointer
		if period != nil && p.Algorithm == nil {
			p.Algorithm = algorithms.FixedWindow{} // a calendar policy's default
		}
		p.Algorithm = algorithmValue(p.Algorithm)
		b = fmt.Appendf(b, "%#v", p)
		if period != nil {
			b = append(b, period.String()...)
		}
		b = append(b, '\n')
	}
	return string(b)
}

// algorithmValue is a as a signature prints it: GCRA{} for none (the default), and the value a
// pointer points to, so that a Resolver that allocates its algorithms on every call still
// shares limiters (the pointer's address would keep equal lists apart).
func algorithmValue(a algorithms.Algorithm) algorithms.Algorithm {
	if a == nil {
		return algorithms.GCRA{}
	}
	if v := reflect.ValueOf(a); v.Kind() == reflect.Pointer && !v.IsNil() {
		if e, ok := v.Elem().Interface().(algorithms.Algorithm); ok {
			return e
		}
	}
	return a
}

// cacheID is the key a resolution is kept under: key itself, or when it is longer than 64
// bytes its SHA-256 digest, so that a cache entry stays small whatever the client sends.
func cacheID(key string) string {
	if len(key) <= maxPlainKey {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "#" + string(sum[:])
}
