// Package redisscripts holds the Lua that runs ratelimit's algorithms inside Redis.
//
// The code is one shared preamble, one file per algorithm (every .lua file here but the
// preamble and the entry points, in name order), holds.lua (the holds of Limiter.Reserve,
// check's modes "6" and "7") and check.lua, which defines the function check(KEYS, ARGV)
// whose header documents KEYS, ARGV and the reply. Each algorithm file is a
// line-by-line transcription of its Go model in package algorithms and registers itself under
// its code.
//
// The same code ships in two forms. [Function] is a Redis Functions library (Redis 7 and
// later): the server loads it once and keeps it, so a call runs the check alone. [Check] is a
// script for EVALSHA, for older servers: each call defines the library again before it runs
// the check.
package redisscripts

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"io/fs"
	"strings"
	"sync"
)

//go:embed *.lua
var files embed.FS

// entryPoints are the files that are not algorithms.
var entryPoints = map[string]bool{"preamble.lua": true, "holds.lua": true, "check.lua": true, "reset.lua": true}

// Check returns the source of the script that checks a policy list (see check.lua).
func Check() string {
	return "if redis.replicate_commands then redis.replicate_commands() end\n" +
		code() + "return check(KEYS, ARGV)\n"
}

// Function returns the source of the Redis Functions library that holds the check, and the
// name of the function it registers (called by FCALL with check.lua's KEYS and ARGV). Both
// names carry a digest of the code: servers shared by instances of two releases (a rolling
// deploy) hold both libraries side by side, each release calling its own.
func Function() (src, name string) {
	fn := functionOnce()
	return fn.src, fn.name
}

// Merged returns the name of the library's second function, check_many in check.lua, which
// runs several calls of the check merged into one (see package internal/rediscall).
func Merged() string { return functionOnce().name + "_many" }

var functionOnce = sync.OnceValue(func() struct{ src, name string } {
	c := code()
	sum := sha1.Sum([]byte(c))
	version := hex.EncodeToString(sum[:6])
	name := "ratelimit_check_" + version
	src := "#!lua name=ratelimit_" + version + "\n" + c +
		"redis.register_function{function_name = '" + name + "', " +
		"callback = function(keys, args) return check(keys, args) end}\n" +
		"redis.register_function{function_name = '" + name + "_many', " +
		"callback = function(keys, args) return check_many(keys, args) end}\n"
	return struct{ src, name string }{src, name}
})

// code returns the library, the holds and check.lua: the definitions, without a call.
func code() string {
	return Library() + read("holds.lua") + read("check.lua")
}

// Library returns the preamble and every algorithm: the tables `algorithms` and `refunds`
// (code -> function), without an entry point.
func Library() string {
	names, err := fs.Glob(files, "*.lua")
	if err != nil {
		panic(err) // the pattern is constant
	}
	var b strings.Builder
	b.WriteString(read("preamble.lua"))
	for _, name := range names { // in name order
		if !entryPoints[name] {
			b.WriteString(read(name))
		}
	}
	return b.String()
}

// Reset returns the source of the script that forgets an identity (see reset.lua).
func Reset() string { return read("reset.lua") }

func read(name string) string {
	src, err := files.ReadFile(name)
	if err != nil {
		panic("redisscripts: missing embedded file " + name) // a build defect, caught by any test
	}
	return string(src) + "\n"
}
