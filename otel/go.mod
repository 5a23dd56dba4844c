module github.com/a7d3e0dd/ratelimit/otel

go 1.24.0

// The package imports only the metric API (otel/metric, and otel for attribute); the SDK and
// go-redis serve the tests. v1.41.0 is the newest OpenTelemetry-Go release that builds with
// Go 1.24 (v1.42.0 needs Go 1.25).
require (
	github.com/a7d3e0dd/ratelimit v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
	go.opentelemetry.io/otel v1.41.0
	go.opentelemetry.io/otel/metric v1.41.0
	go.opentelemetry.io/otel/sdk/metric v1.41.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/sdk v1.41.0 // indirect
	go.opentelemetry.io/otel/trace v1.41.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
