package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// env is what every framework is measured with: the client of the one redis-server, the
// floor's script and the load generator.
type env struct {
	s        settings
	client   *redis.Client // the recommended go-redis client: ContextTimeoutEnabled
	trivial  *redis.Script // the floor: EVALSHA of "return 1" on the client's key
	wrk      string        // path of wrk, "" when it is not installed
	loadName string        // the HTTP load generator
}

func newEnv(ctx context.Context, addr string, s settings) (*env, error) {
	e := &env{
		s:       s,
		client:  redis.NewClient(&redis.Options{Addr: addr, PoolSize: s.conns, ContextTimeoutEnabled: true}),
		trivial: redis.NewScript("return 1"),
	}
	if err := e.trivial.Load(ctx, e.client).Err(); err != nil {
		_ = e.client.Close()
		return nil, fmt.Errorf("loading the floor's script: %w", err)
	}
	e.wrk, e.loadName = loadgen.Wrk()
	return e, nil
}

// floor is the floor's work for a request from remoteAddr ("ip:port"): one trivial EVALSHA on
// the client's key, as the adapter's check is one script on it.
func (e *env) floor(ctx context.Context, remoteAddr string) error {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	return e.trivial.Run(ctx, e.client, []string{"ip:" + host}).Err()
}

// neverDenies is one GCRA policy that never denies the load's one client address; its
// interval is a whole microsecond, as the other tables' subjects'.
var neverDenies = ratelimit.Policy{Limit: 1_000_000, Window: time.Second}

// routes are what each framework serves: the bare handler, the floor then the handler, the
// adapter then the handler; the figures' keys name them.
var routes = []string{"bare", "floor", "ours"}

// target is a framework serving the routes, under load.
type target interface {
	// load puts load on route for d.
	load(ctx context.Context, route string, d time.Duration) (loadgen.HTTPResult, error)
	close()
}

// measure takes the figures of round r of fw into f: the three routes in turn, in an order
// that moves by one each round (so that each route comes first, second and last in three
// rounds), each after a short load that is not measured (connections made, the store's first
// calls done); the adapter over a store and a limiter of their own (keys of the round and the
// framework).
func (e *env) measure(ctx context.Context, fw framework, r int, f figures) error {
	store := ratelimit.NewRedisStore(e.client, ratelimit.WithPrefix(fmt.Sprintf("ab%d:%s:", r, fw.name)))
	defer store.Close()
	l, err := ratelimit.New(store, neverDenies)
	if err != nil {
		return err
	}
	t, err := fw.serve(e, l)
	if err != nil {
		return err
	}
	defer t.close()
	warm := min(time.Second, e.s.d/5)
	for i := range routes {
		route := routes[(i+r)%len(routes)]
		if res, err := t.load(ctx, route, warm); err != nil || res.Bad > 0 {
			return fmt.Errorf("warming %s up: %v (%d failed or not OK)", route, err, res.Bad)
		}
		res, err := t.load(ctx, route, e.s.d)
		if err != nil {
			return err
		}
		if res.Bad > 0 {
			return fmt.Errorf("%d of the requests to %s failed or were not answered OK", res.Bad, route)
		}
		f[key(fw.name, "rate", route)] = res.RPS
		f[key(fw.name, "p50", route)] = micros(res.P50)
		f[key(fw.name, "p99", route)] = micros(res.P99)
		f[key(fw.name, "p999", route)] = micros(res.P999)
	}
	return nil
}

// key names a figure: "tail.", the framework, what (rate, p50, p99, p999) and the route.
func key(fw, what, route string) string { return "tail." + fw + "." + what + "." + route }

// micros is d in µs.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
