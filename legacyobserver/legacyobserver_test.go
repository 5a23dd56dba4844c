package legacyobserver_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/legacyobserver"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// calls records every call of the old interface: its method and arguments.
type calls []string

func (c *calls) add(method string, args ...any) { *c = append(*c, method+fmt.Sprint(args...)) }

func (c *calls) Decided(e ratelimit.DecisionEvent)            { c.add("Decided", e.Allowed, e.Source) }
func (c *calls) Answered(e observe.RequestEvent)              { c.add("Answered", e.Result, e.Waited) }
func (c *calls) StoreFailed(err error)                        { c.add("StoreFailed", err) }
func (c *calls) BreakerChanged(from, to observe.BreakerState) { c.add("BreakerChanged", from, to) }
func (c *calls) MemoryStoreFull(overflow bool)                { c.add("MemoryStoreFull", overflow) }
func (c *calls) KeyFellBack(reason string)                    { c.add("KeyFellBack", reason) }
func (c *calls) RedisEvictionPolicy(p string, e bool)         { c.add("RedisEvictionPolicy", p, e) }
func (c *calls) DenialCacheDeaf(deaf bool)                    { c.add("DenialCacheDeaf", deaf) }
func (c *calls) StoreDegraded(f string, d bool)               { c.add("StoreDegraded", f, d) }
func (c *calls) Leased(acquired bool, held time.Duration)     { c.add("Leased", acquired, held) }
func (c *calls) Queued(entered bool)                          { c.add("Queued", entered) }

// Each of the eleven hooks Hooks returns calls the method of its event, with its arguments,
// and no other.
func TestHooksForwardEachEvent(t *testing.T) {
	failure := errors.New("refused")
	for _, tc := range []struct {
		hook string
		fire func(o *ratelimit.Observer)
		want string
	}{
		{"Decided", func(o *ratelimit.Observer) {
			o.Decided(ratelimit.DecisionEvent{Allowed: true, Source: observe.SourceDenialCache})
		}, "Decided" + fmt.Sprint(true, observe.SourceDenialCache)},
		{"Answered", func(o *ratelimit.Observer) {
			o.Answered(observe.RequestEvent{Result: observe.ResultDenied, Waited: time.Second})
		}, "Answered" + fmt.Sprint(observe.ResultDenied, time.Second)},
		{"StoreFailed", func(o *ratelimit.Observer) { o.StoreFailed(failure) }, "StoreFailed" + fmt.Sprint(failure)},
		{"BreakerChanged", func(o *ratelimit.Observer) { o.BreakerChanged(observe.BreakerOpen, observe.BreakerHalfOpen) },
			"BreakerChanged" + fmt.Sprint(observe.BreakerOpen, observe.BreakerHalfOpen)},
		{"MemoryStoreFull", func(o *ratelimit.Observer) { o.MemoryStoreFull(true) }, "MemoryStoreFull" + fmt.Sprint(true)},
		{"KeyFellBack", func(o *ratelimit.Observer) { o.KeyFellBack("no_user") }, "KeyFellBack" + fmt.Sprint("no_user")},
		{"RedisEvictionPolicy", func(o *ratelimit.Observer) { o.RedisEvictionPolicy("allkeys-lru", true) },
			"RedisEvictionPolicy" + fmt.Sprint("allkeys-lru", true)},
		{"DenialCacheDeaf", func(o *ratelimit.Observer) { o.DenialCacheDeaf(true) }, "DenialCacheDeaf" + fmt.Sprint(true)},
		{"StoreDegraded", func(o *ratelimit.Observer) { o.StoreDegraded("functions", false) },
			"StoreDegraded" + fmt.Sprint("functions", false)},
		{"SlotHeld", func(o *ratelimit.Observer) { o.SlotHeld(false, 3*time.Second) }, "Leased" + fmt.Sprint(false, 3*time.Second)},
		{"Queued", func(o *ratelimit.Observer) { o.Queued(false) }, "Queued" + fmt.Sprint(false)},
	} {
		t.Run(tc.hook, func(t *testing.T) {
			var c calls
			tc.fire(legacyobserver.Hooks(&c))
			if len(c) != 1 || c[0] != tc.want {
				t.Errorf("%s called %q; want [%s]", tc.hook, c, tc.want)
			}
		})
	}
}

// unlearned are the hooks ratelimit.Observer gained after the old interface, which Hooks
// documents as left nil.
var unlearned = map[string]bool{"Held": true}

// Hooks sets every hook ratelimit.Observer has: a hook added to it must be forwarded here too,
// or documented as one the old interface does not learn (unlearned).
func TestHooksSetsEveryHook(t *testing.T) {
	v := reflect.ValueOf(legacyobserver.Hooks(&calls{})).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if v.Field(i).IsNil() != unlearned[name] {
			t.Errorf("Hooks leaves %s nil: %v, want %v", name, v.Field(i).IsNil(), unlearned[name])
		}
	}
	if v.NumField()-len(unlearned) != 11 {
		t.Errorf("ratelimit.Observer has %d hooks the old interface learns; it had 11 events", v.NumField()-len(unlearned))
	}
	if legacyobserver.Hooks(nil) != nil {
		t.Error("Hooks(nil) is not nil: WithObserver would take an observer that panics")
	}
}

// An observer written against the old interface, given to a store through Hooks, is told of
// each decision and answer of a guard over it.
func TestHooksOfAStore(t *testing.T) {
	var c calls
	l, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithObserver(legacyobserver.Hooks(&c))),
		ratelimit.Policy{Limit: 1, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 2 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	want := calls{"Decided" + fmt.Sprint(true, observe.SourceStore), "Answered" + fmt.Sprint(observe.ResultAllowed, time.Duration(0)),
		"Decided" + fmt.Sprint(false, observe.SourceStore), "Answered" + fmt.Sprint(observe.ResultDenied, time.Duration(0))}
	if !slices.Equal(c, want) {
		t.Errorf("told %q; want %q", c, want)
	}
}
