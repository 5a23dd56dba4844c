package rules

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// A push that would silently disable or roll back limiting is refused, and leaves Redis as it
// was: a document without rules, a version not newer than the stored one, a version the
// operator did not start from. Force overrides the order, and a forced push says so; only the
// document's own allow_empty: true lets a document without rules through.
func TestPushRefuses(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		key := redistest.Prefix(t) + "rules"
		stored := storedVersion(t, client, key)
		empty := []byte("version: \"7\"\nrules: []\n")
		for _, o := range []PushOptions{{}, {Force: true}} {
			if _, err := PushWith(ctx, client, key, "limits.yaml", empty, o); !errors.Is(err, ErrEmptyRules) || stored() != "" {
				t.Fatalf("an empty document (%+v): %v, stored %q; want ErrEmptyRules, nothing stored", o, err, stored())
			}
		}
		if _, err := Push(ctx, client, key, "limits.yaml", doc("9")); err != nil {
			t.Fatal(err)
		}
		for _, older := range []string{"9", "8", "1.5", "09"} {
			if _, err := Push(ctx, client, key, "limits.yaml", doc(older)); !errors.Is(err, ErrNotNewer) || stored() != "9" {
				t.Errorf("version %s over 9: %v, stored %q; want ErrNotNewer, 9 stored", older, err, stored())
			}
		}
		if _, err := Push(ctx, client, key, "limits.yaml", doc("10")); err != nil || stored() != "10" {
			t.Fatalf("version 10 over 9: %v, stored %q; want it pushed", err, stored())
		}
		v9 := "9"
		if _, err := PushWith(ctx, client, key, "limits.yaml", doc("11"), PushOptions{IfVersion: &v9}); !errors.Is(err, ErrVersionChanged) || stored() != "10" {
			t.Errorf("started from 9 while 10 is stored: %v, stored %q; want ErrVersionChanged", err, stored())
		}
		changed := []byte("version: \"10\"\nrules:\n  - {name: default, key: ip, policies: [{limit: 99, window: 1m}]}\n")
		if _, err := PushWith(ctx, client, key, "limits.yaml", changed, PushOptions{Force: true}); !errors.Is(err, ErrNotNewer) {
			t.Errorf("another document under the stored version 10, forced: %v; want ErrNotNewer: instances on 10 would never read it", err)
		}
		if _, err := PushWith(ctx, client, key, "limits.yaml", doc("3"), PushOptions{Force: true}); err != nil || stored() != "3" {
			t.Fatalf("a forced rollback to 3: %v, stored %q", err, stored())
		}
		s, err := Fetch(ctx, client, key)
		if err != nil || !s.Forced || s.Previous != "10" {
			t.Errorf("the forced push as stored: %+v, %v; want Forced, Previous 10", s, err)
		}
		emptyMeant := []byte("version: \"7\"\nallow_empty: true\nrules: []\n")
		if _, err := PushWith(ctx, client, key, "limits.yaml", emptyMeant, PushOptions{Force: true}); err != nil || stored() != "7" {
			t.Errorf("an empty document with allow_empty: true: %v, stored %q", err, stored())
		}
	})
}

// storedVersion returns a function that reads the version stored at key, "" for none.
func storedVersion(t *testing.T, client redis.UniversalClient, key string) func() string {
	return func() string {
		v, _ := StoredVersion(t.Context(), client, key)
		return v
	}
}

// Of several pushes over one version, one wins: the checks and the write are one step.
func TestPushConcurrent(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := t.Context()
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(ctx, client, key, "limits.yaml", doc("4")); err != nil {
		t.Fatal(err)
	}
	v4 := "4"
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []string
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := fmt.Sprintf("5.%d", i)
			if _, err := PushWith(ctx, client, key, "limits.yaml", doc(v), PushOptions{IfVersion: &v4}); err == nil {
				mu.Lock()
				wins = append(wins, v)
				mu.Unlock()
			} else if !errors.Is(err, ErrVersionChanged) {
				t.Errorf("push %s: %v; want it pushed or ErrVersionChanged", v, err)
			}
		}()
	}
	wg.Wait()
	if got, _ := StoredVersion(ctx, client, key); len(wins) != 1 || got != wins[0] {
		t.Errorf("pushes that won: %v, stored %q; want exactly one, stored", wins, got)
	}
}

// Redis orders versions as CompareVersions does: a push is accepted exactly when its version
// is newer than the stored one by CompareVersions.
func TestCompareVersions(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := t.Context()
	key := redistest.Prefix(t) + "rules"
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"10", "9", 1}, {"9", "10", -1}, {"010", "10", 0}, {"2", "2.1", -1}, {"2.1", "2", 1},
		{"2026-11-23.2", "2026-11-23.1", 1}, {"2026-11-24.1", "2026-11-23.9", 1}, {"v2", "v10", -1}, {"v10", "v9", 1},
		{"2026-11-9", "2026-11-10", -1}, {"2026-12-01.rc2", "2026-12-01.rc10", -1}, {"r2a", "r2b", -1}, {"1a", "1", 1},
		{"1.10.0", "1.9.9", 1}, {"a", "a", 0}, {"99999999999999999999", "99999999999999999998", 1},
		{"B", "a", -1}, {"release-\u00e9", "release-z", 1}, // byte order, not a locale's
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if v, _ := StoredVersion(ctx, client, key); v != tc.b {
			if _, err := PushWith(ctx, client, key, "limits.yaml", doc(`"`+tc.b+`"`), PushOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Push(ctx, client, key, "limits.yaml", doc(`"`+tc.a+`"`))
		if accepted := err == nil; accepted != (tc.want > 0) {
			t.Errorf("pushing %q over %q: %v; Redis and CompareVersions disagree", tc.a, tc.b, err)
		}
	}
}

