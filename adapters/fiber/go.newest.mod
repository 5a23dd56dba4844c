module github.com/a7d3e0dd/ratelimit/adapters/fiber

go 1.24

// The newest Fiber v2 release this adapter is tested on (v2.52.15): make test runs the adapter's tests
// a second time with GOFLAGS=-modfile=go.newest.mod and GOWORK=off (go.mod holds the oldest
// supported release, the one users' builds start from). Not used by builds of the module.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/gofiber/fiber/v2 v2.52.15 // newest tested; see the note above
	github.com/valyala/fasthttp v1.51.0
)

require (
	github.com/andybalholm/brotli v1.1.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.17.9 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/tcplisten v1.0.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)

// The core is this repository, whatever version the require line names.
replace github.com/a7d3e0dd/ratelimit => ../..
