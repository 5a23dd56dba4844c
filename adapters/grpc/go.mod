module github.com/a7d3e0dd/ratelimit/adapters/grpc

go 1.24

// grpc v1.75.0 is the oldest gRPC this adapter supports, and the one its tests run against (it
// requires Go 1.23; the core, 1.24). genproto's rpc module has the google.rpc.RetryInfo of a
// denial, at the version that gRPC requires.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250707201910-8d1bb00bc6a7
	google.golang.org/grpc v1.75.0
	google.golang.org/protobuf v1.36.6
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/net v0.41.0 // indirect
	golang.org/x/sys v0.33.0 // indirect
	golang.org/x/text v0.26.0 // indirect
)

