package echov5limit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	echov5limit "github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmelogin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// readmeSetup is docs/frameworks.md's Echo v5 code, as written, over the server
// and limiter it names.
func readmeSetup(e *echo.Echo, limiter *ratelimit.Limiter) {
	e.Use(echov5limit.New(limiter))
	// in a handler: d, ok := echov5limit.Decision(c)
}

// TestReadmeSetup runs README's Echo v5 code as written, with the login route of README's
// Echo v4 code ("the same with echov5limit"): the login route admits 5 a minute per client,
// refuses the 6th with 429 and Retry-After without calling the handler, and answers as
// net/http's middleware does with the same options (the same status, headers and body); the
// handler reads the login policy's decision.
func TestReadmeSetup(t *testing.T) {
	readmetest.Same(t, "Echo v5 code", readmetest.FuncBody(t, "readme_test.go", "readmeSetup"),
		readmetest.Code(readmetest.Containing(t, "../../docs/frameworks.md", `e.Use(echov5limit.New(limiter))`, "go")))

	clock := fakeclock.New(fakeclock.T0)
	limiter := readmelogin.NewLimiter(t, clock)
	e := echo.New()
	var left []int64
	readmeSetup(e, limiter)
	login := func(c *echo.Context) error {
		d, ok := echov5limit.Decision(c)
		if ok {
			left = append(left, d.Remaining)
		}
		return c.String(http.StatusOK, "welcome\n")
	}
	e.POST("/login", login, echov5limit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})))
	readmelogin.Run(t, clock, readmelogin.App{
		Name:        "Echo v5",
		Serve:       readmelogin.Recorded(e),
		ContentType: "text/plain; charset=UTF-8",
		Remaining:   func() []int64 { return left },
	})
}
