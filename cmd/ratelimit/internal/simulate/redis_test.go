package simulate_test

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestRedisDrawsTheSamePictures runs every scenario through the Redis store on the same fake
// clock: every decision, every sampled state and so every picture is the memory store's.
func TestRedisDrawsTheSamePictures(t *testing.T) {
	client := redistest.Standalone(t)
	for _, sc := range simulate.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			onRedis := func(clock ratelimit.Clock) ratelimit.Store {
				return ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)))
			}
			mem, err := simulate.RunAll(context.Background(), sc, simulate.Memory)
			if err != nil {
				t.Fatal(err)
			}
			red, err := simulate.RunAll(context.Background(), sc, onRedis)
			if err != nil {
				t.Fatal(err)
			}
			for i := range mem {
				name := mem[i].Algorithm.Name()
				if len(red[i].Requests) != len(mem[i].Requests) || len(red[i].Samples) != len(mem[i].Samples) {
					t.Fatalf("%s: Redis made %d decisions and %d samples, memory %d and %d", name,
						len(red[i].Requests), len(red[i].Samples), len(mem[i].Requests), len(mem[i].Samples))
				}
				for k := range mem[i].Requests {
					if m, r := mem[i].Requests[k], red[i].Requests[k]; m != r {
						t.Fatalf("%s, request %d: memory %+v, Redis %+v", name, k, m, r)
					}
				}
				for k := range mem[i].Samples {
					if m, r := mem[i].Samples[k], red[i].Samples[k]; m != r {
						t.Fatalf("%s, state at %v: memory Remaining %d, Redis %d", name, m.At, m.Remaining, r.Remaining)
					}
				}
				if !reflect.DeepEqual(mem[i], red[i]) {
					t.Fatalf("%s: the traces differ", name)
				}
			}
			if !bytes.Equal(simulate.Chart(sc, mem), simulate.Chart(sc, red)) {
				t.Error("the pictures differ")
			}
		})
	}
}

// TestRedisDrawsTheSameCalendarPictures runs every calendar scenario through the Redis store
// on the same fake clock: the same decisions, states and pictures as the memory store's.
func TestRedisDrawsTheSameCalendarPictures(t *testing.T) {
	client := redistest.Standalone(t)
	scenarios, err := simulate.CalendarScenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			onRedis := func(clock ratelimit.Clock) ratelimit.Store {
				return ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)))
			}
			mem, err := simulate.RunCalendar(context.Background(), sc, simulate.Memory)
			if err != nil {
				t.Fatal(err)
			}
			red, err := simulate.RunCalendar(context.Background(), sc, onRedis)
			if err != nil {
				t.Fatal(err)
			}
			for k := range min(len(mem.Requests), len(red.Requests)) {
				if m, r := mem.Requests[k], red.Requests[k]; m != r {
					t.Fatalf("request %d: memory %+v, Redis %+v", k, m, r)
				}
			}
			for k := range min(len(mem.Samples), len(red.Samples)) {
				if m, r := mem.Samples[k], red.Samples[k]; m != r {
					t.Fatalf("state at %v: memory Remaining %d, Redis %d", m.At, m.Remaining, r.Remaining)
				}
			}
			if !reflect.DeepEqual(mem, red) {
				t.Fatal("the traces differ")
			}
			if !bytes.Equal(simulate.CalendarChart(sc, mem), simulate.CalendarChart(sc, red)) {
				t.Error("the pictures differ")
			}
		})
	}
}

// TestRedisDrawsTheSameHoldsPicture runs the holds scenario through the Redis store on the same
// fake clock: the same decisions, states and picture as the memory store's (holds.lua keeps
// the holds there).
func TestRedisDrawsTheSameHoldsPicture(t *testing.T) {
	client := redistest.Standalone(t)
	onRedis := func(clock ratelimit.Clock) ratelimit.Store {
		return ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)))
	}
	mem, err := simulate.HoldsPicture(context.Background(), simulate.Holds(), simulate.Memory)
	if err != nil {
		t.Fatal(err)
	}
	red, err := simulate.HoldsPicture(context.Background(), simulate.Holds(), onRedis)
	if err != nil {
		t.Fatal(err)
	}
	for i := range mem.Holds {
		m, r := mem.Holds[i], red.Holds[i]
		for k := range min(len(m.Attempts), len(r.Attempts)) {
			if m.Attempts[k] != r.Attempts[k] {
				t.Fatalf("%v, try %d: memory %+v, Redis %+v", m.Mode, k, m.Attempts[k], r.Attempts[k])
			}
		}
		for k := range min(len(m.Samples), len(r.Samples)) {
			if m.Samples[k] != r.Samples[k] {
				t.Fatalf("%v, state at %v: memory %+v, Redis %+v", m.Mode, m.Samples[k].At, m.Samples[k], r.Samples[k])
			}
		}
		if !reflect.DeepEqual(m, r) {
			t.Fatalf("%v: the traces differ", m.Mode)
		}
	}
	if !bytes.Equal(mem.SVG, red.SVG) {
		t.Error("the pictures differ")
	}
}
