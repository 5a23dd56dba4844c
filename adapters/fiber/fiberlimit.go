// Package fiberlimit rate-limits Fiber v2 routes with [github.com/a7d3e0dd/ratelimit]: the
// same checks, headers and responses as [ratelimit.Middleware], as a Fiber handler.
//
//	app.Use(fiberlimit.New(limiter))
//	app.Post("/login", fiberlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)
//
// The second line is a per-route limit; options are the core's ([ratelimit.Option]). The
// handler reads the limiter's decision with [Decision] (kept in c.Locals under a key of its
// own; a per-route limit's replaces the app's):
//
//	if d, ok := fiberlimit.Decision(c); ok { log.Printf("%d left", d.Remaining) }
//
// Key functions read the request straight from fasthttp: Request.Value is c.Locals, else the
// UserContext's value (for [ratelimit.KeyByUser]); Request.Route is the pattern of a route's
// handler, "" in app.Use or group middleware, which runs before Fiber matches the route; the
// client IP follows the core's rules ([ratelimit.KeyByIP]), not Fiber's ProxyHeader.
// Request.Path is valid until the handler returns; header values are copied.
//
// Request.Context is Fiber's UserContext. fasthttp does not tell a handler that its client
// went away, so a shaping wait (algorithms.LeakyBucket{Shaping: true}) runs to its end, bounded
// by the policy's burst, even for a client that has gone or an app shutting down.
package fiberlimit

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

type decisionKey struct{} // the c.Locals key of the decision the middleware hands its handler

// outcomeKey is the c.Locals key of the middleware's outcome, which a guard after it takes the
// report of (see [ratelimit.Request]): a request through two guards is counted once.
type outcomeKey struct{}

// New returns a Fiber handler that limits requests with l, configured by opts. It panics if
// an option is invalid, when the app is being set up; [FromGuard] with [ratelimit.NewGuard]
// returns the error instead. It never panics on a request.
func New(l *ratelimit.Limiter, opts ...ratelimit.Option) fiber.Handler {
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return FromGuard(g)
}

// FromGuard returns a Fiber handler that limits requests with g. A refused request is
// answered and the next handler is not called. With [ratelimit.CountIf], an error the next
// handlers return is answered by the app's ErrorHandler (as Fiber's logger does) before its
// status is counted, and not returned.
func FromGuard(g *ratelimit.Guard) fiber.Handler {
	return func(c *fiber.Ctx) error {
		checked := g.Check(request{c})
		checked.Headers(c.Set)
		if !checked.Proceed {
			return c.Status(checked.Status).Send(checked.Body)
		}
		// The outcome goes to the heap only for a request that proceeds (a refusal allocates
		// none): a guard after this one takes its report through it (see OuterOutcome).
		o := new(ratelimit.Outcome)
		*o = checked
		c.Locals(outcomeKey{}, o)
		if o.Decision.Limit > 0 { // the limiter decided: not skipped, not failed open
			c.Locals(decisionKey{}, &o.Decision)
		}
		// Completes the outcome when a handler panicked (its slots come back all the same), and
		// tells the report of one that waits for no status. After a Done below, it does nothing.
		defer g.Done(o, fiber.StatusInternalServerError)
		if o.Meter != nil { // ChargeAfter: the handler reports its cost through its context
			c.SetUserContext(cost.NewContext(c.UserContext(), o.Meter))
		}
		err := c.Next()
		if !o.Pending {
			return err
		}
		// Answer an error now, as Fiber's logger does, so the status counted is the one sent.
		if err != nil && c.App().ErrorHandler(c, err) != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
		if o.Meter != nil {
			o.Meter.Wrote(written(c.Response()))
		}
		if c.Response().IsBodyStream() { // sent after this returns: its slots go back when it is
			if later := g.DoneLater(o); later != nil {
				// A guard inside this one (a route's) has its completion waiting there already:
				// it is kept, for a user value set again replaces the one before unclosed.
				before, _ := c.Context().UserValue(sentKey{}).(*sent)
				c.Context().SetUserValue(sentKey{}, &sent{status: c.Response().StatusCode(), done: later, before: before})
			}
			return nil
		}
		g.Done(o, c.Response().StatusCode())
		return nil
	}
}

// written returns the bytes of the body of resp, for ChargeAfter (0 for a status that has no
// body: 1xx, 204, 304): of a body stream, its declared length, or 0 when it has none (fasthttp writes the stream, and does not say how
// much; a handler reports such a cost with cost.Report).
func written(resp *fasthttp.Response) int64 {
	if c := resp.StatusCode(); c < 200 || c == fasthttp.StatusNoContent || c == fasthttp.StatusNotModified {
		return 0 // a status without a body: fasthttp sends none of it, as net/http writes none
	}
	if resp.IsBodyStream() {
		return int64(max(resp.Header.ContentLength(), 0))
	}
	return int64(len(resp.Body()))
}

