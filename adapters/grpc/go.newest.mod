module github.com/a7d3e0dd/ratelimit/adapters/grpc

go 1.26.0

// The newest gRPC release this adapter is tested on (v1.85.0): make test runs the adapter's tests
// a second time with GOFLAGS=-modfile=go.newest.mod and GOWORK=off (go.mod holds the oldest
// supported release, the one users' builds start from). Not used by builds of the module.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.85.0 // newest tested; see the note above
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

// The core is this repository, whatever version the require line names.
replace github.com/a7d3e0dd/ratelimit => ../..
