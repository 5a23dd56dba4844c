package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// The forms of -redis against real servers: an ACL user on a database other than 0 through a
// URL, Sentinels, a Cluster URL, TLS, and a peer that never answers.

// The passwords of the tests, which no output may show.
const (
	opsPassword      = "s3cret-ops"
	sentinelPassword = "s3cret-sentinel"
)

// noSecret fails the test when r shows a password of the tests.
func (r result) noSecret(t *testing.T) {
	t.Helper()
	for _, pw := range []string{opsPassword, sentinelPassword} {
		if strings.Contains(r.stdout+r.stderr, pw) {
			t.Errorf("the output shows the password %q:\n%s%s", pw, r.stdout, r.stderr)
		}
	}
}

// addOps gives the server of client the ACL user ops, password opsPassword, allowed
// everything.
func addOps(t *testing.T, client redis.UniversalClient) {
	t.Helper()
	if err := client.Do(t.Context(), "ACL", "SETUSER", "ops", "on", ">"+opsPassword, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
}

// opsClient returns a client of the ACL user ops on database db of addr.
func opsClient(t *testing.T, addr string, db int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Username: "ops", Password: opsPassword, DB: db})
	t.Cleanup(func() { c.Close() })
	return c
}

// exists reports whether key exists on the server of client.
func exists(t *testing.T, client redis.Cmdable, key string) bool {
	t.Helper()
	n, err := client.Exists(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// Every command reaches an ACL user on database 2 through a URL: what it writes is on
// database 2, not 0, and no output shows the password.
func TestURLUserAndDatabase(t *testing.T) {
	addr := redistest.Private(t) // a server of its own: its default user is turned off
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	addOps(t, admin)
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "default", "off").Err(); err != nil {
		t.Fatal(err)
	}
	url := "redis://ops:" + opsPassword + "@" + addr + "/2"
	db2, db0 := opsClient(t, addr, 2), opsClient(t, addr, 0)
	file := write(t, "limits.yaml", stateYAML)[0]
	run := func(args ...string) result {
		t.Helper()
		r := cli(t, args...)
		r.noSecret(t)
		return r
	}

	run("push", "-wait", "0", "-redis", url, file).want(t, 0, "pushed limits.yaml to rl:rules: version s1", "")
	if !exists(t, db2, "rl:rules") || exists(t, db0, "rl:rules") {
		t.Fatalf("after push, rl:rules exists on db 2: %v, on db 0: %v; want only on db 2", exists(t, db2, "rl:rules"), exists(t, db0, "rl:rules"))
	}
	run("version", "-redis", url).want(t, 0, "version    s1\n", "")
	row(t, run("inspect", "-redis", url, "-rule", "api", "-api-key", "abc").stdout, "per-hour", "5 per 1h", "5", "allowed")
	run("reset", "-redis", url, "-rule", "api", "-api-key", "abc").want(t, 0, "RESET POLICY", "")
	middlewareRoundTrip(t, db2, "-redis", url)
	if keys, err := db0.Keys(t.Context(), "*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("db 0 holds %q (%v); want nothing", keys, err)
	}

	// The password from the environment, and the flags that fill what the URL leaves out.
	t.Setenv(passwordEnv, opsPassword)
	run("version", "-redis", "redis://ops@"+addr+"/2").want(t, 0, "version    s1\n", "")
	run("version", "-redis", "redis://"+addr, "-redis-user", "ops", "-db", "2").want(t, 0, "version    s1\n", "")
	run("version", "-redis", addr, "-redis-user", "ops", "-db", "2").want(t, 0, "version    s1\n", "")
	t.Setenv(passwordEnv, "")

	// Refusals name the Redis and show no password.
	run("version", "-redis", "redis://ops:wrong-one@"+addr+"/2").want(t, 1, "", "redis redis://ops:xxxxx@"+addr+"/2: ")
	run("version", "-redis", "redis://ops:"+opsPassword+"@"+addr+"/3").want(t, 1, "", `no rules are stored at Redis key "rl:rules"`)
	run("version", "-redis", url, "-db", "3").want(t, 2, "", "-db 3 and the URL's database 2 differ: give one")
	run("version", "-redis", url, "-password", "other").want(t, 2, "", "-password and the URL's password differ: give one")
}

// version, inspect and reset reach the master a Sentinel watches, as the master's ACL user on
// database 2, through a Sentinel that has a password of its own: by flags and by a URL.
func TestSentinel(t *testing.T) {
	g := redistest.Sentinel(t)
	sentinels := strings.Join(g.SentinelAddrs, ",")
	master := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName, SentinelAddrs: g.SentinelAddrs})
	defer master.Close()
	addOps(t, master)
	sentinel := redis.NewClient(&redis.Options{Addr: g.SentinelAddrs[0]})
	defer sentinel.Close()
	if err := sentinel.Do(t.Context(), "ACL", "SETUSER", "default", ">"+sentinelPassword).Err(); err != nil {
		t.Fatal(err)
	}
	key := redistest.Prefix(t) + "rules"
	file := write(t, "limits.yaml", stateYAML)[0]
	flags := []string{"-redis", sentinels, "-sentinel-master", g.MasterName, "-sentinel-password", sentinelPassword,
		"-redis-user", "ops", "-password", opsPassword, "-db", "2", "-key", key}
	run := func(args ...string) result {
		t.Helper()
		r := cli(t, args...)
		r.noSecret(t)
		return r
	}

	run(append([]string{"push", "-wait", "0", file}, flags...)...).want(t, 0, "version s1", "")
	db := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName, SentinelAddrs: g.SentinelAddrs,
		SentinelPassword: sentinelPassword, Username: "ops", Password: opsPassword, DB: 2})
	defer db.Close()
	if !exists(t, db, key) || exists(t, master, key) {
		t.Fatalf("after push, %s exists on db 2: %v, on db 0: %v; want only on db 2", key, exists(t, db, key), exists(t, master, key))
	}
	run(append([]string{"version"}, flags...)...).want(t, 0, "version    s1\n", "")
	url := "redis://:" + sentinelPassword + "@" + g.SentinelAddrs[0] + "/2?master_name=" + g.MasterName + "&username=ops&password=" + opsPassword
	run("version", "-redis", url, "-key", key).want(t, 0, "version    s1\n", "")
	middlewareRoundTrip(t, db, flags...)

	// The Sentinel refuses a client without its password; a master it does not know is named.
	without := run("version", "-redis", sentinels, "-sentinel-master", g.MasterName, "-key", key)
	without.want(t, 1, "", "redis master "+g.MasterName+" of the Sentinels "+sentinels+": ")
	without.want(t, 1, "", "NOAUTH")
	run("version", "-redis", sentinels, "-sentinel-master", "nope", "-sentinel-password", sentinelPassword).want(t, 1, "", "redis master nope of the Sentinels "+sentinels+": ")
}