// TestPushStored: PushStored returns the document as Fetch reads it back, its PushedAt
// included, which tells the fleet's records made since the push.
func TestPushStored(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	s, err := PushStored(t.Context(), client, key, "limits.yaml", doc("1"), PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Fetch(t.Context(), client, key)
	if err != nil {
		t.Fatal(err)
	}
	if !s.PushedAt.Equal(got.PushedAt) || s.Version != got.Version || s.Name != got.Name || string(s.Document) != string(got.Document) ||
		s.Forced != got.Forced || s.Previous != got.Previous || s.Set.Version() != "1" {
		t.Errorf("PushStored: %+v\nFetch:      %+v", s, got)
	}
}

// TestPushRefusesUnversioned: a document without a version: field has only a hash of its
// rules for a version, which has no order; push refuses it, forced or not, whatever is stored,
// and writes nothing. Before, hashes were ordered as versions: of six one-line edits, one was
// pushed and five refused as "not newer" (with advice to force a rollback), and an unversioned
// file replaced a dated version without a word.
func TestPushRefusesUnversioned(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		key := redistest.Prefix(t) + "rules"
		stored := storedVersion(t, client, key)
		edit := func(limit int) []byte {
			return fmt.Appendf(nil, "rules:\n  - {name: default, key: ip, policies: [{limit: %d, window: 1m}]}\n", limit)
		}
		for _, o := range []PushOptions{{}, {Force: true}} {
			_, err := PushWith(ctx, client, key, "limits.yaml", edit(1), o)
			if !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "version:") || stored() != "" {
				t.Fatalf("an unversioned document over nothing (%+v): %v, stored %q; want ErrNoVersion naming the field, nothing stored", o, err, stored())
			}
		}
		if _, err := Push(ctx, client, key, "limits.yaml", doc("2026-11-23")); err != nil {
			t.Fatal(err)
		}
		for limit := 2; limit <= 7; limit++ {
			for _, o := range []PushOptions{{}, {Force: true}} {
				_, err := PushWith(ctx, client, key, "limits.yaml", edit(limit), o)
				if !errors.Is(err, ErrNoVersion) || strings.Contains(err.Error(), "roll back") || stored() != "2026-11-23" {
					t.Errorf("edit %d, unversioned, over 2026-11-23 (%+v): %v, stored %q; want ErrNoVersion, 2026-11-23 kept", limit, o, err, stored())
				}
			}
		}
		set, err := Parse("limits.yaml", edit(1))
		if err != nil || set.Versioned() || set.Version() == "" {
			t.Errorf("Parse of an unversioned document: %v, Versioned %v, Version %q; want a hash, not versioned", err, set != nil && set.Versioned(), set.Version())
		}
		if set := mustParseString(t, string(doc("3"))); !set.Versioned() {
			t.Errorf("a document of version 3 is not Versioned")
		}

		// A document stored without a version (by hand, or by a push before this rule) is
		// not one Fetch returns, nor a watcher applies: the hash it would run under has no order.
		if err := client.HSet(ctx, key, "version", set.Version(), "document", string(edit(1))).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := Fetch(ctx, client, key); !errors.Is(err, ErrNoVersion) {
			t.Errorf("Fetch of a stored document without a version: %v; want ErrNoVersion", err)
		}
	})
}

// TestCompareVersionsAgreesWithRedis: on random versions made of digits, letters, dots and
// dashes, the script in Redis accepts a push exactly when CompareVersions says it is newer.
func TestCompareVersionsAgreesWithRedis(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := t.Context()
	key := redistest.Prefix(t) + "rules"
	rng := rand.New(rand.NewPCG(1, 2))
	version := func() string {
		const alphabet = "0019av.-"
		b := make([]byte, 1+rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return "x" + string(b) // never empty, never only dots
	}
	for range 200 {
		a, b := version(), version()
		if a == b {
			continue
		}
		if v, _ := StoredVersion(ctx, client, key); v != b {
			if _, err := PushWith(ctx, client, key, "limits.yaml", doc(`"`+b+`"`), PushOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Push(ctx, client, key, "limits.yaml", doc(`"`+a+`"`))
		if accepted := err == nil; accepted != (CompareVersions(a, b) > 0) {
			t.Errorf("pushing %q over %q: %v; CompareVersions says %d", a, b, err, CompareVersions(a, b))
		}
	}
}
