// Package rls serves Envoy's rate limit service protocol
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) from this library's stores.
package rls
