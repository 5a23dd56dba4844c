package main

import (
	"errors"
	"flag"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// durationFlag is a duration flag read as ratelimit.ParseDuration reads one: a Go duration
// that may start with whole days (1d, 7d12h), as the rules files' windows are written, so
// that the command reads every duration one way.
type durationFlag struct{ d *time.Duration }

var _ flag.Value = durationFlag{}

// durationVar defines a duration flag of fs, as fs.DurationVar does.
func durationVar(fs *flag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fs.Var(durationFlag{d}, name, usage)
}

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s" // the zero value the flag package makes to tell a default from none
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := ratelimit.ParseDuration(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "ratelimit: "))
	}
	*f.d = d
	return nil
}
