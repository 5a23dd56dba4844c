package ratelimit_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Each store failure has the kind of its cause, which errors.Is, ErrorKind and the error's
// text agree on: a check sent to a replica is READONLY, one against a server that is gone
// is unavailable, one that the server runs but never answers in time is a timeout.
func TestStoreErrorKinds(t *testing.T) {
	check := func(t *testing.T, client redis.Scripter, timeout time.Duration) error {
		t.Helper()
		l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithBreaker(0, 0), ratelimit.WithPrefix(redistest.Prefix(t))),
			ratelimit.Policy{Limit: 5, Window: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := l.Allow(ctx, "k")
		return err
	}
	want := func(t *testing.T, err error, label string) {
		t.Helper()
		if !errors.Is(err, ratelimit.ErrStore) || observe.ErrorKind(err) != label ||
			!strings.Contains(err.Error(), "store: "+label+": ") {
			t.Errorf("got %v (kind %q); want kind %s, named in the text", err, observe.ErrorKind(err), label)
		}
	}
	t.Run("readonly", func(t *testing.T) {
		primary := redistest.Private(t)
		host, port, _ := net.SplitHostPort(primary)
		replica := redistest.Private(t, "--replicaof", host, port)
		client := redis.NewClient(&redis.Options{Addr: replica})
		t.Cleanup(func() { client.Close() })
		want(t, check(t, client, 10*time.Second), "readonly")
	})
	t.Run("unavailable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		// go-redis dials again and again within the deadline, without ContextTimeoutEnabled
		// too: the check times out, and is unavailable all the same.
		for _, ctxTimeout := range []bool{true, false} {
			client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: ctxTimeout})
			t.Cleanup(func() { client.Close() })
			want(t, check(t, client, 200*time.Millisecond), "unavailable")
		}
	})
	// A Cluster that is down (a node in cluster mode that serves no slot: "CLUSTERDOWN Hash
	// slot not served") is unavailable, as observe.ErrorKinds says (it said other).
	t.Run("clusterdown", func(t *testing.T) {
		addr := redistest.Private(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		client := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { client.Close() })
		err := check(t, client, 10*time.Second)
		if !strings.Contains(err.Error(), "CLUSTERDOWN") {
			t.Fatalf("a check on a node that serves no slot: %v; want CLUSTERDOWN", err)
		}
		want(t, err, "unavailable")
	})
	t.Run("timeout", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
		if err != nil {
			t.Fatal(err)
		}
		conns := make(chan net.Conn, 100)
		t.Cleanup(func() {
			ln.Close()
			for len(conns) > 0 {
				(<-conns).Close()
			}
		})
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				select {
				case conns <- c:
				default:
					c.Close()
				}
			}
		}()
		client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { client.Close() })
		want(t, check(t, client, 200*time.Millisecond), "timeout")
	})
}
