package ratelimit

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A denial answered by an instance itself (the denial cache, a lease's denial) holds until its
// Retry-After unless what the identity was charged is given back sooner: a refund or a reset,
// made by any instance, or by the ratelimit command. The scripts announce each on a channel
// (see announce in check.lua), and every Redis store with a denial cache subscribes to it, so
// that a refund or a reset anywhere in the fleet ends the denials of that identity everywhere,
// a round trip later.
//
// What the store cannot hear it does not cache: until it is subscribed, and again from the
// moment its subscription breaks until it is back, it remembers no new denial. A denial
// remembered before a break is still answered until its Retry-After (it never admits; Redis
// may be down), and every denial is forgotten when the subscription is back, since
// announcements may have been missed meanwhile.

// forgetChannel returns the channel on which the scripts announce the refunds and resets of
// keys under prefix: the prefix followed by "forget" (compact keys, which hold no prefix, pass
// it to the scripts). The message is the identity as the keys hold it (see storedIdentity; for
// compact keys, the digest between their braces).
func forgetChannel(prefix string) string { return prefix + "forget" }

// forgetter is a layer of the Redis store that answers denials itself.
type forgetter interface {
	// forget ends the denials of the identity whose keys hold stored between their braces.
	forget(stored string)
	// subscribed says whether announcements are heard: false when they may be missed from
	// now on, true when they are heard again (and some may have been missed before).
	subscribed(on bool)
}

// resetHearer is a layer that also hears the resets apart from the refunds (the quota leases,
// which a reset ends and a refund does not): a reset announces the identity a second time,
// after resetMark (see reset.lua).
type resetHearer interface {
	heardReset(stored string)
}

// resetMark starts the second announcement of a reset. No identity as the keys hold it starts
// with it (see appendStoredIdentity and appendCompactIdentity).
const resetMark = "!"

// subscriber is a go-redis client that can subscribe to a channel.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Waits between attempts to subscribe again.
const (
	minResubscribe = 100 * time.Millisecond
	maxResubscribe = 5 * time.Second
)

// pingEvery is how long a quiet subscription waits before it checks its connection with a
// PING, and how long it then waits for the pong, or for a subscription to be confirmed, before
// it takes the connection for stalled and subscribes again on a new one. A store reads it when
// it is made; tests shorten it.
var pingEvery = 30 * time.Second

// listenForForgets keeps the store subscribed to its announcements in the background and
// hands them to the layers, and reports whether it can: a Ring cannot (a script publishes on
// its identity's shard, and a Ring subscribes on one shard), nor a client without Subscribe.
// The goroutine ends when the store or the client is closed.
func (s *redisStore) listenForForgets(layers ...forgetter) bool {
	sub, ok := s.client.(subscriber)
	if _, ring := s.client.(*redis.Ring); ring || !ok {
		return false
	}
	s.listening.Store(true)
	if !s.bg.serve(func() { s.listen(sub, forgetChannel(s.prefix), layers) }) {
		s.listening.Store(false)
	}
	return true
}

// listen runs the subscription: see listenForForgets.
//
// Every call to Redis here is bounded by pingEvery (a dial, a HELLO, a SUBSCRIBE), and the
// cache is deaf before any call that may wait: a stalled connection never leaves it taken for
// hearing. A client that sets no read deadline (ReadTimeout -1 or -2) cannot be bounded so
// (go-redis then takes a context's deadline for one already passed): its calls are made
// without one, and after a stall the new subscription may wait on its HELLO until the
// connection ends, the cache deaf meanwhile (docs/outages.md, the denial cache).
func (s *redisStore) listen(sub subscriber, channel string, layers []forgetter) {
	defer s.listening.Store(false)
	ctx := s.bg.ctx // ends with the store (Close)
	// on: announcements are heard; broke: not heard, and nothing was logged yet (a client
	// being closed breaks the subscription too, and is not worth a line: a break is logged at
	// the second failure, a start that fails at the first); warned: it was logged; pinged: a
	// PING went out on a quiet subscription and nothing came back since.
	on, broke, warned, pinged, wait := false, true, false, false, minResubscribe
	started := false // ever subscribed
	deaf := func(v bool) {
		if s.observer != nil {
			s.observer.denialCacheDeaf(v)
		}
	}
	set := func(v bool) {
		if v != on {
			deaf(!v)
		}
		on = v
		for _, l := range layers {
			l.subscribed(v)
		}
	}
	unbounded := readsWithoutDeadline(s.client)
	within := func(d time.Duration) (context.Context, context.CancelFunc) {
		if unbounded {
			return ctx, func() {}
		}
		return context.WithTimeout(ctx, d)
	}
	bounded := func(f func(context.Context)) {
		c, cancel := within(s.pingEvery)
		defer cancel()
		f(c)
	}
	deaf(true) // until the first subscription is confirmed
	var ps *redis.PubSub
	subscribe := func() {
		bounded(func(c context.Context) { ps = sub.Subscribe(c, channel) })
		s.sub.set(ps) // which Close closes, ending a read blocked on it
	}
	subscribe() // a failed subscription is retried by Receive
	defer func() { ps.Close() }()
	for {
		rc, cancel := within(2 * s.pingEvery) // bounds a reconnection's dial too
		msg, err := ps.ReceiveTimeout(rc, s.pingEvery)
		cancel()
		if err == nil {
			pinged = false
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" { // the first time, or again after a break
					set(true)
					if started || warned { // again, or at last
						s.log.get().Info("ratelimit: the denial cache hears refunds and resets again, and forgot the denials it held", "channel", channel)
					}
					started, broke, warned, wait = true, false, false, minResubscribe
				}
			case *redis.Message:
				if id, reset := strings.CutPrefix(m.Payload, resetMark); reset {
					for _, l := range layers {
						if r, ok := l.(resetHearer); ok {
							r.heardReset(id)
						}
					}
					continue
				}
				for _, l := range layers {
					l.forget(m.Payload)
				}
			}
			continue
		}
		var ne net.Error
		timeout := errors.As(err, &ne) && ne.Timeout()
		if on && timeout && !pinged {
			var perr error
			bounded(func(c context.Context) { perr = ps.Ping(c) })
			if perr == nil {
				pinged = true
				continue // quiet: the pong comes next, or the connection is stalled
			}
		}
		// A closed store: Close closed the subscription under the read. A closed client: its
		// connection was closed under the read, and what is left answers ErrClosed at once,
		// without a dial.
		closed := ctx.Err() != nil || errors.Is(err, redis.ErrClosed)
		if !closed {
			c, cancel := within(min(s.pingEvery, time.Second))
			closed = errors.Is(ps.Ping(c), redis.ErrClosed)
			cancel()
		}
		if closed {
			if !on {
				deaf(false) // no cache left to be deaf
			}
			return
		}
		// Refused by the server (an ACL without the channel, say): no reconnection will help
		// this subscription, and it is worth a line at once.
		var rerr redis.Error
		refused := errors.As(err, &rerr)
		switch {
		case on:
			set(false) // before a new subscription, which may wait for a dial
			broke = true
			if !refused {
				break
			}
			fallthrough
		case broke || refused && !warned:
			msg := "ratelimit: the denial cache no longer hears refunds and resets: it caches no new denial until it does"
			if !started {
				msg = "ratelimit: the denial cache does not hear refunds and resets yet: it caches no denial until it does"
			}
			s.log.get().Warn(msg, "channel", channel, "error", err)
			broke, warned = false, true
		}
		if timeout || refused { // a stalled connection ends only when the kernel gives up: leave it
			subscribe() // closes the old one
			pinged = false
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, maxResubscribe)
	}
}
