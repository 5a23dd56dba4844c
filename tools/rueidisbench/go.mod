module github.com/a7d3e0dd/ratelimit/tools/rueidisbench

go 1.24

// rueidis v1.0.69 is the newest release whose go.mod asks for no more than Go 1.24.0 (v1.0.71
// wants 1.24.9, v1.0.77 on 1.25). go-redis serves the floor and the core store. The core
// v0.1.0 is, as for the adapters, this repository through go.work until it is released.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/redis/rueidis v1.0.69
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.31.0 // indirect
)

