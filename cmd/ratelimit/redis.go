package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/observe"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// The Redis flags of every command that reaches Redis: where it is (-redis: a URL, which
// go-redis parses, or addresses; -cluster; -sentinel-master), who the command is there
// (-redis-user, -password, -db, and the Sentinels' -sentinel-user, -sentinel-password), TLS
// (-tls, -tls-ca, -tls-insecure), the key of the rules (-key) and how long it may take
// (-timeout). A flag fills what a URL leaves out; a flag that says other than the URL is a
// usage error. No message shows a password.

// go-redis logs what it retries (a failed dial, once a second) to stderr; the command reports
// the error its call ends with, once.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// redisSynopsis is how the usage of a command shows the Redis flags.
const redisSynopsis = "-redis URL|ADDR[,ADDR...] [-key " + rules.DefaultRedisKey + "]"

// The environment variables that hold the passwords when neither a flag nor the URL gives one.
const (
	passwordEnv         = "REDIS_PASSWORD"
	sentinelPasswordEnv = "REDIS_SENTINEL_PASSWORD"
)

// hidden stands for a password where a message shows what holds one: the user information of
// the -redis URL and its password= parameter. No password is looked for in a message's text:
// a password that is a word of the message ("WRONG" in WRONGPASS, "tcp" in dial tcp) would
// garble it, and tell the reader the password.
const hidden = "xxxxx"

// urlOptions are the query parameters a -redis URL may have: go-redis reads them (addr for
// more seed nodes or Sentinels, db, skip_verify, and a Sentinel URL's master_name and the
// master's username and password). The others set timeouts and retries, which -timeout
// governs, or tune a pool the command barely uses.
var urlOptions = []string{"addr", "db", "master_name", "password", "skip_verify", "username"}

// redisFlags are the flags that reach Redis and address the rules in it.
type redisFlags struct {
	addrs                          string
	cluster                        bool
	master                         string // -sentinel-master: -redis names Sentinels
	user, password                 string
	sentinelUser, sentinelPassword string
	db                             dbFlag
	tls, tlsInsecure               bool
	tlsCA                          string
	key                            string
	timeout                        time.Duration

	opts *redis.UniversalOptions // what check made of the flags
}

// addRedisFlags defines the Redis flags on fs.
func addRedisFlags(fs *flag.FlagSet) *redisFlags {
	r := &redisFlags{}
	fs.StringVar(&r.addrs, "redis", "", "Redis (required): a `URL` redis://[user:password@]host:port[/db] or rediss:// (TLS), with addr= parameters for more seed nodes of a Cluster, or master_name= for Sentinels; or host:port, several comma-separated for the seed nodes of a Cluster or the Sentinels of -sentinel-master")
	fs.BoolVar(&r.cluster, "cluster", false, "-redis is a Redis Cluster, even when it names one node")
	fs.StringVar(&r.master, "sentinel-master", "", "the `name` of the master that the Sentinels named by -redis watch (a URL's master_name=)")
	fs.StringVar(&r.user, "redis-user", "", "the Redis ACL `user` (default: the URL's, else the default user; with Sentinels, the master's)")
	fs.StringVar(&r.password, "password", "", "the Redis `password` (default: the URL's, else the environment variable "+passwordEnv+"; with Sentinels, the master's)")
	fs.Var(&r.db, "db", "the Redis database `number` (default: the URL's, else 0)")
	fs.StringVar(&r.sentinelUser, "sentinel-user", "", "the Sentinels' ACL `user` (default: a Sentinel URL's user)")
	fs.StringVar(&r.sentinelPassword, "sentinel-password", "", "the Sentinels' `password` (default: a Sentinel URL's password, else the environment variable "+sentinelPasswordEnv+")")
	fs.BoolVar(&r.tls, "tls", false, "connect with TLS (a rediss:// URL does; so do -tls-ca and -tls-insecure)")
	fs.StringVar(&r.tlsCA, "tls-ca", "", "verify the server's certificate with the CA certificates of this PEM `file`, not the system's")
	fs.BoolVar(&r.tlsInsecure, "tls-insecure", false, "do not verify the server's certificate (a URL's skip_verify=true)")
	fs.StringVar(&r.key, "key", rules.DefaultRedisKey, "the Redis `key` of the rules, and the channel announcing them")
	durationVar(fs, &r.timeout, "timeout", 10*time.Second, "how long the command waits for Redis in all, a `duration`: every dial, read and write within it; nothing is retried")
	return r
}

