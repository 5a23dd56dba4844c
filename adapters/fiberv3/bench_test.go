package fiberv3limit_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
)

// discardWriter is the cheapest http.ResponseWriter, for the net/http reference.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkFiber measures a Fiber route bare and behind fiberv3limit.New with the memory store
// and one policy that admits every request, calling the app's fasthttp handler directly; the
// overhead per request is limited minus bare. limited includes handing the decision to the
// handler (a copy of it in c.Locals); the handler of limited-decision also reads it with
// Decision. The nethttp cases measure the core's net/http middleware the same way in the same
// run, for the ratio of the two overheads.
func BenchmarkFiber(b *testing.B) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	ok := func(c fiber.Ctx) error { return c.SendStatus(http.StatusOK) }
	bare := fiber.New()
	bare.Get("/", ok)
	limited := fiber.New()
	limited.Use(fiberv3limit.New(l))
	limited.Get("/", ok)
	reads := fiber.New()
	reads.Use(fiberv3limit.New(l))
	reads.Get("/", func(c fiber.Ctx) error {
		if d, ok := fiberv3limit.Decision(c); !ok || d.Remaining < 0 {
			panic("no decision")
		}
		return c.SendStatus(http.StatusOK)
	})
	for _, bc := range []struct {
		name string
		app  *fiber.App
	}{{"bare", bare}, {"limited", limited}, {"limited-decision", reads}} {
		b.Run(bc.name, func(b *testing.B) {
			var req fasthttp.Request
			req.Header.SetMethod(http.MethodGet)
			req.SetRequestURI("/")
			var ctx fasthttp.RequestCtx
			ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1234}, nil)
			h := bc.app.Handler()
			b.ReportAllocs()
			for b.Loop() {
				h(&ctx)
			}
		})
	}

	okHTTP := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	readsHTTP := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := ratelimit.DecisionFrom(r.Context()); !ok || d.Remaining < 0 {
			panic("no decision")
		}
		w.WriteHeader(http.StatusOK)
	})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"nethttp-bare", okHTTP}, {"nethttp-limited", ratelimit.Middleware(l)(okHTTP)},
		{"nethttp-limited-decision", ratelimit.Middleware(l)(readsHTTP)}} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "192.0.2.1:1234"
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				bc.h.ServeHTTP(w, r)
			}
		})
	}
}
