module github.com/a7d3e0dd/ratelimit/adapters/echo

go 1.24

// echo v4.0.0 is the oldest Echo this adapter supports, and the one its tests run against:
// the adapter uses nothing that v4 did not have from its first release. Echo before v4.10.1
// leaves the raw path of an unmatched request in Context.Path; the adapter tells such a
// request by its handler (echo.NotFoundHandler) instead, and route_test.go checks it here.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/labstack/echo/v4 v4.0.0 // oldest supported; see the note above
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/labstack/gommon v0.4.0 // indirect
	github.com/mattn/go-colorable v0.1.11 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasttemplate v1.2.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/crypto v0.0.0-20210817164053-32db794688a5 // indirect
	golang.org/x/net v0.0.0-20211015210444-4f30a5c0130f // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/text v0.3.7 // indirect
)
