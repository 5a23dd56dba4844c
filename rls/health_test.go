package rls

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestServingFollowsRedis stops the test's Redis and starts it again under four servers: the
// one whose fail mode is error turns not serving while its store's breaker is open, and
// serving again once its own probes find Redis back; the others (allow, allow with one
// domain at error, error with a local fallback) behave as documented. No call is made after
// the outage began but those that open the breakers: the servers see Redis back by their
// probes alone.
func TestServingFollowsRedis(t *testing.T) {
	cfg, err := ParseConfig(File{Name: "test.yaml", Data: []byte(semanticsConfig)})
	if err != nil {
		t.Fatal(err)
	}
	type server struct {
		name      string
		opts      []Option
		fallback  bool
		whileDown bool // Serving while Redis is down
		srv       *Server
		health    *StoreHealth
	}
	servers := []*server{
		{name: "error", whileDown: false},
		{name: "allow", opts: []Option{WithFailMode(FailAllow)}, whileDown: true},
		{name: "allow,edge=error", opts: []Option{WithFailMode(FailAllow), WithDomainFailMode("edge", FailError)}, whileDown: false},
		{name: "error with a fallback", opts: []Option{WithLocalFallback()}, fallback: true, whileDown: true},
	}
	for _, s := range servers {
		s.health = NewStoreHealth()
		storeOpts := []ratelimit.RedisOption{ratelimit.WithPrefix(redistest.Prefix(t)),
			ratelimit.WithObserver(s.health.Observer(nil)), ratelimit.WithCallTimeout(time.Second), ratelimit.WithLogger(quietLogger())}
		if s.fallback {
			storeOpts = append(storeOpts, ratelimit.WithFallback(0.5))
		}
		store := ratelimit.NewRedisStore(redistest.Standalone(t), storeOpts...)
		t.Cleanup(func() { _ = store.Close() })
		s.srv, err = NewServer(store, cfg, append([]Option{WithLogger(quietLogger()), WithTimeout(time.Second), WithStoreHealth(s.health)}, s.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.srv.ShouldRateLimit(context.Background(), request("other", desc("ip", "1"))); err != nil {
			t.Fatalf("%s: with Redis up: %v", s.name, err)
		}
		if !s.srv.Serving() {
			t.Fatalf("%s: not serving with Redis up", s.name)
		}
	}
	// The error server's health, as WatchHealth reports it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reports := make(chan bool, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		servers[0].srv.WatchHealth(ctx, 10*time.Millisecond, func(serving bool) { reports <- serving })
	}()
	defer func() { cancel(); <-done }()
	if !<-reports {
		t.Fatal("WatchHealth reported not serving first, with Redis up")
	}

	redistest.Kill(t)
	for _, s := range servers {
		// Calls until the breaker opens: at once when a dial is refused, after five failures
		// on connections the kill broke. The bound is of calls, not of time.
		for i := 0; s.health.Available(); i++ {
			if i == 1000 {
				t.Fatalf("%s: the breaker is still closed after %d calls to a dead Redis", s.name, i)
			}
			_, err := s.srv.ShouldRateLimit(context.Background(), request("edge", desc("ip", "1")))
			if s.fallback && err != nil {
				t.Fatalf("%s: a call failed: %v", s.name, err)
			}
		}
		if got := s.srv.Serving(); got != s.whileDown {
			t.Errorf("%s: Serving() = %v with Redis down, want %v", s.name, got, s.whileDown)
		}
	}
	if servers[1].health.Available() || servers[1].health.Breaker() == observe.BreakerClosed {
		t.Error("allow: the breaker is closed with Redis down")
	}
	if _, err := servers[1].srv.ShouldRateLimit(context.Background(), request("edge", desc("ip", "1"))); err != nil {
		t.Errorf("allow: a call failed with Redis down: %v", err)
	}
	_, err = servers[2].srv.ShouldRateLimit(context.Background(), request("edge", desc("ip", "1")))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("allow,edge=error: a call of edge with Redis down: %v, want Unavailable", err)
	}
	if serving := <-reports; serving {
		t.Fatal("WatchHealth reported serving again, Redis down")
	}

	redistest.Restart(t)
	if serving := <-reports; !serving { // its probes close the breaker: no call needed
		t.Fatal("WatchHealth reported not serving twice")
	}
	if !servers[0].health.Available() || !servers[0].srv.Serving() {
		t.Error("error: serving reported, but the breaker is not closed")
	}
	for _, s := range servers[1:] {
		for !s.health.Available() { // the test's timeout bounds it: a probe closes the breaker
			_ = s.srv.ProbeStore(context.Background())
			time.Sleep(10 * time.Millisecond)
		}
		if !s.srv.Serving() {
			t.Errorf("%s: not serving with Redis back", s.name)
		}
	}
}

// TestServingWithoutStoreHealth is always serving: a server not told its store's health
// takes the store to be available.
func TestServingWithoutStoreHealth(t *testing.T) {
	f := newFixture(t, semanticsConfig)
	if !f.srv.Serving() {
		t.Error("not serving")
	}
	if err := f.srv.ProbeStore(context.Background()); err != nil {
		t.Errorf("ProbeStore over a memory store: %v", err)
	}
}
