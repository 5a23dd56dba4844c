module github.com/a7d3e0dd/ratelimit/tools/peerbench

go 1.24

// The Go rate limiters issue 23 measured the Redis store against, for a table beside it. The
// core v0.1.0 is this repository through go.work until it is released.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/redis/go-redis/v9 v9.22.0
	github.com/ulule/limiter/v3 v3.11.2
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
