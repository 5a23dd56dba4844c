package ginlimit_test

import (
	"bytes"
	"log"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	ginlimit "github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmelogin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// readmeSetup is docs/frameworks.md's Gin code, as written, over the router,
// limiter and login handler it names; readmeInAHandler is its last lines, which run in a
// handler.
func readmeSetup(r *gin.Engine, limiter *ratelimit.Limiter, login gin.HandlerFunc) {
	r.Use(ginlimit.New(limiter))
	r.POST("/login", ginlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)
}

func readmeInAHandler(c *gin.Context) {
	// in a handler:
	if d, ok := ginlimit.Decision(c); ok {
		log.Printf("%d left", d.Remaining)
	}
}

// TestReadmeSetup runs README's Gin code as written (gofmt's layout of its last line): the
// login route admits 5 a minute per client, refuses the 6th with 429 and Retry-After without
// calling the handler, and answers as net/http's middleware does with the same options (the
// same status, headers and body); the handler reads the login policy's decision.
func TestReadmeSetup(t *testing.T) {
	want := readmetest.Gofmt(t, readmetest.Code(readmetest.Containing(t, "../../docs/frameworks.md", `r.POST("/login", ginlimit.New(`, "go")))
	readmetest.Same(t, "Gin code", append(readmetest.FuncBody(t, "readme_login_test.go", "readmeSetup"), readmetest.FuncBody(t, "readme_login_test.go", "readmeInAHandler")...), want)

	var logged bytes.Buffer
	log.SetOutput(&logged)
	log.SetFlags(0)
	t.Cleanup(func() {
		log.SetOutput(os.Stderr)
		log.SetFlags(log.LstdFlags)
	})

	clock := fakeclock.New(fakeclock.T0)
	limiter := readmelogin.NewLimiter(t, clock)
	gin.SetMode(gin.TestMode)
	r := gin.New()
	logins := 0
	readmeSetup(r, limiter, func(c *gin.Context) {
		readmeInAHandler(c)
		logins++
		c.String(http.StatusOK, "welcome\n")
	})
	readmelogin.Run(t, clock, readmelogin.App{
		Name:  "Gin",
		Serve: readmelogin.Recorded(r),
		Handled: func(t testing.TB) {
			if logins != 5 {
				t.Errorf("the login handler ran %d times; want 5 (Gin aborts the refused request)", logins)
			}
			if want := "4 left\n3 left\n2 left\n1 left\n0 left\n"; logged.String() != want {
				t.Errorf("the handler logged %q; want %q (the login policy's decision)", logged.String(), want)
			}
		},
	})
}
