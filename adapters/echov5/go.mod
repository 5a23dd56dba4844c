module github.com/a7d3e0dd/ratelimit/adapters/echov5

go 1.25.0

// echo v5.4.4 is the newest Echo v5 release, and the one this adapter's tests run against;
// older v5 releases are not tested. Echo v5 requires Go 1.25, so this module does too.
// (Echo v4 has its own adapter, adapters/echo.)
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/labstack/echo/v5 v5.4.4 // newest v5 release; see the note above
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