// sentKey is the request user value that completes a streamed response: fasthttp writes a body
// stream (SendStream, SetBodyStreamWriter) after the handler has returned, then closes the
// request's user values.
type sentKey struct{}

// sent completes a streamed response, once, when fasthttp closes it: the outcome of its guard,
// then that of the guard inside it, before.
type sent struct {
	once   sync.Once
	status int
	done   func(status int)
	before *sent // the completion of a guard inside, or nil
}

func (s *sent) Close() error {
	s.once.Do(func() {
		s.done(s.status)
		if s.before != nil {
			s.before.Close()
		}
	})
	return nil
}

// Decision returns the decision the middleware made for the request of c, or false when no
// limiter decided (the request was skipped, or the store failed and it failed open).
func Decision(c *fiber.Ctx) (ratelimit.Decision, bool) {
	if d, ok := c.Locals(decisionKey{}).(*ratelimit.Decision); ok {
		return *d, true
	}
	return ratelimit.Decision{}, false
}

// request is a Fiber request seen as a [ratelimit.Request], converted to one without allocating.
type request struct{ c *fiber.Ctx }

// Context returns the UserContext, not the fasthttp.RequestCtx: that is no stdlib context (a
// deadline derived from it costs a goroutine), and is recycled when the handler returns.
func (r request) Context() context.Context { return r.c.UserContext() }
func (r request) Method() string           { return r.c.Method() }
func (r request) Path() string             { return r.c.Path() }

// EscapedPath returns the path as Fiber matches routes on it (see [ratelimit.Request]): as the
// client sent it (unless Config.UnescapePath), in lower case unless Config.CaseSensitive, and
// without trailing slashes unless Config.StrictRouting — what the rules engine's patterns are
// matched on, so that "/LOGIN/" meets the limit of "POST /login", whose handler it reaches.
func (r request) EscapedPath() string {
	cfg := r.c.App().Config()
	p := r.c.Path()
	if !cfg.CaseSensitive {
		p = asciiLower(p)
	}
	if !cfg.StrictRouting && len(p) > 1 && p[len(p)-1] == '/' {
		p = strings.TrimRight(p, "/")
	}
	return p
}

// FoldsCase reports whether Fiber compares paths in lower case, its routes' too (unless
// Config.CaseSensitive): the rules engine then matches EscapedPath on its patterns with their
// paths in lower case, so that the rule of "GET /api/getUser/{id}" limits "/api/getuser/bob",
// which Fiber serves with that route (see [ratelimit.Request]).
func (r request) FoldsCase() bool { return !r.c.App().Config().CaseSensitive }

// asciiLower returns s with its ASCII letters in lower case, as Fiber compares paths.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// OuterOutcome returns the outcome of the guard before this one on the request, if any (see
// [ratelimit.Request]).
func (r request) OuterOutcome() *ratelimit.Outcome {
	o, _ := r.c.Locals(outcomeKey{}).(*ratelimit.Outcome)
	return o
}

// Value returns c.Locals(key), else the UserContext's value.
func (r request) Value(key any) any {
	if v := r.c.Locals(key); v != nil {
		return v
	}
	return r.c.UserContext().Value(key)
}

// Route returns the pattern of the route whose handler runs, or "" in middleware of app.Use or
// a group, whose Path is only a prefix: keying by it would put every route in one quota.
func (r request) Route() string {
	rt := r.c.Route()
	if useField != nil && reflect.ValueOf(rt).Elem().FieldByIndex(useField).Bool() {
		return ""
	}
	return rt.Path
}

// useField locates fiber.Route's unexported flag of app.Use and group middleware, or is nil.
var useField = func() []int {
	f, ok := reflect.TypeOf(fiber.Route{}).FieldByName("use")
	if !ok || f.Type.Kind() != reflect.Bool {
		return nil
	}
	return f.Index
}()

// Header joins the field lines of the header with ", ", copied: fasthttp reuses its buffer.
// Each line is trimmed of spaces and tabs, as net/http does (fasthttp trims spaces alone
// before v1.69: a key with a tab around it was a new quota). The Host header is the request's
// host, which fasthttp keeps apart.
func (r request) Header(name string) string {
	if strings.EqualFold(name, "Host") {
		return string(r.c.Request().Host())
	}
	lines := r.c.Request().Header.PeekAll(name)
	if len(lines) == 1 {
		return string(bytes.Trim(lines[0], " \t"))
	}
	var b strings.Builder
	for i, line := range lines {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(bytes.Trim(line, " \t"))
	}
	return b.String()
}

// RemoteAddr formats the peer's address with one allocation, an IPv4 address in 4-byte form.
func (r request) RemoteAddr() string {
	addr := r.c.Context().RemoteAddr()
	if a, ok := addr.(*net.TCPAddr); ok {
		ap := a.AddrPort()
		var buf [64]byte
		return string(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).AppendTo(buf[:0]))
	}
	return addr.String()
}
