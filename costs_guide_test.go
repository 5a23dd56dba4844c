package ratelimit_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// usage is what the guide's model answers of a completion.
type usage struct{ TotalTokens int64 }

// costsHandler is docs/costs.md's handler, as written.
func costsHandler(store ratelimit.Store, mux *http.ServeMux, complete func(http.ResponseWriter, *http.Request) usage) error {
	tokens, err := ratelimit.New(store, ratelimit.Policy{Name: "tpm", Limit: 10_000, Window: time.Minute})
	if err != nil {
		return err
	}
	mux.Handle("POST /v1/chat/completions", ratelimit.Middleware(tokens,
		ratelimit.WithKey(ratelimit.KeyByHeader("Authorization")),
		ratelimit.WithCost(func(ratelimit.Request) int64 { return 500 }), // the estimate
		ratelimit.ChargeAfter(cost.Reported),                             // the usage the handler reports
	)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		usage := complete(w, r) // the model's answer, streamed or not
		cost.Report(r.Context(), usage.TotalTokens)
	})))
	return nil // README: (the guide's code returns err, as here, before it)
}

// costsStatus is docs/costs.md's status-dependent charge, as written.
func costsStatus() ratelimit.Option {
	return ratelimit.ChargeAfter(func(a cost.After) int64 {
		if a.Status == http.StatusNotFound {
			return 0
		}
		return a.Reported
	})
}

// model is the guide's model client: a completion of a fixed number of tokens.
type model struct{ tokens int64 }

func (m model) Complete(context.Context, string) (usage, error) { return usage{m.tokens}, nil }

// costsWorker is docs/costs.md's worker, as written.
func costsWorker(ctx context.Context, tokens *ratelimit.Limiter, model model, prompt string) error {
	d, err := tokens.Reserve(ctx, "tenant:acme", 500)
	if err != nil || !d.Allowed {
		return err // or wait d.RetryAfter
	}
	usage, err := model.Complete(ctx, prompt)
	if err != nil {
		_ = tokens.Settle(context.WithoutCancel(ctx), "tenant:acme", d, 0) // nothing was used: the hold goes back
		return err
	}
	return tokens.Settle(context.WithoutCancel(ctx), "tenant:acme", d, usage.TotalTokens) // even if ctx ended meanwhile
}

