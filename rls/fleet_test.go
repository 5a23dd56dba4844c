package rls

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// waitFleet polls rules.Fleet until cond holds of it, failing after a generous bound.
func waitFleet(t *testing.T, client redis.UniversalClient, key, what string, cond func([]rules.Instance) bool) []rules.Instance {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		fleet, err := rules.Fleet(t.Context(), client, key)
		if err != nil {
			t.Fatal(err)
		}
		if cond(fleet) {
			return fleet
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s; the fleet: %+v", what, fleet)
		}
	}
}

// TestReportFleet: two servers of different configurations over one Redis are in the fleet of
// the rules key, each with its kind, its configuration's version, when it loaded it and its
// health; a reload is in the fleet at once, not a heartbeat later; a server that stops
// reporting leaves it.
func TestReportFleet(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	configs := []string{
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
		"domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 2}\n",
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var srvs []*Server
	stops := map[string]func(){}
	for i, name := range []string{"rls-a", "rls-b"} {
		cfg, err := ParseConfig(File{Name: "a.yaml", Data: []byte(configs[i])})
		if err != nil {
			t.Fatal(err)
		}
		clk := fakeclock.New(start.Add(time.Duration(i) * time.Minute))
		srv, err := NewServer(redisStore(t, clk), cfg, WithClock(clk), WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, srv)
		heartbeat := time.Hour // only the first record, and the one of a reload
		if name == "rls-b" {
			heartbeat = 100 * time.Millisecond
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- srv.ReportFleet(ctx, client, key, name, heartbeat) }()
		stops[name] = sync.OnceFunc(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("ReportFleet of %s: %v", name, err)
			}
		})
		t.Cleanup(stops[name])
	}
	va, vb := srvs[0].Config().Version(), srvs[1].Config().Version()
	if va == vb || !strings.HasPrefix(va, "sha256:") || len(va) != len("sha256:")+16 {
		t.Fatalf("versions %q and %q: want two digests of 16 hexadecimal digits", va, vb)
	}
	fleet := waitFleet(t, client, key, "both servers", func(f []rules.Instance) bool { return len(f) == 2 })
	for i, in := range fleet {
		want := rules.Instance{Name: []string{"rls-a", "rls-b"}[i], Kind: FleetKind, Running: []string{va, vb}[i],
			Loaded: start.Add(time.Duration(i) * time.Minute), Health: FleetServing}
		if in.Name != want.Name || in.Kind != want.Kind || in.Running != want.Running || !in.Loaded.Equal(want.Loaded) || in.Health != want.Health {
			t.Errorf("instance %d: %+v, want %+v", i, in, want)
		}
	}
	// A reload of rls-a (a heartbeat of an hour) is recorded at once.
	cfg, err := ParseConfig(File{Name: "a.yaml", Data: []byte(configs[1])})
	if err != nil {
		t.Fatal(err)
	}
	if err := srvs[0].SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	waitFleet(t, client, key, "rls-a on the new version", func(f []rules.Instance) bool {
		return len(f) == 2 && f[0].Running == vb
	})
	stops["rls-b"]()
	waitFleet(t, client, key, "rls-b to leave the fleet", func(f []rules.Instance) bool { return len(f) == 1 && f[0].Name == "rls-a" })
}

func TestReportFleetRefusals(t *testing.T) {
	srv, err := NewServer(ratelimit.NewMemoryStore(), &Config{})
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	for _, tc := range []struct {
		client    redis.UniversalClient
		key, name string
		heartbeat time.Duration
		want      string
	}{
		{nil, "k", "n", time.Second, "needs a go-redis client"},
		{client, "", "n", time.Second, "needs the key of the rules"},
		{client, "k", "", time.Second, "needs the instance's name"},
		{client, "k", "n", 0, "heartbeat of at least 1ms"},
	} {
		if err := srv.ReportFleet(t.Context(), tc.client, tc.key, tc.name, tc.heartbeat); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReportFleet(%v, %q, %q, %v): %v, want an error with %q", tc.client != nil, tc.key, tc.name, tc.heartbeat, err, tc.want)
		}
	}
}
