// Package redisscripts holds the Lua that runs ratelimit's algorithms inside Redis.
//
// The script is built from one shared preamble, one file per algorithm and the entry point
// check.lua, whose header documents KEYS, ARGV and the reply. Each algorithm file is a line-by-
// line transcription of the Go transition in package algorithms.
package redisscripts

import (
	"embed"
	"strings"
)

//go:embed *.lua
var files embed.FS

// order is the order of the script's parts: the preamble first, the entry point last.
var checkParts = []string{
	"preamble.lua",
	"fixed_window.lua",
	"sliding_window_log.lua",
	"sliding_window_counter.lua",
	"token_bucket.lua",
	"leaky_bucket.lua",
	"gcra.lua",
	"check.lua",
}

// Check returns the source of the script that checks a policy list (see check.lua).
func Check() string { return join(checkParts...) }

// Reset returns the source of the script that forgets an identity (see reset.lua).
func Reset() string { return join("reset.lua") }

func join(names ...string) string {
	var b strings.Builder
	for _, name := range names {
		src, err := files.ReadFile(name)
		if err != nil {
			panic("redisscripts: missing embedded file " + name) // a build defect, caught by any test
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	return b.String()
}
