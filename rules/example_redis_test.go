package rules_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// Rules pushed once reach every instance: each fetches them from Redis (the channel of the
// key announces every new version).
func ExamplePush() {
	client := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	defer client.Close()
	ctx := context.Background()
	const key = "example:rl:rules" // rules.DefaultRedisKey in a deployment

	doc := []byte(`
version: "2026-11-23.1"
rules:
  - name: default
    key: ip
    policies:
      - {limit: 100, window: 1m}
`)
	if _, err := rules.Push(ctx, client, key, "limits.yaml", doc); err != nil {
		fmt.Println(err)
		return
	}
	stored, err := rules.Fetch(ctx, client, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("version %s from %s, %d rule\n", stored.Version, stored.Name, len(stored.Set.Rules()))

	_, err = rules.Push(ctx, client, key, "limits.yaml", []byte("rules:\n  - {name: default, key: ip}\n"))
	fmt.Println(err)
	version, _ := rules.StoredVersion(ctx, client, key)
	fmt.Println("still", version)

	_, err = rules.Fetch(ctx, client, "example:nothing:here")
	fmt.Println(errors.Is(err, rules.ErrNoRules))
	// Output:
	// version 2026-11-23.1 from limits.yaml, 1 rule
	// limits.yaml:2: rules[0].policies: required
	// still 2026-11-23.1
	// true
}