// check reports flags that cannot work, as a usage error.
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
	var err error
	r.opts, err = r.options()
	return err
}

// options returns the go-redis options the flags make: what -redis says, the flags over it,
// the environment's passwords where neither gives one, and -timeout for every call.
func (r *redisFlags) options() (*redis.UniversalOptions, error) {
	o, u, err := r.target()
	if err == nil {
		err = r.credentials(o, u)
	}
	if err == nil {
		err = r.tlsConfig(o, u)
	}
	if err != nil {
		return nil, err
	}
	// -timeout governs every call: a dial, a read, a write and a wait for a connection each
	// stop at it, and so does the command's context (client). Nothing is retried: a command
	// or a dial that failed is reported as it failed.
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = r.timeout, r.timeout, r.timeout, r.timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	o.DialerRetries = 1
	return o, nil
}

// target returns the options of -redis (and -cluster, -sentinel-master): the addresses, and
// all a URL says, which go-redis parses; u is the URL, nil for addresses.
func (r *redisFlags) target() (o *redis.UniversalOptions, u *url.URL, err error) {
	if !strings.Contains(r.addrs, "://") {
		o = &redis.UniversalOptions{IsClusterMode: r.cluster, MasterName: r.master}
		for a := range strings.SplitSeq(r.addrs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.Addrs = append(o.Addrs, a)
			}
			if strings.Contains(a, "@") {
				return nil, nil, fmt.Errorf("-redis %s: a user and password go in a URL: redis://user:password@host:port", redact(r.addrs))
			}
		}
		// Several addresses are a Cluster's seed nodes (go-redis's NewUniversalClient makes a
		// Cluster client of them), unless they are Sentinels.
		o.IsClusterMode = o.IsClusterMode || r.master == "" && len(o.Addrs) > 1
		return o, nil, nil
	}
	if u, err = url.Parse(r.addrs); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the URL, password and all
		}
		var escape url.EscapeError
		if errors.As(err, &escape) {
			// Its text quotes the escape, which may be in the password.
			err = errors.New("a '%' not followed by two hexadecimal digits (write %25 for a '%', as in a password)")
		}
		return nil, nil, fmt.Errorf("-redis is not a valid URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, nil, fmt.Errorf("-redis %s: a URL is redis:// or rediss://", redactURL(u))
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(urlOptions, k) {
			return nil, nil, fmt.Errorf("-redis %s: the command does not take the URL's option %q: -timeout sets every timeout, and nothing is retried (it takes %s)",
				redactURL(u), k, strings.Join(urlOptions, ", "))
		}
	}
	master := q.Get("master_name")
	switch {
	case master != "" && r.master != "" && master != r.master:
		return nil, nil, fmt.Errorf("-sentinel-master %q and the URL's master_name %q differ: give one", r.master, master)
	case master != "" && r.cluster:
		return nil, nil, errors.New("-cluster and the URL's master_name: a Sentinel watches a master, not a Cluster; give one")
	case master != "" || r.master != "":
		f, err := redis.ParseFailoverURL(r.addrs)
		if err != nil {
			return nil, nil, fmt.Errorf("-redis %s: %w", redactURL(u), err)
		}
		return &redis.UniversalOptions{
			Addrs: f.SentinelAddrs, MasterName: cmp.Or(master, r.master),
			SentinelUsername: f.SentinelUsername, SentinelPassword: f.SentinelPassword,
			Username: f.Username, Password: f.Password, DB: f.DB, TLSConfig: f.TLSConfig,
		}, u, nil
	case r.cluster || q.Has("addr"):
		if db := strings.Trim(u.Path, "/"); db != "" && db != "0" || q.Has("db") {
			return nil, nil, fmt.Errorf("-redis %s: a Redis Cluster has only database 0: leave the database out of the URL", redactURL(u))
		}
		c, err := redis.ParseClusterURL(r.addrs)
		if err != nil {
			return nil, nil, fmt.Errorf("-redis %s: %w", redactURL(u), err)
		}
		return &redis.UniversalOptions{Addrs: c.Addrs, IsClusterMode: true, Username: c.Username, Password: c.Password, TLSConfig: c.TLSConfig}, u, nil
	}
	s, err := redis.ParseURL(r.addrs)
	if err != nil {
		return nil, nil, fmt.Errorf("-redis %s: %w", redactURL(u), err)
	}
	return &redis.UniversalOptions{Addrs: []string{s.Addr}, Username: s.Username, Password: s.Password, DB: s.DB, TLSConfig: s.TLSConfig}, u, nil
}

