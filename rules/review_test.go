package rules

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// The rules attacked (an adversarial review): each test failed while the defect its comment
// names stood.

// Parse refuses what every engine would refuse, so that validate and push refuse it, not each
// instance of the fleet: an override whose policies can never admit the rule's cost (the
// client refused for ever), a client value the rule's key function refuses (a comma in a
// header's), one client denied twice, and a denied client no rule is keyed by (it would deny
// nothing, and the operator believes it denied).
func TestParseRefusesWhatEnginesRefuse(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"override below the cost": {`version: "1"
rules:
  - name: api
    key: api_key
    cost: 10
    policies: [{name: per-minute, rate: 100/min}]
overrides:
  - client: {api_key: acme}
    policies: [{name: per-minute, rate: 5/min}]
`, `limits.yaml:9: overrides[0].policies: rule "api" costs 10`},
		"a comma in a client's header": {`version: "1"
rules:
  - name: api
    key: api_key
    policies: [{rate: 100/min}]
overrides:
  - client: {api_key: "a,b"}
    unlimited: true
`, `limits.yaml:7`},
		"a client denied twice": {`version: "1"
access:
  deny_clients: [{api_key: k1}, {"header:x-api-key": k1}]
rules:
  - name: api
    key: api_key
    policies: [{rate: 100/min}]
`, `names the client`},
		"a denied client of no rule": {`version: "1"
access:
  deny_clients: [{"header:X-Tenant": evil}]
rules:
  - name: api
    key: api_key
    policies: [{rate: 100/min}]
`, `would deny nothing`},
	} {
		t.Run(name, func(t *testing.T) {
			set, err := Parse("limits.yaml", []byte(tc.doc))
			if err == nil {
				_, nerr := NewEngine(ratelimit.NewMemoryStore(), set)
				t.Fatalf("Parse accepted it (an engine says: %v)", nerr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v; want it to say %q", err, tc.want)
			}
		})
	}
}

// A document in Redis that parses but that this engine cannot apply (a rule with a tier, on
// an engine without WithTier) does not keep an instance from starting: it starts on its
// default rules, as when Redis holds none; it failed instead, so that a bad push stopped
// every restarting instance.
func TestOpenRedisFallsBackOnADocumentItCannotApply(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	tiered := []byte("version: \"2\"\nrules:\n  - name: api\n    key: api_key\n    tier: free\n    policies: [{rate: 100/min}]\n")
	if _, err := Push(t.Context(), client, key, "limits.yaml", tiered); err != nil {
		t.Fatalf("Push refused: %v", err)
	}
	def := []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{rate: 100/min}]\n")
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithDefaultRules("limits.yaml", def))
	if err != nil {
		t.Fatalf("OpenRedis with default rules: %v; want it started on them", err)
	}
	if e.Version() != "1" {
		t.Errorf("started on version %s, want the default rules' 1", e.Version())
	}
}

// An instance that cannot record itself in the fleet (the fleet key of another type, an ACL)
// says so once, and again when it can: it said nothing, and push then reported that no
// instance watched the key.
func TestFleetRecordFailureIsLogged(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(t.Context(), client, key, "limits.yaml", []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{rate: 100/min}]\n")); err != nil {
		t.Fatal(err)
	}
	if err := client.Set(t.Context(), FleetKey(key), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var logged lockedBuffer
	subscribed := make(chan struct{}, 1)
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))),
		WithHeartbeat(50*time.Millisecond), WithInstanceName("i1"), signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	watching(t, e, client, key, subscribed)
	waitLog := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logged.String(), what); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 20 s for %q; the log:\n%s", what, logged.String())
			}
		}
	}
	waitLog("cannot record itself in the fleet")
	if err := client.Del(t.Context(), FleetKey(key)).Err(); err != nil {
		t.Fatal(err)
	}
	waitLog("records itself in the fleet again")
	if n := strings.Count(logged.String(), "cannot record itself"); n != 1 {
		t.Errorf("the failure logged %d times, want once until it ends", n)
	}
}

