package ratelimit

import (
	"reflect"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// signatureIgnores are the fields of Policy that signature leaves out on purpose, and why.
// Every other field tells two lists apart: a field added to Policy later fails
// TestSignatureCoversEveryField until signature covers it or it is listed here.
var signatureIgnores = map[string]string{
	"compiled": "what New computes from the other fields; a policy taken from a decision carries it",
}

// The resolver shares a limiter between keys whose lists have one signature: it must tell
// apart two lists that differ in any field of Policy (issue: it ignored NoDenialCache and
// Lease), including an algorithm's options, and must not tell apart a policy and its compiled
// copy.
func TestSignatureCoversEveryField(t *testing.T) {
	base := Policy{Name: "api", Limit: 10, Window: time.Minute, Burst: 5, Algorithm: algorithms.GCRA{}}
	typ := reflect.TypeFor[Policy]()
	for i := range typ.NumField() {
		field := typ.Field(i)
		if why, ok := signatureIgnores[field.Name]; ok {
			if field.IsExported() {
				t.Errorf("Policy.%s is left out of the signature (%s), but it is exported: a user sets it", field.Name, why)
			}
			continue
		}
		changed := base
		v := reflect.ValueOf(&changed).Elem().Field(i)
		switch {
		case !field.IsExported():
			t.Errorf("Policy.%s is unexported: decide whether signature covers it, and list it in signatureIgnores if not", field.Name)
			continue
		case v.Kind() == reflect.Bool:
			v.SetBool(!v.Bool())
		case v.Kind() == reflect.Int64: // Limit, Burst, and the durations
			v.SetInt(v.Int() + 1)
		case v.Kind() == reflect.String:
			v.SetString(v.String() + "x")
		case field.Type == reflect.TypeFor[algorithms.Algorithm]():
			v.Set(reflect.ValueOf(algorithms.Algorithm(algorithms.SlidingLog{})))
		case field.Type == reflect.TypeFor[*calendar.Period]():
			v.Set(reflect.ValueOf(&calendar.Period{Unit: calendar.Day, Zone: time.UTC}))
		default:
			t.Errorf("Policy.%s is a %v: teach this test to change it", field.Name, field.Type)
			continue
		}
		if signature([]Policy{base}) == signature([]Policy{changed}) {
			t.Errorf("two lists that differ only in Policy.%s have one signature: their keys would share a limiter", field.Name)
		}
	}

	shaping := base
	shaping.Algorithm = algorithms.LeakyBucket{Shaping: true}
	policing := base
	policing.Algorithm = algorithms.LeakyBucket{}
	if signature([]Policy{shaping}) == signature([]Policy{policing}) {
		t.Error("a shaping and a policing leaky bucket have one signature")
	}

	compiled, err := base.compile()
	if err != nil {
		t.Fatal(err)
	}
	if signature([]Policy{compiled}) != signature([]Policy{base}) {
		t.Error("a compiled policy's signature is not its own: a list from a decision's policies would not share the limiter")
	}
	if signature([]Policy{base, base}) == signature([]Policy{base}) || signature([]Policy{base, shaping}) == signature([]Policy{shaping, base}) {
		t.Error("lists of other lengths or orders have one signature")
	}
}

// Equal lists have one signature however their algorithm is given: a pointer a Resolver
// allocates on every call, or none for the default GCRA (the pointer's address kept them
// apart, each resolution making a limiter of its own; found by a review).
func TestSignatureOfEqualLists(t *testing.T) {
	for _, c := range []struct{ a, b Policy }{
		{Policy{Name: "p", Limit: 10, Window: time.Minute, Algorithm: &algorithms.LeakyBucket{Shaping: true}},
			Policy{Name: "p", Limit: 10, Window: time.Minute, Algorithm: &algorithms.LeakyBucket{Shaping: true}}},
		{Policy{Name: "p", Limit: 10, Window: time.Minute},
			Policy{Name: "p", Limit: 10, Window: time.Minute, Algorithm: algorithms.GCRA{}}},
		// A calendar Period by its text, not its address or its zone's: two resolutions that
		// load the zone each time share a limiter; nil is a fixed window there.
		{Policy{Name: "p", Limit: 10, Period: &calendar.Period{Unit: calendar.Day, Zone: mustZone(t, "Europe/Berlin")}},
			Policy{Name: "p", Limit: 10, Period: &calendar.Period{Unit: calendar.Day, Zone: mustZone(t, "Europe/Berlin")}, Algorithm: algorithms.FixedWindow{}}},
	} {
		if sa, sb := signature([]Policy{c.a}), signature([]Policy{c.b}); sa != sb {
			t.Errorf("equal lists, signatures\n%s\n%s", sa, sb)
		}
	}
	if signature([]Policy{{Limit: 10, Window: time.Minute, Algorithm: &algorithms.LeakyBucket{Shaping: true}}}) ==
		signature([]Policy{{Limit: 10, Window: time.Minute, Algorithm: &algorithms.LeakyBucket{}}}) {
		t.Error("a shaping leaky bucket and a policing one: one signature")
	}
	day := &calendar.Period{Unit: calendar.Day, Zone: time.UTC}
	if signature([]Policy{{Limit: 10, Period: day}}) == signature([]Policy{{Limit: 10, Period: day, Algorithm: algorithms.GCRA{}}}) {
		t.Error("a calendar policy of the default algorithm (a fixed window) and one of GCRA, which New refuses: one signature")
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return z
}
