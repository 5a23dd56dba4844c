package ginlimit_test

import (
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/modversion"
)

// TestRunsOnTheDeclaredVersion: these tests run on the Gin release the module file in use
// requires (go.mod: the oldest supported; go.newest.mod, where there is one: the newest tested),
// not on one a workspace raised.
func TestRunsOnTheDeclaredVersion(t *testing.T) {
	modversion.Check(t, "github.com/gin-gonic/gin")
}
