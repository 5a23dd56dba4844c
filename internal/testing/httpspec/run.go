package httpspec

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// step is one request of a case and the response it must get.
type step struct {
	advance time.Duration // moves the clock before the request
	method  string        // default GET
	target  string        // default /items/1
	remote  string        // default 192.0.2.1:1234
	header  []string      // name, value pairs; a repeated name sends several field lines
	// cancelWait makes the shaping wait end as if the client went away.
	cancelWait bool
	want       want
}

// want is the response a step must get.
type want struct {
	status  int
	handled bool              // the application handler ran
	header  map[string]string // every header the limiter writes, exactly (see ownedHeaders)
	body    string            // the exact body when the handler did not run
	errs    int               // errors reported to the error handler since the case began
	// reported, when set, is a part of the error this step reported (its last, when it
	// reported several), and kind the error's kind (observe.ErrorKind), when set.
	reported string
	kind     string
	waits    []time.Duration // shaping waits since the case began
	// result, when set, is the result the observer must be told of the step (its label,
	// observe.Result's String); it is told one result in any case.
	result string
}

// ownedHeaders are the headers the limiter writes. A response must carry exactly those of
// want.header, each once, and none of the others. Content-Type is compared when want.header
// names it (the limiter's refusals); otherwise it is the handler's or framework's.
var ownedHeaders = []string{
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
	"Ratelimit-Policy", "Ratelimit", "Retry-After", "X-Content-Type-Options",
}

// Run runs every case of the table through the servers newServer builds, one per case, each
// case on a fake clock starting at [T0] and a store of its own.
//
// The store is one of the engine's, and with several engines every case runs once per
// engine, in a subtest named by the engine; without engines, the store is [Memory]'s. A case
// that brings its own store (one that fails, say) runs under the first engine only.
func Run(t *testing.T, newServer NewServer, engines ...Engine) {
	if len(engines) == 0 {
		runCases(t, newServer, Memory, true)
		return
	}
	for i, engine := range engines {
		t.Run(engine.Name, func(t *testing.T) { runCases(t, newServer, engine, i == 0) })
	}
}

// runCases runs the cases on the stores of engine; the cases with a store of their own only
// when all is set.
func runCases(t *testing.T, newServer NewServer, engine Engine, all bool) {
	for _, c := range cases {
		if c.store != nil && !all {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c, engine)
			cfg := c.build(e)
			cfg.Options = append(e.base(c.timeout), cfg.Options...)
			if cfg.Login != nil {
				cfg.Login = append(e.base(c.timeout), cfg.Login...)
			}
			cfg.Reply = e.reply
			srv := newServer(t, cfg)
			for i, s := range c.steps {
				e.clock.Advance(s.advance)
				e.mu.Lock()
				e.cancelWait = s.cancelWait
				e.mu.Unlock()
				req := s.request()
				calls, errs, told := e.calls.Load(), len(e.reported()), len(e.told.Results())
				resp := srv(req)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("step %d: reading the body: %v", i+1, err)
				}
				handled := e.calls.Load() - calls
				s.check(t, i+1, resp, string(body), handled, e.reported()[errs:], e)
				s.checkTold(t, i+1, e.told.Results()[told:])
			}
		})
	}
}

func (s step) request() *http.Request {
	method, target, remote := s.method, s.target, s.remote
	if method == "" {
		method = http.MethodGet
	}
	if target == "" {
		target = "/items/1"
	}
	if remote == "" {
		remote = "192.0.2.1:1234"
	}
	req := httptest.NewRequest(method, target, nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(s.header); i += 2 {
		req.Header.Add(s.header[i], s.header[i+1])
	}
	return req
}

// check checks the response to step n, given how often the handler ran and the errors the
// step reported.
func (s step) check(t *testing.T, n int, resp *http.Response, body string, handled int64, reported []error, e *env) {
	t.Helper()
	w := s.want
	where := func() string { return s.describe(n) }
	if resp.StatusCode != w.status {
		t.Errorf("%s: status %d, want %d (body %q)", where(), resp.StatusCode, w.status, body)
	}
	switch {
	case w.handled && handled != 1:
		t.Errorf("%s: the handler ran %d times, want once", where(), handled)
	case !w.handled && handled != 0:
		t.Errorf("%s: the handler ran %d times, want never", where(), handled)
	}
	names := ownedHeaders
	if _, ok := w.header["Content-Type"]; ok {
		names = append(slices.Clone(names), "Content-Type")
	}
	for name := range w.header {
		if !slices.Contains(names, name) {
			t.Fatalf("%s: the case names header %q, which is not in ownedHeaders", where(), name)
		}
	}
	for _, name := range names {
		got := resp.Header.Values(name)
		want, ok := w.header[name]
		switch {
		case !ok && len(got) > 0:
			t.Errorf("%s: header %s: %q, want none", where(), name, got)
		case ok && len(got) == 0:
			t.Errorf("%s: header %s missing, want %q", where(), name, want)
		case ok && (len(got) != 1 || got[0] != want):
			t.Errorf("%s: header %s: %q, want exactly [%q]", where(), name, got, want)
		}
	}
	if !w.handled && body != w.body {
		t.Errorf("%s: body %q, want %q", where(), body, w.body)
	}
	if got := len(e.reported()); got != w.errs {
		t.Errorf("%s: %d errors reported so far, want %d (this step's: %v)", where(), got, w.errs, reported)
	}
	if w.reported != "" || w.kind != "" {
		switch last := len(reported) - 1; {
		case last < 0:
			t.Errorf("%s: no error reported, want one containing %q", where(), w.reported)
		case !strings.Contains(reported[last].Error(), w.reported):
			t.Errorf("%s: reported %q, want an error containing %q", where(), reported[last], w.reported)
		case w.kind != "" && observe.ErrorKind(reported[last]) != w.kind:
			t.Errorf("%s: reported %q, want an error of kind %v", where(), reported[last], w.kind)
		}
	}
	e.mu.Lock()
	waits := slices.Clone(e.waits)
	e.mu.Unlock()
	if !slices.Equal(waits, w.waits) {
		t.Errorf("%s: shaping waits so far %v, want %v", where(), waits, w.waits)
	}
}

// checkTold checks what the observer was told of step n: one result, the step's when it names
// one.
func (s step) checkTold(t *testing.T, n int, told []observe.Result) {
	t.Helper()
	switch {
	case len(told) != 1:
		t.Errorf("%s: the observer was told %v, want one result", s.describe(n), told)
	case s.want.result != "" && told[0].String() != s.want.result:
		t.Errorf("%s: the observer was told %v, want %s", s.describe(n), told[0], s.want.result)
	}
}

func (s step) describe(n int) string {
	r := s.request()
	var b strings.Builder
	b.WriteString("step ")
	b.WriteString(strconv.Itoa(n))
	b.WriteString(" (")
	b.WriteString(r.Method + " " + r.URL.RequestURI() + " from " + r.RemoteAddr)
	for i := 0; i+1 < len(s.header); i += 2 {
		b.WriteString(", " + s.header[i] + ": " + clip(s.header[i+1]))
	}
	if s.advance != 0 {
		b.WriteString(", after " + s.advance.String())
	}
	b.WriteString(")")
	return b.String()
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