// A forced push of a version that an instance runs (it refused a newer one since) is
// refused: the instance would never read another document under that name, yet recorded
// itself as running it, so the push reported "applied on 1 of 1" while the fleet ran two
// documents under one version.
func TestForcedPushOfARunningVersionRefused(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	v1 := []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{name: per-minute, rate: 100/min}]\n")
	v2 := []byte("version: \"2\"\nrules:\n  - name: api\n    key: api_key\n    tier: free\n    policies: [{name: per-minute, rate: 100/min}]\n")
	v1b := []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{name: per-minute, rate: 5/min}]\n")
	if _, err := Push(t.Context(), client, key, "limits.yaml", v1); err != nil {
		t.Fatal(err)
	}
	instanceI1(t, client, key)
	if _, err := Push(t.Context(), client, key, "limits.yaml", v2); err != nil { // refused by i1: no WithTier
		t.Fatal(err)
	}
	waitFleet(t, client, key, "refused 2", func(f []Instance) bool { return len(f) == 1 && f[0].Refused == "2" })
	_, err := PushStored(t.Context(), client, key, "limits.yaml", v1b, PushOptions{Force: true})
	if !errors.Is(err, ErrNotNewer) || !strings.Contains(err.Error(), "instance i1 runs version") {
		t.Fatalf("a forced push of version 1, which i1 runs: %v; want it refused", err)
	}
	if v, _ := StoredVersion(t.Context(), client, key); v != "2" {
		t.Errorf("stored %q after the refusal, want 2 unchanged", v)
	}
}

// A push, forced or not, over a key emptied (deleted, evicted, a Redis restarted without its
// data) of the version an instance runs as read from the stored document is refused when the
// document says other than the instance runs: any version passed the script's checks, the
// instance never read it, and the fleet ran two documents under one name. The same document
// again is pushed.
func TestPushOverNothingStoredOfARunningVersion(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	v1 := []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{name: per-minute, rate: 100/min}]\n")
	v1b := []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{name: per-minute, rate: 5/min}]\n")
	if _, err := Push(t.Context(), client, key, "limits.yaml", v1); err != nil {
		t.Fatal(err)
	}
	instanceI1(t, client, key)
	waitFleet(t, client, key, "running 1 as stored", func(f []Instance) bool { return len(f) == 1 && f[0].Stored })
	if err := client.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		_, err := PushStored(t.Context(), client, key, "limits.yaml", v1b, PushOptions{Force: force})
		if !errors.Is(err, ErrNotNewer) || !strings.Contains(err.Error(), `instance i1 runs version "1"`) {
			t.Fatalf("a push (force %v) of another document as version 1, which i1 runs: %v; want it refused", force, err)
		}
	}
	if _, err := StoredVersion(t.Context(), client, key); !errors.Is(err, ErrNoRules) {
		t.Fatalf("after the refusals: %v, want nothing stored", err)
	}
	if _, err := Push(t.Context(), client, key, "limits.yaml", v1); err != nil {
		t.Fatalf("the document i1 runs, pushed again: %v", err)
	}
}

// An instance of an earlier release records no digest: a forced push of the version it runs
// is refused, as it always was (the digest's check let it through: found by a review).
func TestForcedPushOfAVersionAnEarlierReleaseRuns(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	v2 := []byte("version: \"2\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{name: per-minute, rate: 100/min}]\n")
	v1b := []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{name: per-minute, rate: 5/min}]\n")
	if _, err := Push(t.Context(), client, key, "limits.yaml", v2); err != nil {
		t.Fatal(err)
	}
	if err := record(t.Context(), client, key, Instance{Name: "old", Running: "1", Refused: "2"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := PushStored(t.Context(), client, key, "limits.yaml", v1b, PushOptions{Force: true}); !errors.Is(err, ErrNotNewer) {
		t.Fatalf("a forced push of version 1, which instance old runs: %v, want ErrNotNewer", err)
	}
}

// A push that is not forced does not need the fleet: one it cannot read (a key of another
// type, an ACL that allows the rules key alone) does not stop it, as before the fleet was read
// for it (found by a review).
func TestPushWithAnUnreadableFleet(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	v1 := []byte("version: \"1\"\nrules:\n  - name: api\n    key: api_key\n    policies: [{name: per-minute, rate: 100/min}]\n")
	if err := client.Set(t.Context(), FleetKey(key), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Push(t.Context(), client, key, "limits.yaml", v1); err != nil {
		t.Fatalf("a push over an unreadable fleet: %v", err)
	}
	if _, err := PushStored(t.Context(), client, key, "limits.yaml", v1, PushOptions{Force: true}); err == nil {
		t.Fatal("a forced push over a fleet it cannot check went on")
	}
}

// instanceI1 opens an engine named i1 on the rules at key, polling and recording every 50 ms,
// and returns once it watches them.
func instanceI1(t *testing.T, client redis.UniversalClient, key string) *Engine {
	t.Helper()
	subscribed := make(chan struct{}, 1)
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithLogger(slog.New(slog.DiscardHandler)),
		WithPollInterval(50*time.Millisecond), WithHeartbeat(50*time.Millisecond), WithInstanceName("i1"), signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	watching(t, e, client, key, subscribed)
	return e
}
