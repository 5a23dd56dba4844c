package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// testProxy is the proxy in-process, on a memory store whose clock the test moves, in front of
// the stub model (or the test's own upstream).
type testProxy struct {
	*proxy
	url, upstream string
	clock         *fakeclock.Clock
	gate          chan struct{}          // with gated, a stream's next token waits for a send (or a close) here
	canceled      chan struct{}          // a gated stream whose request ended before its next token
	settled       chan observe.HoldEvent // each settle of the tokens guard
}

// startProxy starts the proxy before the stub model, whose streams send a token when the test
// sends on gate if gated, else at once; or before upstream when it is not nil.
func startProxy(t *testing.T, gated bool, upstream http.Handler) *testProxy {
	t.Helper()
	tp := &testProxy{clock: fakeclock.New(fakeclock.T0), gate: make(chan struct{}),
		canceled: make(chan struct{}, 16), settled: make(chan observe.HoldEvent, 64)}
	pause := every(0)
	if gated {
		pause = func(ctx context.Context) error {
			select {
			case <-tp.gate:
				return nil
			case <-ctx.Done():
				tp.canceled <- struct{}{}
				return ctx.Err()
			}
		}
	}
	if upstream == nil {
		upstream = stubModel(tp.clock.Now, pause)
	}
	model := httptest.NewServer(upstream)
	t.Cleanup(model.Close)
	tp.upstream = model.URL
	target, _ := url.Parse(model.URL)
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(tp.clock), ratelimit.WithObserver(&ratelimit.Observer{
		Held: func(e observe.HoldEvent) {
			if e.Settled {
				tp.settled <- e
			}
		},
	}))
	p, err := newProxy(config{store: store, upstream: target, log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.handler)
	t.Cleanup(srv.Close)
	tp.proxy, tp.url = p, srv.URL
	return tp
}

// chat is a chat completion request of one user message; maxTokens 0 leaves max_tokens out.
func chat(content string, maxTokens int, stream bool) string {
	req := map[string]any{"model": "stub", "messages": []any{map[string]string{"role": "user", "content": content}}}
	if maxTokens > 0 {
		req["max_tokens"] = maxTokens
	}
	if stream {
		req["stream"] = true
	}
	b, _ := json.Marshal(req)
	return string(b)
}

