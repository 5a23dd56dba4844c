package ratelimit

import (
	"context"
	"errors"
	"net"
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
// keys under prefix: the prefix followed by "forget". The message is the identity as the keys
// hold it (see storedIdentity).
func forgetChannel(prefix string) string { return prefix + "forget" }

// forgetter is a layer of the Redis store that answers denials itself.
type forgetter interface {
	// forget ends the denials of the identity whose keys hold stored between their braces.
	forget(stored string)
	// subscribed says whether announcements are heard: false when they may be missed from
	// now on, true when they are heard again (and some may have been missed before).
	subscribed(on bool)
}

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
// The goroutine ends when the client is closed.
func (s *redisStore) listenForForgets(layers ...forgetter) bool {
	sub, ok := s.client.(subscriber)
	if _, ring := s.client.(*redis.Ring); ring || !ok {
		return false
	}
	go s.listen(sub, forgetChannel(s.prefix), layers)
	return true
}

// listen runs the subscription: see listenForForgets.
func (s *redisStore) listen(sub subscriber, channel string, layers []forgetter) {
	ctx := context.Background()
	// on: announcements are heard; broke: the subscription broke and nothing was logged yet
	// (a client being closed breaks it too, and is not worth a line); warned: it was logged;
	// pinged: a PING went out on a quiet subscription and nothing came back since.
	on, broke, warned, pinged, wait := false, false, false, false, minResubscribe
	deaf := func(v bool) {
		if s.observer != nil {
			s.observer.DenialCacheDeaf(v)
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
	deaf(true)                        // until the first subscription is confirmed; Subscribe may wait for a dial
	ps := sub.Subscribe(ctx, channel) // a failed subscription is retried by Receive
	defer func() { ps.Close() }()
	for {
		msg, err := ps.ReceiveTimeout(ctx, s.pingEvery)
		if err == nil {
			pinged = false
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" { // the first time, or again after a break
					set(true)
					if broke || warned {
						s.log.get().Info("ratelimit: the denial cache hears refunds and resets again, and forgot the denials it held", "channel", channel)
					}
					broke, warned, wait = false, false, minResubscribe
				}
			case *redis.Message:
				for _, l := range layers {
					l.forget(m.Payload)
				}
			}
			continue
		}
		var ne net.Error
		timeout := errors.As(err, &ne) && ne.Timeout()
		if on && timeout && !pinged && ps.Ping(ctx) == nil {
			pinged = true
			continue // quiet: the pong comes next, or the connection is stalled
		}
		// The subscription broke, or is stalled (no pong, or no confirmation, in pingEvery),
		// or the client was closed: its connection was closed under the read, and what is
		// left answers ErrClosed.
		if errors.Is(err, redis.ErrClosed) || errors.Is(ps.Ping(ctx), redis.ErrClosed) {
			if !on {
				deaf(false) // no cache left to be deaf
			}
			return
		}
		if timeout { // a stalled connection ends only when the kernel gives up: leave it
			ps.Close()
			ps, pinged = sub.Subscribe(ctx, channel), false
		}
		switch {
		case on:
			set(false)
			broke = true
		case broke:
			s.log.get().Warn("ratelimit: the denial cache no longer hears refunds and resets: it caches no new denial until it does", "channel", channel, "error", err)
			broke, warned = false, true
		}
		time.Sleep(wait)
		wait = min(2*wait, maxResubscribe)
	}
}
