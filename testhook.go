package ratelimit

import (
	"context"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testhook"
)

// The test-only options, for this repository's test packages outside package ratelimit.
func init() {
	testhook.WithWait = func(wait func(context.Context, time.Duration) error) any { return withWait(wait) }
}