// post sends body to url with the API key (none when ""), and returns the response with its
// body unread; the test closes it.
func post(t *testing.T, ctx context.Context, url, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// complete posts body with key and returns the response and its whole body.
func (tp *testProxy) complete(t *testing.T, key, body string) (*http.Response, string) {
	t.Helper()
	resp := post(t, context.Background(), tp.url, key, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// left returns what key has left of l, charging nothing.
func left(t *testing.T, l *ratelimit.Limiter, key string) int64 {
	t.Helper()
	d, err := l.AllowN(context.Background(), apiKeyID(key), 0)
	if err != nil {
		t.Fatal(err)
	}
	return d.Remaining
}

// settle waits for the next settle of the tokens guard: the guard settles when the handler
// returns, which may be after the client has read the whole answer.
func (tp *testProxy) settle(t *testing.T) observe.HoldEvent {
	t.Helper()
	return <-tp.settled
}

// estimateOf is the proxy's estimate of body, as the tokens guard holds it.
func estimateOf(t *testing.T, body string) int64 {
	t.Helper()
	c, err := parseCompletion([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return min(c.estimate, tokensPerMinute/2) // the limiter's clamp: half the capacity
}

// usageIn returns the total tokens of the usage of a JSON answer, or of the last chunk of a
// stream that has one.
func usageIn(t *testing.T, body string) int64 {
	t.Helper()
	total, found := int64(0), false
	for line := range strings.SplitSeq(body, "\n") {
		if n, ok := usageOf([]byte(strings.TrimPrefix(line, "data: "))); ok {
			total, found = n, true
		}
	}
	if !found {
		t.Fatalf("no usage in %q", body)
	}
	return total
}

// A whole answer is charged its usage: the request is admitted holding its estimate (the
// headers tell what is left with it held), and settles to the usage the model counted.
func TestWholeAnswerChargedItsUsage(t *testing.T) {
	tp := startProxy(t, false, nil)
	body := chat("Say hello", 50, false)
	resp, answer := tp.complete(t, "sk-alice", body)
	estimate := estimateOf(t, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %q; want 200", resp.StatusCode, answer)
	}
	for name, want := range map[string]string{
		"X-Ratelimit-Limit-Requests": "60", "X-Ratelimit-Remaining-Requests": "59",
		"X-Ratelimit-Limit-Tokens": "10000", "X-Ratelimit-Remaining-Tokens": fmt.Sprint(tokensPerMinute - estimate),
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	// "Say hello": 2 words and 3 a message, a reply of twice that.
	if used := usageIn(t, answer); used != 15 {
		t.Errorf("the model counted %d tokens, want 15", used)
	}
	if e := tp.settle(t); e.Estimate != estimate || e.Actual != 15 {
		t.Errorf("settled %+v, want the estimate %d replaced by the usage 15", e, estimate)
	}
	if got := left(t, tp.tokens, "sk-alice"); got != tokensPerMinute-15 {
		t.Errorf("%d tokens left, want %d", got, tokensPerMinute-15)
	}
	if got := left(t, tp.requests, "sk-alice"); got != requestsPerMinute-1 {
		t.Errorf("%d requests left, want %d", got, requestsPerMinute-1)
	}
}

// A stream passes through unchanged, and is charged the usage of its last chunk. One whose
// client did not ask for the usage is sent asking for it, and charged it all the same.
func TestStreamChargedItsUsage(t *testing.T) {
	tp := startProxy(t, false, nil)
	asked := `{"model":"stub","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say hello"}]}`
	_, through := tp.complete(t, "sk-alice", asked)
	direct := post(t, context.Background(), tp.upstream, "", asked)
	want, _ := io.ReadAll(direct.Body)
	direct.Body.Close()
	if through != string(want) {
		t.Errorf("through the proxy:\n%s\nwant the model's own stream:\n%s", through, want)
	}
	if !strings.HasSuffix(through, "data: [DONE]\n\n") {
		t.Errorf("the stream does not end with [DONE]:\n%s", through)
	}
	if e := tp.settle(t); e.Actual != usageIn(t, through) || e.Actual != 15 {
		t.Errorf("settled %+v, want the usage 15 of the last chunk", e)
	}

	_, answer := tp.complete(t, "sk-alice", chat("Say hello", 0, true))
	if e := tp.settle(t); e.Actual != usageIn(t, answer) || e.Estimate != estimateOf(t, chat("Say hello", 0, true)) {
		t.Errorf("settled %+v, want the stream's usage in place of its estimate (%d)", e, estimateOf(t, chat("Say hello", 0, true)))
	}
	if got := left(t, tp.tokens, "sk-alice"); got != tokensPerMinute-2*15 {
		t.Errorf("%d tokens left, want %d", got, tokensPerMinute-2*15)
	}
}

// readEvent reads one event of a stream (its lines up to a blank one).
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended after %q: %v", b.String(), err)
		}
		b.WriteString(line)
		if line == "\n" {
			return b.String()
		}
	}
}

// Requests in flight hold their estimates: with streams of 3,000 tokens estimated open, the
// quota of 10,000 admits three at once, and refuses the fourth (429, Retry-After, an OpenAI
// error) though none has used a token yet; once they end, each is charged its usage only.
func TestConcurrentRequestsBoundedByHolds(t *testing.T) {
	tp := startProxy(t, true, nil)
	body := chat("Say hello", 3000, true)
	estimate := estimateOf(t, body)
	open := tokensPerMinute / estimate
	if open != 3 {
		t.Fatalf("an estimate of %d: %d fit, the test counts on 3", estimate, open)
	}
	var streams []*http.Response
	for i := range open {
		resp := post(t, context.Background(), tp.url, "sk-alice", body)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d, want 200", i+1, resp.StatusCode)
		}
		if got := resp.Header.Get("X-Ratelimit-Remaining-Tokens"); got != fmt.Sprint(tokensPerMinute-(i+1)*estimate) {
			t.Errorf("stream %d: %s tokens left, want %d: the estimates of those in flight held", i+1, got, tokensPerMinute-(i+1)*estimate)
		}
		streams = append(streams, resp)
	}
	// Each stream's first event reached its client before the model's next token: flushed.
	readers := make([]*bufio.Reader, open)
	for i, resp := range streams {
		readers[i] = bufio.NewReader(resp.Body)
		if ev := readEvent(t, readers[i]); !strings.Contains(ev, `"role":"assistant"`) {
			t.Errorf("stream %d began with %q, want the assistant's role", i+1, ev)
		}
	}
	resp, refusal := tp.complete(t, "sk-alice", body)
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || retry < 1 ||
		!strings.Contains(refusal, `"type":"tokens"`) || !strings.Contains(refusal, `"code":"rate_limit_exceeded"`) {
		t.Errorf("a fourth stream: %d, Retry-After %q, %q; want 429 with Retry-After and an error of type tokens",
			resp.StatusCode, resp.Header.Get("Retry-After"), refusal)
	}

	close(tp.gate) // the model answers them all
	var used int64
	for i, br := range readers {
		rest, err := io.ReadAll(br)
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		used += usageIn(t, string(rest))
		if e := tp.settle(t); e.Estimate != estimate || e.Actual != 15 {
			t.Errorf("settle %d: %+v, want the estimate %d replaced by the usage 15", i+1, e, estimate)
		}
	}
	if got := left(t, tp.tokens, "sk-alice"); got != tokensPerMinute-used || used != 3*15 {
		t.Errorf("%d tokens left after streams that used %d, want %d", got, used, tokensPerMinute-3*15)
	}
}

// expectRefusal checks a 429 of the policy name: Retry-After, and OpenAI's error object.
func expectRefusal(t *testing.T, what string, resp *http.Response, body, name string) time.Duration {
	t.Helper()
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || retry < 1 || json.Unmarshal([]byte(body), &e) != nil ||
		e.Error.Type != name || e.Error.Code != "rate_limit_exceeded" || !strings.Contains(e.Error.Message, fmt.Sprintf("try again in %ds", retry)) {
		t.Fatalf("%s: %d, Retry-After %q, %q; want 429, Retry-After, an error of type %s saying when to try again",
			what, resp.StatusCode, resp.Header.Get("Retry-After"), body, name)
	}
	return time.Duration(retry) * time.Second
}

// The requests a minute are enforced: the 61st request is refused, and admitted once
// Retry-After has passed (on the fake clock).
func TestRequestsPerMinute(t *testing.T) {
	tp := startProxy(t, false, nil)
	small := chat("hi", 1, false)
	for i := range requestsPerMinute {
		if resp, body := tp.complete(t, "sk-alice", small); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %q, want 200", i+1, resp.StatusCode, body)
		}
		tp.settle(t)
	}
	resp, body := tp.complete(t, "sk-alice", small)
	wait := expectRefusal(t, "request 61", resp, body, "requests")
	if got := left(t, tp.tokens, "sk-alice"); got != tokensPerMinute-requestsPerMinute*usageIn(t, mustAnswer(t, tp, small)) {
		t.Errorf("%d tokens left: the refused request was charged tokens", got)
	}
	tp.clock.Advance(wait)
	if resp, _ := tp.complete(t, "sk-alice", small); resp.StatusCode != http.StatusOK {
		t.Errorf("after Retry-After: %d, want 200", resp.StatusCode)
	}
}

// mustAnswer is the stub model's own answer to body.
func mustAnswer(t *testing.T, tp *testProxy, body string) string {
	t.Helper()
	resp := post(t, context.Background(), tp.upstream, "", body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The tokens a minute are enforced: a request that used more than its estimate held (6,003
// tokens held at 5,000, half the quota) is charged beyond the limit, and the next request is
// refused until time has repaid it, though requests are left.
func TestTokensPerMinute(t *testing.T) {
	tp := startProxy(t, false, nil)
	long := chat(strings.Repeat("word ", 2000), 4000, false)
	resp, answer := tp.complete(t, "sk-alice", long)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d, want 200", resp.StatusCode)
	}
	e := tp.settle(t)
	if e.Estimate != tokensPerMinute/2 || e.Actual != usageIn(t, answer) || e.Actual != 6003 {
		t.Fatalf("settled %+v, want 5,000 held (the clamp) and the usage 6,003 charged", e)
	}
	resp, body := tp.complete(t, "sk-alice", long)
	wait := expectRefusal(t, "the next long request", resp, body, "tokens")
	if got := resp.Header.Get("X-Ratelimit-Remaining-Requests"); got != fmt.Sprint(requestsPerMinute-2) {
		t.Errorf("refused by its tokens, the request has %s requests left, want %d", got, requestsPerMinute-2)
	}
	tp.clock.Advance(wait)
	if resp, _ := tp.complete(t, "sk-alice", long); resp.StatusCode != http.StatusOK {
		t.Errorf("after Retry-After: %d, want 200", resp.StatusCode)
	}
}

// A client that goes away mid-stream ends the model's stream (the model generates no more)
// and is charged its estimate: the usage never came.
func TestClientGoesAwayMidStream(t *testing.T) {
	tp := startProxy(t, true, nil)
	body := chat("Say hello", 200, true)
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, tp.url, "sk-alice", body)
	br := bufio.NewReader(resp.Body)
	readEvent(t, br)
	tp.gate <- struct{}{} // a token
	if ev := readEvent(t, br); !strings.Contains(ev, `"content":"Say"`) {
		t.Errorf("the first token: %q", ev)
	}
	cancel()
	resp.Body.Close()
	<-tp.canceled // the model's stream ended with the client's
	if e := tp.settle(t); e.Actual != estimateOf(t, body) || e.Expired {
		t.Errorf("settled %+v, want the estimate %d charged", e, estimateOf(t, body))
	}
	if got := left(t, tp.tokens, "sk-alice"); got != tokensPerMinute-estimateOf(t, body) {
		t.Errorf("%d tokens left, want %d", got, tokensPerMinute-estimateOf(t, body))
	}
}

// Two API keys have quotas of their own: one that has used its requests does not stop the
// other, whose quotas are whole.
func TestTwoKeysIndependent(t *testing.T) {
	tp := startProxy(t, false, nil)
	small := chat("hi", 1, false)
	for range requestsPerMinute {
		tp.complete(t, "sk-alice", small)
		tp.settle(t)
	}
	resp, body := tp.complete(t, "sk-alice", small)
	expectRefusal(t, "alice's 61st", resp, body, "requests")
	resp, _ = tp.complete(t, "sk-bob", small)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Ratelimit-Remaining-Requests") != fmt.Sprint(requestsPerMinute-1) ||
		resp.Header.Get("X-Ratelimit-Remaining-Tokens") != fmt.Sprint(tokensPerMinute-estimateOf(t, small)) {
		t.Errorf("bob: %d %v; want 200 with his quotas whole but for this request", resp.StatusCode, resp.Header)
	}
}

// Requests the proxy cannot send on are answered at once, and charged no tokens: no bearer
// token (401), a body that is not a chat completion (400), one too long (413).
func TestBadRequests(t *testing.T) {
	tp := startProxy(t, false, nil)
	for _, c := range []struct {
		what, key, body string
		want            int
	}{
		{"no API key", "", chat("hi", 1, false), http.StatusUnauthorized},
		{"not JSON", "sk-alice", "hello", http.StatusBadRequest},
		{"no messages", "sk-alice", `{"model":"stub"}`, http.StatusBadRequest},
		{"max_tokens 0", "sk-alice", `{"max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest},
		{"too long", "sk-alice", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", maxBody) + `"}]}`, http.StatusRequestEntityTooLarge},
	} {
		if resp, body := tp.complete(t, c.key, c.body); resp.StatusCode != c.want {
			t.Errorf("%s: %d %q, want %d", c.what, resp.StatusCode, body, c.want)
		}
	}
	if got := left(t, tp.tokens, "sk-alice"); got != tokensPerMinute {
		t.Errorf("%d tokens left, want all %d", got, tokensPerMinute)
	}
}

// A model's answer the proxy cannot read a usage from is passed on as it came, and charged
// the estimate; a model's error answer is charged nothing, and so is one that never came.
func TestMalformedAnswers(t *testing.T) {
	body := chat("Say hello", 100, false)
	long := strings.Repeat("x", maxEventLine+10)
	for _, c := range []struct {
		what, contentType, answer string
		status                    int
		charged                   func(estimate int64) int64
	}{
		{"not JSON", "application/json", "{not json", 200, func(e int64) int64 { return e }},
		{"no usage", "application/json", `{"choices":[]}`, 200, func(e int64) int64 { return e }},
		{"a negative usage", "application/json", `{"usage":{"total_tokens":-5}}`, 200, func(e int64) int64 { return e }},
		{"a usage of 0 total", "application/json", `{"usage":{"prompt_tokens":4,"completion_tokens":3}}`, 200, func(int64) int64 { return 7 }},
		{"a stream without usage, cut", "text/event-stream", "data: {\"choices\":[]}\n\ndata: {\"usage\":", 200, func(e int64) int64 { return e }},
		{"a stream's line too long to read", "text/event-stream", "data: {\"usage\":{\"total_tokens\":9}," + long + "}\n\ndata: [DONE]\n\n", 200, func(e int64) int64 { return e }},
		{"a stream after a long line", "text/event-stream", "data: " + long + "\n\ndata: {\"usage\":{\"total_tokens\":9}}\n\n", 200, func(int64) int64 { return 9 }},
		{"the model's 400", "application/json", `{"error":{"message":"no such model"}}`, 400, func(int64) int64 { return 0 }},
		{"the model's 503", "application/json", `{"error":{"message":"overloaded"}}`, 503, func(int64) int64 { return 0 }},
	} {
		t.Run(c.what, func(t *testing.T) {
			tp := startProxy(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				w.WriteHeader(c.status)
				io.WriteString(w, c.answer)
			}))
			resp, got := tp.complete(t, "sk-alice", body)
			if resp.StatusCode != c.status || got != c.answer {
				t.Errorf("%d %.80q, want the model's %d %.80q as it came", resp.StatusCode, got, c.status, c.answer)
			}
			if e, want := tp.settle(t), c.charged(estimateOf(t, body)); e.Actual != want {
				t.Errorf("charged %d, want %d", e.Actual, want)
			}
		})
	}

	t.Run("the model unreachable", func(t *testing.T) {
		tp := startProxy(t, false, nil)
		u, _ := url.Parse("http://127.0.0.1:1")
		tp.proxy, _ = newProxy(config{store: ratelimit.NewMemoryStore(ratelimit.WithClock(tp.clock)), upstream: u, log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer sk-alice")
		tp.handler.ServeHTTP(w, r)
		if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "unreachable") {
			t.Errorf("%d %q, want 502", w.Code, w.Body.String())
		}
		if got := left(t, tp.tokens, "sk-alice"); got != tokensPerMinute {
			t.Errorf("%d tokens left, want all %d", got, tokensPerMinute)
		}
	})
}
