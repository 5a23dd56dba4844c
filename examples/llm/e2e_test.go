package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(exampletest.Main(m)) }

// The built command, as its documentation runs it: a whole answer and a stream from the stub
// model, with OpenAI's rate-limit headers, and a request without a key refused.
func TestCommand(t *testing.T) {
	inst := exampletest.StartArgs(t, exampletest.Build(t), []string{"-stream-interval", "0"})
	for _, want := range []string{"using the memory store", "stub model started"} {
		if !strings.Contains(inst.Log(), want) {
			t.Fatalf("the log has no %q:\n%s", want, inst.Log())
		}
	}
	resp := post(t, context.Background(), inst.URL, "sk-alice", chat("Say hello", 50, false))
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"total_tokens":15`) ||
		resp.Header.Get("X-Ratelimit-Remaining-Requests") != fmt.Sprint(requestsPerMinute-1) || resp.Header.Get("X-Ratelimit-Remaining-Tokens") == "" {
		t.Errorf("a completion: %d %v %q; want 200 with a usage of 15 tokens and the rate-limit headers", resp.StatusCode, resp.Header, answer)
	}
	resp = post(t, context.Background(), inst.URL, "sk-alice", chat("Say hello", 0, true))
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(stream), `"usage":{"prompt_tokens":5,"completion_tokens":10,"total_tokens":15}`) ||
		!strings.HasSuffix(string(stream), "data: [DONE]\n\n") {
		t.Errorf("a stream: %d %q; want 200, a usage chunk and [DONE]", resp.StatusCode, stream)
	}
	if resp := post(t, context.Background(), inst.URL, "", chat("Say hello", 0, false)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no API key: %d, want 401", resp.StatusCode)
	}
}

// Two instances over one Redis share each key's tokens: what a completion through one used is
// gone for the next through the other. The store's clock is the real one, and 10,000 tokens a
// minute come back at one every 6 ms: the completion through the first uses 6,003 tokens, and
// the second must find at least 2,000 of them gone (24 s of repayment).
func TestTokensSharedThroughRedis(t *testing.T) {
	bin := exampletest.Build(t)
	env := []string{"REDIS_URL=redis://" + redistest.Addr(t) + "/0", "RATELIMIT_PREFIX=" + redistest.Prefix(t)}
	a := exampletest.StartArgs(t, bin, []string{"-stream-interval", "0"}, env...)
	b := exampletest.StartArgs(t, bin, []string{"-stream-interval", "0"}, env...)
	for _, inst := range []*exampletest.Instance{a, b} {
		if !strings.Contains(inst.Log(), "using the Redis store") {
			t.Fatalf("the instance does not say it uses Redis:\n%s", inst.Log())
		}
	}
	resp := post(t, context.Background(), a.URL, "sk-alice", chat(strings.Repeat("word ", 2000), 4000, true))
	stream, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(stream), `"total_tokens":6003`) {
		t.Fatalf("through a: %d %v, want a stream that used 6,003 tokens", resp.StatusCode, err)
	}
	small := chat("Say hello", 50, false)
	resp = post(t, context.Background(), b.URL, "sk-alice", small)
	resp.Body.Close()
	got, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Remaining-Tokens"), 10, 64)
	if most := tokensPerMinute - estimateOf(t, small) - 2000; resp.StatusCode != http.StatusOK || err != nil || got > most {
		t.Errorf("through b: %d, %s tokens left; want 200 and at most %d\n%s\n%s", resp.StatusCode, resp.Header.Get("X-Ratelimit-Remaining-Tokens"), most, a.Log(), b.Log())
	}
}