// credentials sets the users, passwords and database of the flags and the environment in o,
// where the URL u (nil for addresses) left them out.
func (r *redisFlags) credentials(o *redis.UniversalOptions, u *url.URL) error {
	sentinels := o.MasterName != ""
	if !sentinels && (r.sentinelUser != "" || r.sentinelPassword != "") {
		return errors.New("-sentinel-user or -sentinel-password without -sentinel-master: they are the Sentinels' own")
	}
	for _, f := range []struct {
		field       *string
		flag, value string
		what        string
		secret      bool
	}{
		{&o.Username, "-redis-user", r.user, "user", false},
		{&o.Password, "-password", r.password, "password", true},
		{&o.SentinelUsername, "-sentinel-user", r.sentinelUser, "Sentinel user", false},
		{&o.SentinelPassword, "-sentinel-password", r.sentinelPassword, "Sentinel password", true},
	} {
		switch {
		case f.value == "" || f.value == *f.field:
		case *f.field == "":
			*f.field = f.value
		case f.secret:
			return fmt.Errorf("%s and the URL's %s differ: give one", f.flag, f.what)
		default:
			return fmt.Errorf("%s %q and the URL's %s %q differ: give one", f.flag, f.value, f.what, *f.field)
		}
	}
	if o.Password == "" {
		o.Password = os.Getenv(passwordEnv)
	}
	if sentinels && o.SentinelPassword == "" {
		o.SentinelPassword = os.Getenv(sentinelPasswordEnv)
	}
	if r.db.set {
		if u != nil && (strings.Trim(u.Path, "/") != "" || u.Query().Has("db")) && o.DB != r.db.n {
			return fmt.Errorf("-db %d and the URL's database %d differ: give one", r.db.n, o.DB)
		}
		o.DB = r.db.n
	}
	if o.IsClusterMode && o.DB != 0 {
		return fmt.Errorf("-redis %s: a Redis Cluster has only database 0: leave out -db", r.where())
	}
	return nil
}

// tlsConfig sets TLS in o as -tls, -tls-ca and -tls-insecure ask, over what the URL u says:
// a redis:// URL and a TLS flag contradict each other.
func (r *redisFlags) tlsConfig(o *redis.UniversalOptions, u *url.URL) error {
	var flag string
	switch {
	case r.tls:
		flag = "-tls"
	case r.tlsCA != "":
		flag = "-tls-ca"
	case r.tlsInsecure:
		flag = "-tls-insecure"
	default:
		return nil
	}
	if u != nil && u.Scheme == "redis" {
		return fmt.Errorf("%s and a redis:// URL: write rediss:// for TLS", flag)
	}
	if o.TLSConfig == nil {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12} // its ServerName is each address's host
	}
	o.TLSConfig.InsecureSkipVerify = o.TLSConfig.InsecureSkipVerify || r.tlsInsecure
	if r.tlsCA != "" {
		pem, err := os.ReadFile(r.tlsCA)
		if err != nil {
			return fmt.Errorf("-tls-ca: %w", err)
		}
		o.TLSConfig.RootCAs = x509.NewCertPool()
		if !o.TLSConfig.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-tls-ca %s: no certificate in it", r.tlsCA)
		}
	}
	return nil
}

