// Command llm is an OpenAI-compatible proxy limited per API key, the bearer token of each
// request's Authorization header, by 60 requests a minute and 10,000 tokens a minute. The
// tokens are those the model's answer counts in its usage, streamed answers included; the
// proxy starts a stub model of its own on a loopback port, so there is nothing to install:
//
//	go run ./llm                                         # from the examples directory
//	REDIS_URL=redis://localhost:6379/0 go run ./llm      # limits shared by every instance
//
// Then ask for a completion, whole or streamed:
//
//	curl -s -D - localhost:8080/v1/chat/completions -H 'Authorization: Bearer sk-alice' \
//	  -d '{"model":"stub","max_tokens":50,"messages":[{"role":"user","content":"Say hello"}]}'
//	curl -sN localhost:8080/v1/chat/completions -H 'Authorization: Bearer sk-alice' \
//	  -d '{"model":"stub","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'
//
// A token costs nothing before the model has counted it, so the proxy reserves, then settles
// (ratelimit.ChargeAfter, see docs/costs.md): a request is admitted against an estimate of its
// tokens — its max_tokens (1,000 without) and a token per 4 bytes of its messages — held while
// the model answers, and once the answer is sent its hold is replaced by the usage the answer
// reports: "usage" of a whole answer, or of a stream's last chunk with one (the proxy asks the
// model for it, stream_options.include_usage). Requests in flight hold their estimates, so
// concurrent requests cannot all find the quota free; one that used more than it held is
// charged beyond the limit, and the next wait for it (Retry-After). An answer whose usage the
// proxy cannot read is charged its estimate, a client that goes away mid-stream too (the
// model's stream ends with it); a model's error answer is charged nothing.
//
// Every answer has OpenAI's headers: x-ratelimit-limit-requests, x-ratelimit-remaining-requests,
// x-ratelimit-reset-requests, and the same of tokens (remaining: with this request's estimate
// held). A refusal is 429 with Retry-After and an OpenAI error object; a request without a
// bearer token is 401. The proxy does not check the keys: each one is a quota of its own, so
// put it behind what authenticates them.
//
// Flags and environment:
//
//	-upstream URL     an OpenAI-compatible server (https://api.openai.com, a local vLLM or
//	                  llama.cpp server); the stub when unset. $UPSTREAM_API_KEY is the proxy's
//	                  key to it (the clients' keys are never sent on)
//	-stream-interval  the stub's pause between two tokens of a stream (default 50ms)
//	ADDR              address to listen on (default :8080)
//	REDIS_URL         redis://[user:password@]host:port/db; the memory store when unset
//	RATELIMIT_PREFIX  prefix of the keys in Redis (default "rl:")
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampleserver"
)

func main() { exampleserver.Main("llm", run) }

// run serves until ctx ends.
func run(ctx context.Context, log *slog.Logger) error {
	upstream := flag.String("upstream", "", "an OpenAI-compatible server; the stub model when empty")
	interval := flag.Duration("stream-interval", 50*time.Millisecond, "the stub's pause between two tokens of a stream")
	flag.Parse()
	if *interval < 0 {
		return fmt.Errorf("-stream-interval %v: give a pause of 0 or more", *interval)
	}

	store, closeStore, err := exampleserver.Store(ctx, log)
	if err != nil {
		return err
	}
	defer closeStore()

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = 2 * time.Minute // a stream's first byte; then it runs as long as the model streams
	cfg := config{store: store, apiKey: os.Getenv("UPSTREAM_API_KEY"), log: log, client: &http.Client{Transport: transport}}
	if *upstream == "" {
		stop, u, err := startStub(log, stubModel(time.Now, every(*interval)))
		if err != nil {
			return err
		}
		defer stop()
		cfg.upstream = u
	} else if cfg.upstream, err = url.Parse(*upstream); err != nil || cfg.upstream.Host == "" {
		return fmt.Errorf("-upstream %q: give a URL such as https://api.openai.com", *upstream)
	}
	p, err := newProxy(cfg)
	if err != nil {
		return err
	}
	return exampleserver.ServeHTTP(ctx, log, p.handler)
}

// startStub serves the stub model on a free loopback port, and returns a function that stops
// it and its URL.
func startStub(log *slog.Logger, h http.Handler) (func(), *url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("the stub model: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the stub model stopped", "error", err)
		}
	}()
	u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	log.Info("stub model started", "url", u.String())
	return func() { _ = srv.Close() }, u, nil
}
