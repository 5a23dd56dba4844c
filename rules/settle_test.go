package rules

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// settleHandler answers as its query says: report=N (cost.Report), bytes=N of body.
func settleHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if s := q.Get("report"); s != "" {
		n, _ := strconv.ParseInt(s, 10, 64)
		cost.Report(r.Context(), n)
	}
	if s := q.Get("bytes"); s != "" {
		n, _ := strconv.Atoi(s)
		_, _ = io.WriteString(w, strings.Repeat("x", n))
	}
}

// settleEngine returns the handler of an engine applying doc over a memory store on a fake
// clock, around settleHandler, with the options opts.
func settleEngine(t *testing.T, doc string, opts ...Option) http.Handler {
	t.Helper()
	set, err := Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	e, err := NewEngine(store, set, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ratelimit.FromGuard(e.Guard())(http.HandlerFunc(settleHandler))
}

// send sends a request and returns its status and the remaining quota its response says.
func send(h http.Handler, method, target string) (int, string) {
	r := httptest.NewRequest(method, target, nil)
	r.Header.Set("X-API-Key", "k1")
	r.RemoteAddr = "192.0.2.1:1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Header().Get("X-RateLimit-Remaining")
}

// docs/rules.md's rules charged after the response, as written, behind the middleware the
// engine's guard makes: a completion holds its estimate of 500 while it runs and is charged
// the tokens its handler reported (1200, then its estimate when it reported nothing); a
// download is charged the bytes of its body. The remaining quota each response shows is what
// is left once its estimate is held.
func TestDocRulesSettle(t *testing.T) {
	h := settleEngine(t, readmetest.Block(t, "../docs/rules.md", "## Costs known after the response", "yaml"))
	for _, c := range []struct {
		method, target string
		remaining      string
	}{
		{"POST", "/v1/chat/completions?report=1200", "9500"},
		{"POST", "/v1/chat/completions", "8300"},          // 10000 - 1200 - 500
		{"POST", "/v1/chat/completions?report=0", "7800"}, // the one before reported nothing: its estimate
		{"GET", "/files/a?bytes=3000", "99000000"},
		{"GET", "/files/b", "98997000"}, // 100000000 - 3000 - 1000000
	} {
		code, remaining := send(h, c.method, c.target)
		if code != http.StatusOK || remaining != c.remaining {
			t.Errorf("%s %s: %d, remaining %s; want 200, %s", c.method, c.target, code, remaining, c.remaining)
		}
	}
}

// A rule with settle and a shadow policy: both policies hold the estimate and are settled
// with what the request reported; the shadow one refuses no one, its would-be denials shown
// in X-RateLimit-Shadow (the core's Response.Shadow, through WithResponse).
func TestSettleShadow(t *testing.T) {
	h := settleEngine(t, `rules:
  - name: tokens
    key: api_key
    estimate: 20
    settle: reported
    policies:
      - {name: tokens, limit: 1000, window: 1m}
      - {name: strict, limit: 40, window: 1m, shadow: true}
`, WithResponse(ratelimit.Response{Shadow: true}))
	// 30 settled on both; then the estimate of 20 is more than the 10 the shadow policy has
	// left: it would deny, and the enforced policy alone holds and is charged.
	for i, want := range []struct{ shadow, remaining string }{{"", "980"}, {"strict", "950"}, {"strict", "920"}} {
		r := httptest.NewRequest("GET", "/?report=30", nil)
		r.Header.Set("X-API-Key", "k1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Shadow") != want.shadow || w.Header().Get("X-RateLimit-Remaining") != want.remaining {
			t.Errorf("request %d: %d, shadow %q, remaining %s; want 200, %q, %s", i+1, w.Code,
				w.Header().Get("X-RateLimit-Shadow"), w.Header().Get("X-RateLimit-Remaining"), want.shadow, want.remaining)
		}
	}
}

// A rule's estimate and settle are part of what it says: they change its document's version,
// and Diff names them; a document without them keeps the version it had.
func TestDiffSettle(t *testing.T) {
	parse := func(charge string) *Set {
		t.Helper()
		s, err := Parse("limits.yaml", []byte("rules:\n  - name: llm\n    key: api_key\n"+charge+"    policies: [{name: tokens, limit: 10000, window: 1m}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	costly, reported := parse("    cost: 5\n"), parse("    estimate: 500\n    settle: reported\n")
	more, written := parse("    estimate: 800\n    settle: reported\n"), parse("    estimate: 800\n    settle: written\n")
	for _, c := range []struct {
		from, to *Set
		want     string
	}{
		{costly, reported, `~ llm: cost: 5 → (none); estimate: (none) → 500; settle: (none) → "reported"`},
		{reported, more, `~ llm: estimate: 500 → 800`},
		{more, written, `~ llm: settle: "reported" → "written"`},
		{written, costly, `~ llm: cost: (none) → 5; estimate: 800 → (none); settle: "written" → (none)`},
		{nil, written, `+ llm: every request, key api_key, estimate 800, settle written, tokens 10000/1m0s gcra`},
	} {
		var got []string
		for _, ch := range Diff(c.from, c.to) {
			got = append(got, ch.String())
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("Diff:\n got %s\nwant %s", strings.Join(got, "\n"), c.want)
		}
	}
	versions := map[string]bool{}
	for _, s := range []*Set{costly, reported, more, written} {
		versions[s.Version()] = true
	}
	if len(versions) != 4 {
		t.Errorf("%d versions of 4 documents that charge apart", len(versions))
	}
	// The versions these documents had before rules could settle (of the commit before).
	if v := parse("").Version(); v != "4721cf877fb3" {
		t.Errorf("a document without estimate and settle: version %s, was 4721cf877fb3", v)
	}
	if v := costly.Version(); v != "9bfd07377124" {
		t.Errorf("a document of cost 5: version %s, was 9bfd07377124", v)
	}
}
