module github.com/a7d3e0dd/ratelimit/adapters/echo

go 1.25.0

// The newest Echo v4 release this adapter is tested on (v4.16.0): make test runs the adapter's tests
// a second time with GOFLAGS=-modfile=go.newest.mod and GOWORK=off (go.mod holds the oldest
// supported release, the one users' builds start from). Not used by builds of the module.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/labstack/echo/v4 v4.16.0 // newest tested; see the note above
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/labstack/gommon v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.22 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.2 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/crypto v0.53.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

// The core is this repository, whatever version the require line names.
replace github.com/a7d3e0dd/ratelimit => ../..
