// Package testhook hands the test packages of this repository (internal/httpspec, and through
// it the framework adapters' tests) the options of package ratelimit that exist only for
// tests. Package ratelimit fills it in when it is initialised; nothing outside this
// repository can import it.
package testhook

import (
	"context"
	"time"
)

// WithWait returns a ratelimit.Option that replaces a guard's shaping wait with wait, so a
// test drives shaping without sleeping. The result is an any only because this package
// cannot import ratelimit; it holds a ratelimit.Option.
var WithWait func(wait func(ctx context.Context, d time.Duration) error) any
