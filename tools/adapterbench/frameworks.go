package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	fiber2 "github.com/gofiber/fiber/v2"
	fiber3 "github.com/gofiber/fiber/v3"
	echo4 "github.com/labstack/echo/v4"
	echo5 "github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echo"
	"github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/adapters/fiber"
	"github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// framework is one of the adapters' frameworks: serve starts a server of it on loopback with
// the three routes, the adapter's over l.
type framework struct {
	name  string // in the figures' keys
	label string // in the table
	serve func(e *env, l *ratelimit.Limiter) (target, error)
}

// frameworks are every framework measured, in the table's order.
var frameworks = []framework{
	{"nethttp", "net/http (ratelimit.Middleware)", serveNetHTTP},
	{"gin", "Gin (adapters/gin)", serveGin},
	{"echo", "Echo v4 (adapters/echo)", serveEcho4},
	{"echov5", "Echo v5 (adapters/echov5)", serveEcho5},
	{"fiber", "Fiber v2 (adapters/fiber)", serveFiber2},
	{"fiberv3", "Fiber v3 (adapters/fiberv3)", serveFiber3},
	{"grpc", "gRPC unary (adapters/grpc), a health check", serveGRPC},
}

// httpTarget is a framework serving the routes over HTTP at base, under the HTTP load.
type httpTarget struct {
	e    *env
	base string
	stop func()
}

func (t httpTarget) close() { t.stop() }

func (t httpTarget) load(ctx context.Context, route string, d time.Duration) (loadgen.HTTPResult, error) {
	return loadgen.HTTP(ctx, t.e.wrk, t.base+"/"+route, t.e.s.conns, d)
}

// listen returns a loopback listener and its base URL.
func listen() (net.Listener, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	return ln, "http://" + ln.Addr().String(), nil
}

// serveHTTP serves h on a loopback listener with net/http's server.
func serveHTTP(e *env, h http.Handler) (target, error) {
	ln, base, err := listen()
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return httpTarget{e, base, func() { _ = srv.Close() }}, nil
}

var ok = []byte("ok")

func serveNetHTTP(e *env, l *ratelimit.Limiter) (target, error) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(ok) })
	mux := http.NewServeMux()
	mux.Handle("/bare", h)
	mux.Handle("/floor", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := e.floor(r.Context(), r.RemoteAddr); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h(w, r)
	}))
	mux.Handle("/ours", ratelimit.Middleware(l)(h))
	return serveHTTP(e, mux)
}

func serveGin(e *env, l *ratelimit.Limiter) (target, error) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	h := func(c *gin.Context) { c.Data(http.StatusOK, "text/plain", ok) }
	r.GET("/bare", h)
	r.GET("/floor", func(c *gin.Context) {
		if err := e.floor(c.Request.Context(), c.Request.RemoteAddr); err != nil {
			c.AbortWithError(http.StatusInternalServerError, err)
		}
	}, h)
	r.GET("/ours", ginlimit.New(l), h)
	return serveHTTP(e, r)
}

func serveEcho4(e *env, l *ratelimit.Limiter) (target, error) {
	s := echo4.New()
	h := func(c echo4.Context) error { return c.Blob(http.StatusOK, "text/plain", ok) }
	s.GET("/bare", h)
	s.GET("/floor", h, func(next echo4.HandlerFunc) echo4.HandlerFunc {
		return func(c echo4.Context) error {
			if err := e.floor(c.Request().Context(), c.Request().RemoteAddr); err != nil {
				return err
			}
			return next(c)
		}
	})
	s.GET("/ours", h, echolimit.New(l))
	return serveHTTP(e, s)
}

func serveEcho5(e *env, l *ratelimit.Limiter) (target, error) {
	s := echo5.New()
	h := func(c *echo5.Context) error { return c.Blob(http.StatusOK, "text/plain", ok) }
	s.GET("/bare", h)
	s.GET("/floor", h, func(next echo5.HandlerFunc) echo5.HandlerFunc {
		return func(c *echo5.Context) error {
			if err := e.floor(c.Request().Context(), c.Request().RemoteAddr); err != nil {
				return err
			}
			return next(c)
		}
	})
	s.GET("/ours", h, echov5limit.New(l))
	return serveHTTP(e, s)
}

// fiberStop shuts down a Fiber app within a few seconds.
func fiberStop(shutdown func(time.Duration) error) func() {
	return func() { _ = shutdown(5 * time.Second) }
}

func serveFiber2(e *env, l *ratelimit.Limiter) (target, error) {
	app := fiber2.New(fiber2.Config{DisableStartupMessage: true})
	h := func(c *fiber2.Ctx) error { return c.Send(ok) }
	app.Get("/bare", h)
	app.Get("/floor", func(c *fiber2.Ctx) error {
		if err := e.floor(c.UserContext(), c.Context().RemoteAddr().String()); err != nil {
			return err
		}
		return c.Next()
	}, h)
	app.Get("/ours", fiberlimit.New(l), h)
	ln, base, err := listen()
	if err != nil {
		return nil, err
	}
	go func() { _ = app.Listener(ln) }()
	return httpTarget{e, base, fiberStop(app.ShutdownWithTimeout)}, nil
}

func serveFiber3(e *env, l *ratelimit.Limiter) (target, error) {
	app := fiber3.New()
	h := func(c fiber3.Ctx) error { return c.Send(ok) }
	app.Get("/bare", h)
	app.Get("/floor", func(c fiber3.Ctx) error {
		if err := e.floor(c.Context(), c.RequestCtx().RemoteAddr().String()); err != nil {
			return err
		}
		return c.Next()
	}, h)
	app.Get("/ours", fiberv3limit.New(l), h)
	ln, base, err := listen()
	if err != nil {
		return nil, err
	}
	go func() { _ = app.Listener(ln, fiber3.ListenConfig{DisableStartupMessage: true}) }()
	return httpTarget{e, base, fiberStop(app.ShutdownWithTimeout)}, nil
}

// errNoPeer is the floor's error for a gRPC call without a peer (never, over a server).
var errNoPeer = errors.New("the call has no peer")