// costsTransport is docs/costs.md's outgoing client, as written.
func costsTransport(tokens *ratelimit.Limiter, req *http.Request) error {
	client := &http.Client{Transport: &ratelimit.Transport{
		Limiter:     tokens,
		Key:         func(*http.Request) string { return "provider" },
		Cost:        func(*http.Request) int64 { return 500 }, // the estimate
		ChargeAfter: cost.Reported,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return err // a round trip that fails charges nothing
	}
	defer resp.Body.Close() // the settle
	var answer struct {
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return err // nothing reported: the estimate is charged
	}
	cost.Report(resp.Request.Context(), answer.Usage.TotalTokens)
	return nil // README: (the guide's code goes on)
}

// The guide's code, as written: the handler holds 500 and charges the usage it reports; the
// status-dependent charge gives a 404 nothing; the worker holds and settles the same way.
func TestCostsGuide(t *testing.T) {
	readmetest.Same(t, "docs/costs.md's handler", readmetest.FuncBody(t, "costs_guide_test.go", "costsHandler"),
		readmetest.Code(readmetest.Block(t, "docs/costs.md", "<!-- costs:handler -->", "go")))
	status := readmetest.Code(readmetest.Block(t, "docs/costs.md", "<!-- costs:status -->", "go"))
	status[0] = "return " + status[0] // the guide shows the option the function returns
	readmetest.Same(t, "docs/costs.md's status charge", readmetest.FuncBody(t, "costs_guide_test.go", "costsStatus"), status)
	readmetest.Same(t, "docs/costs.md's outgoing client", readmetest.FuncBody(t, "costs_guide_test.go", "costsTransport"),
		readmetest.Code(readmetest.Block(t, "docs/costs.md", "<!-- costs:transport -->", "go")))
	readmetest.Same(t, "docs/costs.md's worker", readmetest.FuncBody(t, "costs_guide_test.go", "costsWorker"),
		readmetest.Code(readmetest.Block(t, "docs/costs.md", "<!-- costs:worker -->", "go")))

	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
	mux := http.NewServeMux()
	held := make(chan int64, 1)
	if err := costsHandler(store, mux, func(w http.ResponseWriter, r *http.Request) usage {
		d, _ := ratelimit.DecisionFrom(r.Context())
		held <- d.Remaining
		return usage{TotalTokens: 1234}
	}); err != nil {
		t.Fatal(err)
	}
	post := func() *http.Response {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		r.Header.Set("Authorization", "Bearer sk-1")
		mux.ServeHTTP(w, r)
		return w.Result()
	}
	post()
	if got := <-held; got != 9_500 {
		t.Errorf("remaining while the first request ran: %d, want 9500 (its estimate held)", got)
	}
	if r := post(); r.Header.Get("X-RateLimit-Remaining") != "8266" { // 10,000 - 1,234 - 500 held
		t.Errorf("the second request's X-RateLimit-Remaining %q, want 8266", r.Header.Get("X-RateLimit-Remaining"))
	}
	<-held

	charge := func(opt ratelimit.Option, status int) int64 {
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 100, Window: time.Minute})
		h := ratelimit.Middleware(l, estimate20, opt)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cost.Report(r.Context(), 7)
			w.WriteHeader(status)
		}))
		getAt(h, "")
		return 100 - remaining(t, l, "ip:192.0.2.1")
	}
	if got := charge(costsStatus(), http.StatusNotFound); got != 0 {
		t.Errorf("a 404 charged %d, want 0", got)
	}
	if got := charge(costsStatus(), http.StatusOK); got != 7 {
		t.Errorf("a 200 charged %d, want the 7 reported", got)
	}

	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"usage": {"total_tokens": 640}}`)
	}))
	defer provider.Close()
	out := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 10_000, Window: time.Minute})
	req, _ := http.NewRequest(http.MethodPost, provider.URL, nil)
	if err := costsTransport(out, req); err != nil {
		t.Fatal(err)
	}
	if got := remaining(t, out, "provider"); got != 10_000-640 {
		t.Errorf("after the outgoing call, %d left; want %d: its usage", got, 10_000-640)
	}

	tokens := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 10_000, Window: time.Minute})
	if err := costsWorker(t.Context(), tokens, model{tokens: 321}, "hi"); err != nil {
		t.Fatal(err)
	}
	if got := remaining(t, tokens, "tenant:acme"); got != 10_000-321 {
		t.Errorf("after the worker, %d left; want %d", got, 10_000-321)
	}
}

// readmeCosts is README's "Costs known after the response" code, as written.
func readmeCosts(tokens *ratelimit.Limiter, mux *http.ServeMux, complete func(http.ResponseWriter, *http.Request) usage) {
	mux.Handle("POST /v1/chat/completions", ratelimit.Middleware(tokens,
		ratelimit.WithCost(func(ratelimit.Request) int64 { return 500 }), // the estimate
		ratelimit.ChargeAfter(cost.Reported),                             // what the handler reports
	)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		usage := complete(w, r) // streamed or not
		cost.Report(r.Context(), usage.TotalTokens)
	})))
}

// README's code, as written: each request holds 500 while it runs and is charged its usage.
func TestReadmeCosts(t *testing.T) {
	readmetest.Same(t, "README's costs", readmetest.FuncBody(t, "costs_guide_test.go", "readmeCosts"),
		readmetest.Code(readmetest.Block(t, "README.md", "<!-- readme:costs -->", "go")))
	tokens := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 10_000, Window: time.Minute})
	mux := http.NewServeMux()
	var held int64
	readmeCosts(tokens, mux, func(w http.ResponseWriter, r *http.Request) usage {
		held = remaining(t, tokens, "ip:192.0.2.1")
		return usage{TotalTokens: 42}
	})
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
	if held != 9_500 {
		t.Errorf("%d left while the request ran, want 9500: its estimate held", held)
	}
	if got := remaining(t, tokens, "ip:192.0.2.1"); got != 10_000-42 {
		t.Errorf("%d left after it, want %d: its usage", got, 10_000-42)
	}
}
