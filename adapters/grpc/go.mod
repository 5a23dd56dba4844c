module github.com/a7d3e0dd/ratelimit/adapters/grpc

go 1.26.0

// grpc v1.85.0 is the newest gRPC release, and it requires Go 1.26 (so the workspaces say go
// 1.26.0). genproto's rpc module has the google.rpc.RetryInfo of a denial.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

