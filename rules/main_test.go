package rules

import (
	"os"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestMain provides the tests of rules in Redis with real servers, and ExamplePush with
// REDIS_ADDR, and stops the servers at the end.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "ExamplePush")) }
