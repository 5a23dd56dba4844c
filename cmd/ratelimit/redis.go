package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// go-redis logs what it retries (a failed dial, once a second) to stderr; the command reports
// the error its call ends with, once.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// redisSynopsis is how the usage of a command shows the Redis flags.
const redisSynopsis = "-redis ADDR[,ADDR...] [-key " + rules.DefaultRedisKey + "]"

// passwordEnv is the environment variable that holds the Redis password when -password is
// not given.
const passwordEnv = "REDIS_PASSWORD"

// redisFlags are the flags that address the rules in Redis.
type redisFlags struct {
	addrs    string
	cluster  bool
	password string
	key      string
	timeout  time.Duration
}

// addRedisFlags defines the Redis flags on fs.
func addRedisFlags(fs *flag.FlagSet) *redisFlags {
	r := &redisFlags{}
	fs.StringVar(&r.addrs, "redis", "", "the Redis `host:port` (required); several, comma-separated, are the seed nodes of a Cluster")
	fs.BoolVar(&r.cluster, "cluster", false, "the -redis address is a Redis Cluster's, even when it is one")
	fs.StringVar(&r.password, "password", "", "the Redis password (default: the environment variable "+passwordEnv+")")
	fs.StringVar(&r.key, "key", rules.DefaultRedisKey, "the Redis `key` of the rules, and the channel announcing them")
	fs.DurationVar(&r.timeout, "timeout", 10*time.Second, "how long to wait for Redis before giving up")
	return r
}

// check reports flags that cannot work.
func (r *redisFlags) check() error {
	switch {
	case len(r.addresses()) == 0:
		return errors.New("-redis is required: the address of Redis, host:port")
	case r.key == "":
		return errors.New("-key is empty: give the key of the rules, such as " + rules.DefaultRedisKey)
	case r.timeout <= 0:
		return errors.New("-timeout must be more than 0")
	}
	return nil
}

// addresses returns the addresses of -redis.
func (r *redisFlags) addresses() []string {
	var out []string
	for _, a := range strings.Split(r.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// client returns a client of the server, or of the Cluster, the flags address, and a context
// that ends at -timeout. Close the client and cancel the context when done.
func (r *redisFlags) client() (redis.UniversalClient, context.Context, context.CancelFunc) {
	password := r.password
	if password == "" {
		password = os.Getenv(passwordEnv)
	}
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 r.addresses(),
		IsClusterMode:         r.cluster,
		Password:              password,
		ContextTimeoutEnabled: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	return client, ctx, cancel
}
