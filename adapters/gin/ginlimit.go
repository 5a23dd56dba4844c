// Package ginlimit rate-limits Gin routes with [github.com/a7d3e0dd/ratelimit]: the same
// checks, headers and responses as [ratelimit.Middleware], as Gin middleware.
//
//	r.Use(ginlimit.New(limiter))
//
// Options are the core's ([ratelimit.Option]). A per-route limit is a handler of its route or
// group:
//
//	r.POST("/login", ginlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)
//
// Key functions see Gin's matched route ([gin.Context.FullPath]) as [ratelimit.Request.Route],
// and resolve the client IP with the core's rules ([ratelimit.KeyByIP]), not Gin's ClientIP.
package ginlimit

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
)

// New returns Gin middleware that limits requests with l, configured by opts. It panics if an
// option is invalid, when the router is being set up; [FromGuard] with [ratelimit.NewGuard]
// returns the error instead. It never panics on a request.
func New(l *ratelimit.Limiter, opts ...ratelimit.Option) gin.HandlerFunc {
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return FromGuard(g)
}

// FromGuard returns Gin middleware that limits requests with g. A refused request is
// answered and aborted ([gin.Context.Abort]): no later handler runs.
func FromGuard(g *ratelimit.Guard) gin.HandlerFunc {
	return func(c *gin.Context) {
		o := g.Check(request{c})
		o.Write(c.Writer)
		if !o.Proceed {
			c.Abort()
			return
		}
		c.Next()
		g.Done(&o, c.Writer.Status())
	}
}

// request is a Gin request seen as a [ratelimit.Request]. A struct of one pointer converts to
// an interface without allocating.
type request struct{ c *gin.Context }

func (r request) Context() context.Context { return r.c.Request.Context() }
func (r request) Method() string           { return r.c.Request.Method }
func (r request) Path() string             { return r.c.Request.URL.Path }
func (r request) Route() string            { return r.c.FullPath() }
func (r request) RemoteAddr() string       { return r.c.Request.RemoteAddr }

func (r request) Header(name string) string {
	return ratelimit.HTTPRequest(r.c.Request).Header(name)
}