// A Cluster URL, with the other seed nodes as addr= parameters, reaches the Cluster; so does
// a URL of one seed node with -cluster.
func TestClusterURL(t *testing.T) {
	c := redistest.Cluster(t)
	seeds := c.Options().Addrs
	url := "redis://" + seeds[0] + "?addr=" + strings.Join(seeds[1:], "&addr=")
	key := redistest.Prefix(t) + "rules"
	file := write(t, "limits.yaml", stateYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", url, "-key", key, file).want(t, 0, "version s1", "")
	if !exists(t, c, key) {
		t.Fatalf("after push through %s, %s does not exist on the Cluster", url, key)
	}
	for _, seed := range seeds {
		cli(t, "version", "-redis", "redis://"+seed, "-cluster", "-key", key).want(t, 0, "version    s1\n", "")
	}
	middlewareRoundTrip(t, c, "-redis", url)
}

// A TLS URL to a server that does not speak TLS fails, naming the server; a server that does
// is reached with its CA (-tls-ca), or without verification (-tls-insecure), and not without
// either.
func TestTLS(t *testing.T) {
	plain := redistest.Addr(t)
	// The server reads the TLS handshake as a command that never ends, and the client waits
	// for the server's half of the handshake until -timeout.
	cli(t, "version", "-redis", "rediss://"+plain, "-timeout", "500ms").want(t, 1, "", "ratelimit version: redis rediss://"+plain+": ")
	cli(t, "version", "-redis", plain, "-tls", "-timeout", "500ms").want(t, 1, "", "ratelimit version: redis "+plain+": ")

	files := newTLSFiles(t)
	port := freeLoopbackPort(t)
	redistest.Private(t, "--tls-port", port, "--tls-cert-file", files.cert, "--tls-key-file", files.key,
		"--tls-ca-cert-file", files.ca, "--tls-auth-clients", "no")
	addr := "127.0.0.1:" + port
	doc := write(t, "limits.yaml", goodYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", "rediss://"+addr, "-tls-ca", files.ca, doc).want(t, 0, "version v1", "")
	for _, args := range [][]string{
		{"-redis", "rediss://localhost:" + port, "-tls-ca", files.ca},
		{"-redis", addr, "-tls", "-tls-ca", files.ca},
		{"-redis", addr, "-tls-ca", files.ca}, // -tls-ca is TLS
		{"-redis", "rediss://" + addr, "-tls-insecure"},
		{"-redis", "rediss://" + addr + "?skip_verify=true"},
	} {
		cli(t, append([]string{"version"}, args...)...).want(t, 0, "version    v1\n", "")
	}
	cli(t, "version", "-redis", "rediss://"+addr).want(t, 1, "", "redis rediss://"+addr+": ")
	cli(t, "version", "-redis", "rediss://"+addr).want(t, 1, "", "certificate signed by unknown authority")
	cli(t, "version", "-redis", addr).want(t, 1, "", "redis "+addr+": ")
	cli(t, "version", "-redis", addr, "-tls-ca", doc).want(t, 2, "", "-tls-ca "+doc+": no certificate in it")
}

// A peer that accepts connections and never answers fails every command at -timeout, with an
// error that names it and the timeout; whether it is one server, a Cluster's seed or a
// Sentinel.
func TestBlackHole(t *testing.T) {
	p := faultproxy.Start(t, redistest.Addr(t))
	p.BlackHole()
	file := write(t, "limits.yaml", goodYAML)[0]
	for _, form := range [][]string{
		{"-redis", p.Addr()},
		{"-redis", "redis://" + p.Addr() + "/2"},
		{"-redis", p.Addr(), "-cluster"},
		{"-redis", p.Addr(), "-sentinel-master", "primary"},
	} {
		where := redisFlagsOf(t, form...).where()
		for _, args := range [][]string{
			{"version"},
			{"push", "-wait", "0", file},
			{"inspect", "-rule", "api", "hdr:x-api-key:abc"},
			{"inspect", "-policy", "limit=5,window=1m", "-ip", "192.0.2.1"},
			{"reset", "-file", file, "-rule", "api", "-api-key", "abc"},
		} {
			r := cli(t, slices.Concat(args, form, []string{"-timeout", "300ms"})...)
			r.want(t, 1, "", "ratelimit "+args[0]+": redis "+where+": ")
			r.want(t, 1, "", "no answer within -timeout 300ms")
		}
	}
}
