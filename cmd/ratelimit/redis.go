package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/url"
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
const redisSynopsis = "-redis URL|ADDR[,ADDR...] [-key " + rules.DefaultRedisKey + "]"

// passwordEnv is the environment variable that holds the Redis password when neither
// -password nor the URL gives one.
const passwordEnv = "REDIS_PASSWORD"

// redisFlags are the flags that address the rules in Redis.
type redisFlags struct {
	addrs    string
	cluster  bool
	master   string // -sentinel-master: -redis names Sentinels
	user     string
	password string
	db       int
	tls      bool
	key      string
	timeout  time.Duration
}

// addRedisFlags defines the Redis flags on fs.
func addRedisFlags(fs *flag.FlagSet) *redisFlags {
	r := &redisFlags{}
	fs.StringVar(&r.addrs, "redis", "", "Redis (required): a `URL` redis://[user:password@]host:port[/db] or rediss:// (TLS), or host:port; several comma-separated host:port are the seed nodes of a Cluster, or the Sentinels with -sentinel-master")
	fs.BoolVar(&r.cluster, "cluster", false, "-redis is a Redis Cluster, even when it names one node")
	fs.StringVar(&r.master, "sentinel-master", "", "the `name` of the master that the Sentinels named by -redis watch")
	fs.StringVar(&r.user, "redis-user", "", "the Redis ACL user (default: the URL's, else the default user)")
	fs.StringVar(&r.password, "password", "", "the Redis password (default: the URL's, else the environment variable "+passwordEnv+")")
	fs.IntVar(&r.db, "db", -1, "the Redis database number (default: the URL's, else 0)")
	fs.BoolVar(&r.tls, "tls", false, "connect with TLS (a rediss:// URL does)")
	fs.StringVar(&r.key, "key", rules.DefaultRedisKey, "the Redis `key` of the rules, and the channel announcing them")
	fs.DurationVar(&r.timeout, "timeout", 10*time.Second, "how long the command waits for Redis in all: every dial, read and write within it")
	return r
}

// check reports flags that cannot work.
func (r *redisFlags) check() error {
	switch {
	case strings.TrimSpace(r.addrs) == "":
		return errors.New("-redis is required: a redis:// URL, or host:port")
	case r.key == "":
		return errors.New("-key is empty: give the key of the rules, such as " + rules.DefaultRedisKey)
	case r.timeout <= 0:
		return errors.New("-timeout must be more than 0")
	case r.master != "" && r.cluster:
		return errors.New("-sentinel-master and -cluster: a Sentinel watches a master, not a Cluster; give one")
	}
	_, err := r.options()
	return err
}

// options returns the go-redis options the flags make: from a URL (go-redis parses it), or
// from addresses, with the flags' user, password, database and TLS over the URL's.
func (r *redisFlags) options() (*redis.UniversalOptions, error) {
	o := &redis.UniversalOptions{}
	if strings.Contains(r.addrs, "://") {
		if r.cluster {
			co, err := redis.ParseClusterURL(r.addrs)
			if err != nil {
				return nil, fmt.Errorf("-redis %s: %w", redact(r.addrs), err)
			}
			o.Addrs, o.Username, o.Password, o.TLSConfig = co.Addrs, co.Username, co.Password, co.TLSConfig
		} else {
			so, err := redis.ParseURL(r.addrs)
			if err != nil {
				return nil, fmt.Errorf("-redis %s: %w", redact(r.addrs), err)
			}
			o.Addrs, o.Username, o.Password, o.DB, o.TLSConfig = []string{so.Addr}, so.Username, so.Password, so.DB, so.TLSConfig
		}
	} else {
		for _, a := range strings.Split(r.addrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.Addrs = append(o.Addrs, a)
			}
		}
	}
	if r.user != "" {
		o.Username = r.user
	}
	if r.password != "" {
		o.Password = r.password
	}
	if o.Password == "" {
		o.Password = os.Getenv(passwordEnv)
	}
	if r.db >= 0 {
		o.DB = r.db
	}
	if r.tls && o.TLSConfig == nil {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if r.cluster && o.DB != 0 {
		return nil, fmt.Errorf("-redis %s: a Redis Cluster has only database 0", r.where())
	}
	o.IsClusterMode = r.cluster
	o.MasterName = r.master
	if r.master != "" {
		o.SentinelUsername, o.SentinelPassword = o.Username, o.Password
	}
	// -timeout governs every call: a dial, a read and a write each stop at it, and the
	// command's context ends at it; go-redis does not retry past it.
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = r.timeout, r.timeout, r.timeout, r.timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	return o, nil
}

// client returns a client of the server, Cluster or Sentinel-watched master the flags address,
// and a context that ends at -timeout. Close the client and cancel the context when done.
// check must have passed.
func (r *redisFlags) client() (redis.UniversalClient, context.Context, context.CancelFunc) {
	o, err := r.options()
	if err != nil {
		panic(err) // check said otherwise
	}
	client := redis.NewUniversalClient(o)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	return client, ctx, cancel
}

// where names the Redis the flags address, without a password: in every error.
func (r *redisFlags) where() string {
	s := redact(r.addrs)
	if r.master != "" {
		s = "master " + r.master + " of the Sentinels " + s
	}
	if r.db > 0 {
		s += fmt.Sprintf(" (db %d)", r.db)
	}
	return s
}

// redact returns s with the password of a URL in it replaced.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// failed returns err of a call to Redis, naming the Redis and the timeout when it ran out.
func (r *redisFlags) failed(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
		return fmt.Errorf("redis %s: %w (-timeout %v)", r.where(), err, r.timeout)
	}
	return fmt.Errorf("redis %s: %w", r.where(), err)
}
