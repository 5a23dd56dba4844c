package rules

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
)

// An option of this package given twice is refused with an error naming it, by every function
// that takes it: the second would silently replace the first (a second WithReporter would
// leave the first's metrics without versions, a second WithTier sort requests by another
// plan). WithGuardOptions alone adds up (TestGuardOptionsAddUp).
func TestOptionGivenTwiceRefused(t *testing.T) {
	doc := []byte("version: v1\nrules:\n  - {name: api, key: user, policies: [{name: m, limit: 1, window: 1m}]}\n")
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := Parse("limits.yaml", doc, WithUserKey("user"))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never called: refused first
	defer rdb.Close()
	store := ratelimit.NewMemoryStore()
	check := func(what, name string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), name+" given twice") {
			t.Errorf("%s with %s twice: %v; want it refused, naming it", what, name, err)
		}
	}
	_, err = Parse("limits.yaml", doc, WithUserKey("user"), WithUserKey("uid"))
	check("Parse", "WithUserKey", err)
	for name, o := range map[string][2]Option{
		"WithTier":         {byPlan(), byPlan()},
		"WithLogger":       {quiet(), quiet()},
		"WithReporter":     {WithReporter(newReporter()), WithReporter(newReporter())},
		"WithPollInterval": {WithPollInterval(time.Second), WithPollInterval(time.Minute)},
		"WithInstanceName": {WithInstanceName("a"), WithInstanceName("b")},
		"WithHeartbeat":    {WithHeartbeat(time.Second), WithHeartbeat(time.Minute)},
		"WithLastKnownGood": {WithLastKnownGood(filepath.Join(t.TempDir(), "a")),
			WithLastKnownGood(filepath.Join(t.TempDir(), "b"))},
		"WithUserKey":  {WithUserKey("user"), WithUserKey("uid")},
		"WithResponse": {WithResponse(ratelimit.Response{ProblemJSON: true}), WithResponse(ratelimit.Response{IETFDraft: 11})},
	} {
		_, err := NewEngine(store, set, o[0], o[1])
		check("NewEngine", name, err)
		_, err = Open(store, path, WithUserKey("user"), o[0], o[1])
		if name == "WithUserKey" {
			_, err = Open(store, path, o[0], o[1])
		}
		check("Open", name, err)
		_, err = OpenRedis(context.Background(), store, rdb, "rl:rules", o[0], o[1])
		check("OpenRedis", name, err)
	}
	for name, o := range map[string][2]StartOption{
		"WithStartTimeout": {WithStartTimeout(time.Second), WithStartTimeout(time.Minute)},
		"WithDefaultRules": {WithDefaultRules("a.yaml", doc), WithDefaultRules("b.yaml", doc)},
	} {
		_, err := OpenRedis(context.Background(), store, rdb, "rl:rules", o[0], o[1])
		check("OpenRedis", name, err)
	}
}
