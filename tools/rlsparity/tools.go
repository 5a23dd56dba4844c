//go:build tools

package rlsparity

// The reference server's command, which the test builds: this import keeps its module and
// every module it needs in go.mod and go.sum.
import _ "github.com/envoyproxy/ratelimit/src/service_cmd"