// dbFlag is -db: a database number, if one is given.
type dbFlag struct {
	n   int
	set bool
}

func (d *dbFlag) String() string {
	if d == nil || !d.set {
		return ""
	}
	return strconv.Itoa(d.n)
}

func (d *dbFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a database number (0, 1, ...)", s)
	}
	d.n, d.set = n, true
	return nil
}

// client returns a client of the server, Cluster or Sentinel-watched master the flags address,
// and a context that ends at -timeout. Close the client and cancel the context when done.
// check must have passed.
func (r *redisFlags) client() (redis.UniversalClient, context.Context, context.CancelFunc) {
	if r.opts == nil {
		panic("ratelimit: redisFlags.client before check") // a command's mistake, not the user's
	}
	client := redis.NewUniversalClient(r.opts)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	return client, ctx, cancel
}

// where names the Redis the flags address, without a password: in every error.
func (r *redisFlags) where() string {
	s := redact(r.addrs)
	if r.master != "" {
		s = "master " + r.master + " of the Sentinels " + s
	}
	if r.db.n > 0 {
		s += fmt.Sprintf(" (db %d)", r.db.n)
	}
	return s
}

// failed returns err of a call to Redis, naming the Redis, and the timeout when it ran out.
func (r *redisFlags) failed(err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || observe.ErrorKind(err) == "timeout" ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("redis %s: %w: no answer within -timeout %v", r.where(), err, r.timeout)
	}
	if advice := r.clusterNode(err); advice != "" {
		return fmt.Errorf("redis %s: %w: %s", r.where(), err, advice)
	}
	return fmt.Errorf("redis %s: %w", r.where(), err)
}

// clusterNode says what to give when the one server the flags address answered err as a node
// of a Redis Cluster does (MOVED or ASK for a key of another node's slot, its refusal of
// SELECT for -db), and returns "" for any other error.
func (r *redisFlags) clusterNode(err error) string {
	if r.opts == nil || r.opts.IsClusterMode || r.opts.MasterName != "" || len(r.opts.Addrs) != 1 {
		return ""
	}
	node := r.opts.Addrs[0]
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	switch {
	case moved || ask:
		return node + " is a node of a Redis Cluster, which keeps this key on another node: give -cluster (or the Cluster's seed nodes, comma-separated)"
	case strings.Contains(err.Error(), "SELECT is not allowed in cluster mode"):
		return node + " is a node of a Redis Cluster, which has only database 0: give -cluster, without -db"
	}
	return ""
}

// redact returns -redis as it may be shown: a URL without its passwords, addresses without
// what is between a user and the '@' (a password, given where a URL was meant).
func redact(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		addrs := strings.Split(s, ",")
		for i, a := range addrs {
			if at := strings.LastIndex(a, "@"); at >= 0 {
				if colon := strings.Index(a[:at], ":"); colon >= 0 {
					addrs[i] = a[:colon+1] + hidden + a[at:]
				}
			}
		}
		return strings.Join(addrs, ",")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return redactURL(u)
}

// redactURL returns u without its passwords: its user's, and a Sentinel URL's password=.
func redactURL(u *url.URL) string {
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), hidden)
	}
	if q := c.Query(); q.Has("password") {
		q.Set("password", hidden)
		c.RawQuery = q.Encode()
	}
	return c.String()
}
