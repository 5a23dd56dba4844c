package ginlimit_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	ginlimit "github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// readmeUser is README's Gin limiter keyed by user, as written, over the router, the
// authentication middleware and the limiter it names.
func readmeUser(r *gin.Engine, auth gin.HandlerFunc, limiter *ratelimit.Limiter) {
	r.Use(auth) // on success: c.Set("user", userID)
	r.Use(ginlimit.New(limiter,
		ratelimit.WithKey(ratelimit.KeyByUser("user")),
		ratelimit.WithAccess(ratelimit.Access{MissingKey: http.StatusUnauthorized})))
}

// TestReadmeUser runs README's Gin code for a limit per user as written: the value the
// authentication middleware stored with c.Set keys the limit, wherever the user comes from,
// and a request without a user is refused 401 (Access.MissingKey).
func TestReadmeUser(t *testing.T) {
	source, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(source), "limiter *ratelimit.Limiter) {\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	var got []string
	for _, line := range strings.Split(body, "\n") {
		got = append(got, strings.TrimPrefix(line, "\t"))
	}
	if want := strings.Split(strings.TrimSpace(readmetest.Block(t, "../../docs/keys.md", "In Gin and Echo use `c.Set`", "go")), "\n"); !slices.Equal(got, want) {
		t.Fatalf("README's Gin code and readmeUser differ:\nREADME:\n%s\nreadmeUser:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}

	gin.SetMode(gin.TestMode)
	r := gin.New()
	auth := func(c *gin.Context) {
		if id, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer "); ok {
			c.Set("user", id)
		}
	}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))),
		ratelimit.Policy{Limit: 2, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	readmeUser(r, auth, limiter)
	r.GET("/", func(c *gin.Context) { c.Status(http.StatusOK) })
	var codes []int
	for _, c := range [][2]string{{"192.0.2.1", "alice"}, {"192.0.2.2", "alice"}, {"192.0.2.3", "alice"}, {"192.0.2.1", "bob"}, {"192.0.2.4", ""}} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = c[0] + ":1000"
		if c[1] != "" {
			req.Header.Set("Authorization", "Bearer "+c[1])
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		codes = append(codes, w.Code)
	}
	if want := []int{200, 200, 429, 200, 401}; !slices.Equal(codes, want) {
		t.Errorf("alice thrice from three addresses, bob from alice's, no user: %v; want %v", codes, want)
	}
}
