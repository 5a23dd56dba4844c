module github.com/a7d3e0dd/ratelimit/adapters/fiber

go 1.24

// fiber v2.40.0 is the oldest Fiber this adapter supports, and the one its tests run against:
// the first whose fasthttp (v1.41.0) has RequestHeader.PeekAll, with which the adapter reads
// every line of a repeated header (X-Forwarded-For from a chain of proxies).
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/gofiber/fiber/v2 v2.40.0 // oldest supported; see the note above
	github.com/valyala/fasthttp v1.41.0
)

require (
	github.com/andybalholm/brotli v1.0.5 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/compress v1.16.3 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.18 // indirect
	github.com/mattn/go-runewidth v0.0.14 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/rivo/uniseg v0.2.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/tcplisten v1.0.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
