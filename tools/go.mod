module github.com/a7d3e0dd/ratelimit/tools

go 1.24.0

// The developer tools: the performance table (benchtable), the Lua profiler (luaprof) and the
// release tool (release). A module of their own, so that the core holds no command and a user
// compiles none of them. They stand on the core's test harnesses (internal/testing/), which
// Go lets any package under github.com/a7d3e0dd/ratelimit import. The core v0.1.0 is this
// repository through go.work until it is released. The peer benchmark (peerbench) and the
// rueidis benchmark (rueidisbench) are modules of their own below, for their dependencies.
require github.com/a7d3e0dd/ratelimit v0.1.0

require github.com/redis/go-redis/v9 v9.22.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)

