package echolimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	echolimit "github.com/a7d3e0dd/ratelimit/adapters/echo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmelogin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// readmeSetup is docs/frameworks.md's Echo v4 code, as written, over the server,
// limiter and login handler it names.
func readmeSetup(e *echo.Echo, limiter *ratelimit.Limiter, login echo.HandlerFunc) {
	e.Use(echolimit.New(limiter))
	e.POST("/login", login, echolimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})))
	// in a handler: d, ok := echolimit.Decision(c)
}

// TestReadmeSetup runs README's Echo v4 code as written: the login route admits 5 a minute
// per client, refuses the 6th with 429 and Retry-After without calling the handler, and
// answers as net/http's middleware does with the same options (the same status, headers and
// body); the handler reads the login policy's decision.
func TestReadmeSetup(t *testing.T) {
	readmetest.Same(t, "Echo v4 code", readmetest.FuncBody(t, "readme_test.go", "readmeSetup"),
		readmetest.Code(readmetest.Containing(t, "../../docs/frameworks.md", `e.POST("/login", login, echolimit.New(`, "go")))

	clock := fakeclock.New(fakeclock.T0)
	limiter := readmelogin.NewLimiter(t, clock)
	e := echo.New()
	var left []int64
	readmeSetup(e, limiter, func(c echo.Context) error {
		d, ok := echolimit.Decision(c)
		if ok {
			left = append(left, d.Remaining)
		}
		return c.String(http.StatusOK, "welcome\n")
	})
	readmelogin.Run(t, clock, readmelogin.App{
		Name:        "Echo",
		Serve:       readmelogin.Recorded(e),
		ContentType: "text/plain; charset=UTF-8",
		Remaining:   func() []int64 { return left },
	})
}
