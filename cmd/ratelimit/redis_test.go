package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisFlagsOf parses the Redis flags args as a command does.
func redisFlagsOf(t *testing.T, args ...string) *redisFlags {
	t.Helper()
	fs := newFlags("test", "", "", io.Discard, io.Discard)
	r := addRedisFlags(fs.FlagSet)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return r
}

// conn is what the tests compare of the go-redis options the flags make.
type conn struct {
	addrs                      string
	user, password             string
	db                         int
	tls                        bool
	master                     string
	sentinelUser, sentinelPass string
	cluster                    bool
}

func connOf(o *redis.UniversalOptions) conn {
	return conn{
		addrs: strings.Join(o.Addrs, ","), user: o.Username, password: o.Password, db: o.DB, tls: o.TLSConfig != nil,
		master: o.MasterName, sentinelUser: o.SentinelUsername, sentinelPass: o.SentinelPassword, cluster: o.IsClusterMode,
	}
}

// TestRedisForms: every form of -redis, with the flags that fill what it leaves out, makes the
// connection it says; the environment's passwords fill only what neither gives.
func TestRedisForms(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want conn
	}{
		{"one address", nil, []string{"-redis", "h1:6379"}, conn{addrs: "h1:6379"}},
		{"seed nodes", nil, []string{"-redis", "h1:1, h2:2,h3:3"}, conn{addrs: "h1:1,h2:2,h3:3", cluster: true}},
		{"one seed node", nil, []string{"-redis", "h1:1", "-cluster"}, conn{addrs: "h1:1", cluster: true}},
		{"address and flags", nil, []string{"-redis", "h1:1", "-redis-user", "ops", "-password", "pw", "-db", "2", "-tls"},
			conn{addrs: "h1:1", user: "ops", password: "pw", db: 2, tls: true}},
		{"REDIS_PASSWORD", map[string]string{passwordEnv: "envpw"}, []string{"-redis", "h1:1"}, conn{addrs: "h1:1", password: "envpw"}},
		{"-password over REDIS_PASSWORD", map[string]string{passwordEnv: "envpw"}, []string{"-redis", "h1:1", "-password", "pw"},
			conn{addrs: "h1:1", password: "pw"}},
		{"URL", nil, []string{"-redis", "redis://ops:pw@h1:1/2"}, conn{addrs: "h1:1", user: "ops", password: "pw", db: 2}},
		{"URL without a port", nil, []string{"-redis", "redis://h1"}, conn{addrs: "h1:6379"}},
		{"URL's password over REDIS_PASSWORD", map[string]string{passwordEnv: "envpw"}, []string{"-redis", "redis://ops:pw@h1:1"},
			conn{addrs: "h1:1", user: "ops", password: "pw"}},
		{"URL and the flags it leaves out", map[string]string{passwordEnv: "envpw"}, []string{"-redis", "redis://h1:1", "-redis-user", "ops", "-db", "3"},
			conn{addrs: "h1:1", user: "ops", password: "envpw", db: 3}},
		{"URL and the same values", nil, []string{"-redis", "rediss://ops:pw@h1:1/2", "-redis-user", "ops", "-password", "pw", "-db", "2", "-tls"},
			conn{addrs: "h1:1", user: "ops", password: "pw", db: 2, tls: true}},
		{"TLS URL", nil, []string{"-redis", "rediss://h1:1"}, conn{addrs: "h1:1", tls: true}},
		{"Cluster URL", nil, []string{"-redis", "redis://ops:pw@h1:1?addr=h2:2&addr=h3:3"},
			conn{addrs: "h1:1,h2:2,h3:3", user: "ops", password: "pw", cluster: true}},
		{"Cluster URL of one seed", nil, []string{"-redis", "rediss://h1:1", "-cluster"}, conn{addrs: "h1:1", tls: true, cluster: true}},
		{"Sentinels", map[string]string{passwordEnv: "envpw", sentinelPasswordEnv: "envspw"},
			[]string{"-redis", "s1:26379,s2:26379", "-sentinel-master", "mymaster", "-redis-user", "ops", "-db", "2"},
			conn{addrs: "s1:26379,s2:26379", master: "mymaster", user: "ops", password: "envpw", db: 2, sentinelPass: "envspw"}},
		{"Sentinels and their credentials", nil,
			[]string{"-redis", "s1:26379", "-sentinel-master", "m", "-sentinel-user", "sen", "-sentinel-password", "spw", "-password", "pw"},
			conn{addrs: "s1:26379", master: "m", password: "pw", sentinelUser: "sen", sentinelPass: "spw"}},
		{"Sentinel URL", nil, []string{"-redis", "redis://sen:spw@s1:26379/2?addr=s2:26379&master_name=m&username=ops&password=pw"},
			conn{addrs: "s1:26379,s2:26379", master: "m", user: "ops", password: "pw", db: 2, sentinelUser: "sen", sentinelPass: "spw"}},
		{"Sentinel URL and -sentinel-master", nil, []string{"-redis", "redis://s1:26379", "-sentinel-master", "m", "-password", "pw"},
			conn{addrs: "s1:26379", master: "m", password: "pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(passwordEnv, tc.env[passwordEnv])
			t.Setenv(sentinelPasswordEnv, tc.env[sentinelPasswordEnv])
			r := redisFlagsOf(t, tc.args...)
			if err := r.check(); err != nil {
				t.Fatalf("check: %v", err)
			}
			o, err := r.options()
			if err != nil {
				t.Fatalf("options: %v", err)
			}
			if got := connOf(o); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRedisTimeouts: -timeout is every timeout of every form, and go-redis retries nothing.
func TestRedisTimeouts(t *testing.T) {
	for _, args := range [][]string{
		{"-redis", "h1:1"},
		{"-redis", "redis://h1:1?addr=h2:2"},
		{"-redis", "redis://s1:1?master_name=m"},
	} {
		o, err := redisFlagsOf(t, append(args, "-timeout", "750ms")...).options()
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		got := []time.Duration{o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout}
		for i, d := range got {
			if d != 750*time.Millisecond {
				t.Errorf("%q: timeout %d of (dial, read, write, pool) is %v, want 750ms", args, i, d)
			}
		}
		if !o.ContextTimeoutEnabled || o.MaxRetries != -1 || o.DialerRetries != 1 {
			t.Errorf("%q: ContextTimeoutEnabled %v, MaxRetries %d, DialerRetries %d; want true, -1 (none), 1 (one dial)",
				args, o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries)
		}
	}
}

// TestRedisFlagErrors: flags that cannot work are usage errors that say why, and never show a
// password.
func TestRedisFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-redis", " "}, "-redis is required"},
		{[]string{"-redis", "h:1", "-timeout", "-1s"}, "-timeout must be more than 0"},
		{[]string{"-redis", "h:1", "-cluster", "-sentinel-master", "m"}, "-sentinel-master and -cluster"},
		{[]string{"-redis", "h:1", "-cluster", "-db", "2"}, "a Redis Cluster has only database 0: leave out -db"},
		{[]string{"-redis", "redis://h:1/2?addr=h:2"}, "a Redis Cluster has only database 0: leave the database out of the URL"},
		{[]string{"-redis", "redis://h:1/2", "-db", "3"}, "-db 3 and the URL's database 2 differ"},
		{[]string{"-redis", "redis://h:1?db=2", "-db", "0"}, "-db 0 and the URL's database 2 differ"},
		{[]string{"-redis", "redis://ops:s3cret@h:1", "-redis-user", "admin"}, `-redis-user "admin" and the URL's user "ops" differ`},
		{[]string{"-redis", "redis://ops:s3cret@h:1", "-password", "other"}, "-password and the URL's password differ"},
		{[]string{"-redis", "redis://:s3cret@h:1?master_name=m", "-sentinel-password", "other"}, "-sentinel-password and the URL's Sentinel password differ"},
		{[]string{"-redis", "redis://h:1?master_name=a", "-sentinel-master", "b"}, `-sentinel-master "b" and the URL's master_name "a" differ`},
		{[]string{"-redis", "redis://h:1?master_name=m", "-cluster"}, "-cluster and the URL's master_name"},
		{[]string{"-redis", "redis://h:1", "-tls"}, "-tls and a redis:// URL: write rediss://"},
		{[]string{"-redis", "redis://h:1", "-tls-insecure"}, "-tls-insecure and a redis:// URL"},
		{[]string{"-redis", "h:1", "-tls-ca", "/nonexistent/ca.pem"}, "-tls-ca: open /nonexistent/ca.pem"},
		{[]string{"-redis", "redis://ops:s3cret@h:1?dial_timeout=3s"}, `the URL's option "dial_timeout": -timeout sets every timeout`},
		{[]string{"-redis", "redis://ops:s3cret@h:1?nope=1"}, `the URL's option "nope"`},
		{[]string{"-redis", "redis://ops:s3cret@h:1?password=hunter2"}, "redis: unexpected option: password"},
		{[]string{"-redis", "redis://ops:s3cret@h:1/x"}, `invalid database number: "x"`},
		{[]string{"-redis", "redis://ops:s3cret@h:x"}, "-redis is not a valid URL"},
		{[]string{"-redis", "unix:///run/redis.sock"}, "-redis unix:///run/redis.sock: a URL is redis:// or rediss://"},
		{[]string{"-redis", "h:1", "-sentinel-password", "s3cret"}, "-sentinel-password without -sentinel-master"},
	} {
		t.Setenv(passwordEnv, "")
		t.Setenv(sentinelPasswordEnv, "")
		err := redisFlagsOf(t, tc.args...).check()
		switch {
		case err == nil:
			t.Errorf("%q: check passed; want %q", tc.args, tc.want)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%q: got %q, want %q in it", tc.args, err, tc.want)
		case strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%q: the error shows the password: %v", tc.args, err)
		}
	}
}

// TestRedisWhere: errors name the Redis without a password, wherever the URL holds one, and
// say when -timeout ran out.
func TestRedisWhere(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-redis", "127.0.0.1:6379"}, "127.0.0.1:6379"},
		{[]string{"-redis", "127.0.0.1:6379", "-db", "2"}, "127.0.0.1:6379 (db 2)"},
		{[]string{"-redis", "redis://ops:s3cret@127.0.0.1:6379/2"}, "redis://ops:xxxxx@127.0.0.1:6379/2"},
		{[]string{"-redis", "redis://:s3cret@s1:1?master_name=m&password=s3cret&username=ops"}, "redis://:xxxxx@s1:1?master_name=m&password=xxxxx&username=ops"},
		{[]string{"-redis", "s1:1,s2:2", "-sentinel-master", "m", "-db", "1"}, "master m of the Sentinels s1:1,s2:2 (db 1)"},
		{[]string{"-redis", "ops:s3cret@h1:1,h2:2"}, "ops:xxxxx@h1:1,h2:2"},
	} {
		r := redisFlagsOf(t, tc.args...)
		if got := r.where(); got != tc.want {
			t.Errorf("%q: where() = %q, want %q", tc.args, got, tc.want)
		}
	}

	r := redisFlagsOf(t, "-redis", "redis://ops:s3cret@127.0.0.1:6379/2", "-timeout", "300ms")
	err := r.failed(fmt.Errorf("read: %w", context.DeadlineExceeded))
	want := "redis redis://ops:xxxxx@127.0.0.1:6379/2: read: context deadline exceeded: no answer within -timeout 300ms"
	if err.Error() != want {
		t.Errorf("failed: got %q, want %q", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("failed(%v) no longer wraps its cause", err)
	}
}
