module github.com/a7d3e0dd/ratelimit/cmd/ratelimit

go 1.24

require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/a7d3e0dd/ratelimit/rules v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
)
