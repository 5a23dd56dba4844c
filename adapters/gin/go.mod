module github.com/a7d3e0dd/ratelimit/adapters/gin

go 1.24

// gin v1.5.0 is the oldest Gin this adapter supports, and the one its tests run against:
// it added Context.FullPath, which the adapter reads as the route.
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/gin-gonic/gin v1.5.0 // oldest supported; see the note above
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gin-contrib/sse v0.1.0 // indirect
	github.com/go-playground/locales v0.13.0 // indirect
	github.com/go-playground/universal-translator v0.17.0 // indirect
	github.com/golang/protobuf v1.3.3 // indirect
	github.com/json-iterator/go v1.1.9 // indirect
	github.com/leodido/go-urn v1.2.0 // indirect
	github.com/mattn/go-isatty v0.0.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180228061459-e0a39a4cb421 // indirect
	github.com/modern-go/reflect2 v0.0.0-20180701023420-4b7aa43c6742 // indirect
	github.com/redis/go-redis/v9 v9.22.0 // indirect
	github.com/ugorji/go/codec v1.1.7 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	gopkg.in/go-playground/validator.v9 v9.29.1 // indirect
	gopkg.in/yaml.v2 v2.2.8 // indirect
)
