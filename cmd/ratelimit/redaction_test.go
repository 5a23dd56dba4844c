package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// Passwords are hidden where they can appear, the user info of the -redis URL, and nowhere
// else: never by searching an error's text for them. A password that is a common word, or a
// part of what Redis or go-redis says, must leave the message as it is (the command printed
// "xxxxxPASS invalid username-password pair" for the wrong password WRONG, telling the reader
// the password; "rl:xxxxx" for the key of -password rules; "dial xxxxx" for an unused
// REDIS_PASSWORD=tcp).

// wordPasswords are passwords that are words of the messages the command prints.
var wordPasswords = []string{"WRONG", "WRONGPASS", "tcp", "dial", "rules", "rl", "redis", "ERR", "invalid", "user",
	"pair", "key", "version", "no", "127.0.0.1", "connection", "refused", "xxxxx", "s"}

// controlPassword is a password that no message holds: what the command prints with it is
// what it must print with any other.
const controlPassword = "Zq7-control-Vb9"

// TestRedactionShowsWhatRedisSaid: against a server with a password, a wrong password or the
// right one, given in the URL, by -password or in REDIS_PASSWORD, and a REDIS_PASSWORD of a
// Redis that refuses the connection: what the command prints does not depend on the password.
// It is what it prints with a password no message holds, word for word, so it shows no
// password and every word of Redis's own (WRONGPASS, dial tcp, rl:rules) stays.
func TestRedactionShowsWhatRedisSaid(t *testing.T) {
	addr := redistest.Private(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	addOps(t, admin) // the ops user, whose password does not change, sets the default user's
	ops := opsClient(t, addr, 0)
	dead := "127.0.0.1:" + freeLoopbackPort(t)
	requirePass := func(pw string) {
		t.Helper()
		if err := ops.ConfigSet(t.Context(), "requirepass", pw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// out runs the command with the password pw given as form says, and returns what it
	// printed and its exit code.
	out := func(form, pw, target string) (string, int) {
		t.Helper()
		t.Setenv(passwordEnv, "")
		var r result
		switch form {
		case "URL":
			r = cli(t, "version", "-redis", "redis://default:"+pw+"@"+target+"/0", "-timeout", "2s")
		case "-password":
			r = cli(t, "version", "-redis", target, "-password", pw, "-timeout", "2s")
		case passwordEnv:
			t.Setenv(passwordEnv, pw)
			r = cli(t, "version", "-redis", target, "-timeout", "2s")
		}
		return r.stdout + r.stderr, r.code
	}
	forms := []string{"URL", "-password", passwordEnv}

	requirePass("the-right-one")
	for _, form := range forms {
		want, wantCode := out(form, controlPassword, addr)
		if wantCode != 1 || !strings.Contains(want, "WRONGPASS invalid username-password pair") || !strings.Contains(want, `"rl:rules"`) {
			t.Fatalf("%s %s, a wrong password: exit %d, %q; want exit 1, WRONGPASS, the key rl:rules", form, controlPassword, wantCode, want)
		}
		if form == "URL" && !strings.Contains(want, "redis://default:xxxxx@"+addr+"/0") {
			t.Errorf("%s: the URL's password is not hidden: %s", form, want)
		}
		wantDead, _ := out(form, controlPassword, dead)
		if !strings.Contains(wantDead, "dial tcp "+dead+": connect: connection refused") {
			t.Fatalf("%s %s, a Redis that refuses connections: %q; want dial tcp ... refused", form, controlPassword, wantDead)
		}
		for _, pw := range wordPasswords {
			if got, code := out(form, pw, addr); got != want || code != wantCode {
				t.Errorf("%s %q, a wrong password: exit %d,\n%s\nwant exit %d, what a password no message holds makes:\n%s", form, pw, code, got, wantCode, want)
			}
			if got, _ := out(form, pw, dead); got != wantDead {
				t.Errorf("%s %q, a Redis that refuses connections:\n%s\nwant what a password no message holds makes:\n%s", form, pw, got, wantDead)
			}
		}
	}

	// The right password: no rules are stored yet, and the message names the key as it is.
	for _, form := range forms {
		requirePass(controlPassword)
		want, wantCode := out(form, controlPassword, addr)
		if wantCode != 1 || !strings.Contains(want, `no rules are stored at Redis key "rl:rules"`) {
			t.Fatalf("%s, the right password: exit %d, %q; want exit 1, no rules at rl:rules", form, wantCode, want)
		}
		for _, pw := range wordPasswords {
			requirePass(pw)
			if got, code := out(form, pw, addr); got != want || code != wantCode {
				t.Errorf("%s %q, the right password: exit %d,\n%s\nwant exit %d, what a password no message holds makes:\n%s", form, pw, code, got, wantCode, want)
			}
		}
	}
}

// TestRedactionOfTheURL: the usage errors of a -redis that holds a password show none of it:
// a URL whose password has a '%' that escapes nothing (url.Parse's error quotes the escape),
// and a user and password before an address without redis://.
func TestRedactionOfTheURL(t *testing.T) {
	for _, tc := range []struct {
		redis, secret, want string
	}{
		{"redis://ops:ab%zzcd@127.0.0.1:6379", "%zz", `-redis is not a valid URL: a '%' not followed by two hexadecimal digits (write %25 for a '%', as in a password)`},
		{"ops:hunter2@127.0.0.1:6379", "hunter2", "-redis ops:xxxxx@127.0.0.1:6379: a user and password go in a URL: redis://user:password@host:port"},
		{"127.0.0.1:1,:hunter2@127.0.0.1:2", "hunter2", "-redis 127.0.0.1:1,:xxxxx@127.0.0.1:2: a user and password go in a URL: redis://user:password@host:port"},
	} {
		r := cli(t, "version", "-redis", tc.redis)
		r.want(t, 2, "", tc.want)
		if strings.Contains(r.stderr, tc.secret) {
			t.Errorf("-redis %s: the error shows %q: %s", tc.redis, tc.secret, r.stderr)
		}
	}
}
