// Package redisscripts holds the Lua that runs ratelimit's algorithms inside Redis.
//
// The script is one shared preamble, one file per algorithm (every .lua file here but the
// preamble and the entry points, in name order) and the entry point check.lua, whose header
// documents KEYS, ARGV and the reply. Each algorithm file is a line-by-line transcription of
// its Go model in package algorithms and registers itself under its code.
package redisscripts

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed *.lua
var files embed.FS

// entryPoints are the files that are not algorithms.
var entryPoints = map[string]bool{"preamble.lua": true, "check.lua": true, "reset.lua": true}

// Check returns the source of the script that checks a policy list (see check.lua).
func Check() string {
	return Library() + read("check.lua")
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
