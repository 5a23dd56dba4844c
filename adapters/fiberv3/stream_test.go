package fiberv3limit_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/a7d3e0dd/ratelimit"
	fiberv3limit "github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// TestInFlightHeldWhileTheBodyStreams: an in-flight slot is held for the request's whole life,
// in every adapter (README "In-flight limits", whose example is an export). A Fiber handler
// that streams its body (c.SendStream, SetBodyStreamWriter: fasthttp writes it after the
// handler returns) held it only until the handler returned: with one slot and one export
// still streaming, a second export was served (found by a review). The slot comes back once
// the body is sent.
func TestInFlightHeldWhileTheBodyStreams(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	app := fiber.New()
	app.Use(fiberv3limit.New(l))
	release := make(chan struct{})
	app.Get("/export", func(c fiber.Ctx) error {
		c.RequestCtx().SetBodyStreamWriter(func(w *bufio.Writer) {
			w.WriteString("first row\n")
			w.Flush()
			<-release // the rest of the export
			w.WriteString("last row\n")
		})
		return nil
	})
	base := serveOnLoopback(t, app)
	url := base + "/export"

	first, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	if line, _ := bufio.NewReader(first.Body).ReadString('\n'); line != "first row\n" { // the first export is streaming
		t.Fatalf("first export: %d, %q", first.StatusCode, line)
	}

	second, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	io.Copy(io.Discard, second.Body)
	second.Body.Close()
	if second.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a second export while the first streams: %d; want 429 (one slot)", second.StatusCode)
	}
	io.Copy(io.Discard, first.Body) // the first export ends
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		third, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, third.Body)
		third.Body.Close()
		if third.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the first export was sent, a third is still answered %d: its slot never came back", third.StatusCode)
		}
	}
}

// TestInFlightOfTwoGuardsComeBackAfterTheBodyStreams: a streamed response behind two guards
// that hold in-flight slots (the app's and the route's) gives back the slots of both once it
// is sent. Each guard's completion waited under the same request user value, and the outer
// one's replaced the route's, which was never called: the route's slot was held (and renewed)
// for as long as the process ran, and every later export was answered 429.
func TestInFlightOfTwoGuardsComeBackAfterTheBodyStreams(t *testing.T) {
	slot := ratelimit.Policy{Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}}
	app := fiber.New()
	app.Use(fiberv3limit.New(mustNew(ratelimit.NewMemoryStore(), slot)))
	app.Get("/export", fiberv3limit.New(mustNew(ratelimit.NewMemoryStore(), slot)), func(c fiber.Ctx) error {
		c.RequestCtx().SetBodyStreamWriter(func(w *bufio.Writer) { w.WriteString("rows\n") })
		return nil
	})
	for i := range 3 {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/export", nil), noTimeout)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("export %d: %d; want 200 (the slots of the one before came back)", i+1, resp.StatusCode)
		}
	}
}

// TestChargeAfterTheBodyStreams: a streamed response (server-sent events, say) is charged what
// its handler reports while it streams, once the stream has been sent: the report reaches the
// request's meter through the context the handler had (c.Context()).
func TestChargeAfterTheBodyStreams(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1000, Window: time.Minute})
	app := fiber.New()
	app.Use(fiberv3limit.New(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 100 }), ratelimit.ChargeAfter(cost.Reported)))
	app.Get("/events", func(c fiber.Ctx) error {
		ctx := c.Context() // the stream is written after the handler returns: keep the context
		c.RequestCtx().SetBodyStreamWriter(func(w *bufio.Writer) {
			for range 3 {
				w.WriteString("data: token\n\n")
				w.Flush()
				cost.Report(ctx, 7)
			}
		})
		return nil
	})
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/events", nil), noTimeout)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get("X-RateLimit-Remaining"); got != "900" {
		t.Errorf("X-RateLimit-Remaining %q while the stream's estimate is held, want 900", got)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		d, err := l.Peek(t.Context(), "ip:0.0.0.0")
		if err != nil {
			t.Fatal(err)
		}
		if d.Remaining == 1000-21 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the stream was sent, %d remain; want %d: its 21 reported tokens settled", d.Remaining, 1000-21)
		}
	}
}

// renewSeen is a store that tells renewed each time it renews in-flight slots.
type renewSeen struct {
	ratelimit.Store
	renewed chan struct{}
}

func (s renewSeen) Unwrap() ratelimit.Store { return s.Store }

func (s renewSeen) Renew(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, at time.Time) (time.Time, error) {
	r := s.Store.(interface {
		Renew(context.Context, string, []ratelimit.Policy, int64, time.Time) (time.Time, error)
	})
	t, err := r.Renew(ctx, key, policies, cost, at)
	select {
	case s.renewed <- struct{}{}:
	default:
	}
	return t, err
}

// TestSlotRenewedWhileTheBodyStreams: the in-flight slot of a streamed body is renewed while
// fasthttp writes it, after the handler returned and Fiber released its context: the renewal
// read the request through that context, and raced with the context's reuse (-race; on Fiber v2 the
// process crashed). It reads what DoneLater kept instead.
func TestSlotRenewedWhileTheBodyStreams(t *testing.T) {
	store := renewSeen{ratelimit.NewMemoryStore(), make(chan struct{}, 1)}
	l := mustNew(store, ratelimit.Policy{Limit: 1, Window: 30 * time.Millisecond, Algorithm: algorithms.InFlight{}})
	app := fiber.New()
	app.Use(fiberv3limit.New(l))
	app.Get("/export", func(c fiber.Ctx) error {
		c.RequestCtx().SetBodyStreamWriter(func(w *bufio.Writer) {
			w.WriteString("first row\n")
			w.Flush()
			for range 2 { // renewed after the handler returned, the context released
				select {
				case <-store.renewed:
				case <-time.After(time.Minute):
					w.WriteString("never renewed\n")
					return
				}
			}
			w.WriteString("last row\n")
		})
		return nil
	})
	base := serveOnLoopback(t, app)
	resp, err := http.Get(base + "/export")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "first row\nlast row\n" {
		t.Fatalf("export: %d, %q", resp.StatusCode, body)
	}
}

// ChargeAfter(cost.Written) charges the body bytes sent: none for a status without a body
// (304, 204), whose body fasthttp drops, as net/http writes none (it counted the handler's
// body, sent or not).
func TestWrittenChargesNoBodyOfANoBodyStatus(t *testing.T) {
	for _, status := range []int{http.StatusNotModified, http.StatusNoContent, http.StatusOK} {
		l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1000, Window: time.Minute})
		app := fiber.New()
		app.Use(fiberv3limit.New(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 100 }), ratelimit.ChargeAfter(cost.Written)))
		app.Get("/doc", func(c fiber.Ctx) error { return c.Status(status).SendString("a cached body of 32 bytes .......") })
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/doc", nil), noTimeout)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d, err := l.Peek(t.Context(), "ip:0.0.0.0")
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := l.Peek(t.Context(), "ip:192.0.2.1") // Remaining counts the next request too
		if err != nil {
			t.Fatal(err)
		}
		if got := fresh.Remaining - d.Remaining; resp.StatusCode != status || got != int64(len(body)) {
			t.Errorf("a %d with %d body bytes sent: charged %d", resp.StatusCode, len(body), got)
		}
	}
}

// serveOnLoopback serves app on a loopback port until the test ends, and returns its base URL.
func serveOnLoopback(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	t.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}
