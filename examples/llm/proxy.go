package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// The limits of every API key: requests a minute, and tokens a minute, prompt and completion
// together, as the model's usage counts them.
const (
	requestsPerMinute = 60
	tokensPerMinute   = 10_000
)

// maxBody bounds a request's body: the proxy reads it whole, to estimate its tokens and to
// send it on. A longer one is answered 413.
const maxBody = 1 << 20

// defaultMaxTokens is the completion a request without max_tokens is estimated at.
const defaultMaxTokens = 1000

// config is what the proxy is built from: main fills it from its flags, the tests with a
// store on a fake clock.
type config struct {
	store    ratelimit.Store
	upstream *url.URL // the model server, which serves /v1/chat/completions
	apiKey   string   // the proxy's own key to the upstream; none when ""
	client   *http.Client
	log      *slog.Logger
}

// proxy is the running proxy: its handler and its two limiters.
type proxy struct {
	handler          http.Handler
	requests, tokens *ratelimit.Limiter
}

// newProxy returns the proxy:
//
//	requests guard → headers → read the body, estimate → tokens guard → headers → forward
//
// The requests guard charges 1 a request. The tokens guard admits a request against its
// estimate (its max_tokens and its prompt's bytes / 4), holds it while the model answers,
// and charges what the model's usage reports once the response is sent (ChargeAfter,
// cost.Reported): the estimate when it reported none.
func newProxy(cfg config) (*proxy, error) {
	requests, err := ratelimit.New(cfg.store, ratelimit.Policy{Name: "requests", Limit: requestsPerMinute, Window: time.Minute})
	if err != nil {
		return nil, err
	}
	tokens, err := ratelimit.New(cfg.store, ratelimit.Policy{Name: "tokens", Limit: tokensPerMinute, Window: time.Minute})
	if err != nil {
		return nil, err
	}
	common := []ratelimit.Option{
		ratelimit.WithKey(keyByBearer),
		ratelimit.WithAccess(ratelimit.Access{MissingKey: http.StatusUnauthorized}),
		ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, Deny: denyLikeOpenAI}),
	}
	perRequest, err := ratelimit.NewGuard(requests, common...)
	if err != nil {
		return nil, err
	}
	perToken, err := ratelimit.NewGuard(tokens, append(common,
		ratelimit.WithCost(func(r ratelimit.Request) int64 {
			if c, ok := r.Value(completionKey{}).(*completion); ok {
				return c.estimate
			}
			return defaultMaxTokens // not reached: readCompletion runs first
		}),
		ratelimit.ChargeAfter(cost.Reported),
	)...)
	if err != nil {
		return nil, err
	}
	f := &forwarder{target: cfg.upstream.JoinPath("/v1/chat/completions").String(), apiKey: cfg.apiKey, client: cfg.client, log: cfg.log}
	if f.client == nil {
		f.client = &http.Client{}
	}
	chain := ratelimit.FromGuard(perRequest)(limitHeaders(readCompletion(ratelimit.FromGuard(perToken)(limitHeaders(f)))))
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat/completions", chain)
	return &proxy{handler: mux, requests: requests, tokens: tokens}, nil
}

// keyByBearer keys a request by its API key, the bearer token of its Authorization header, as
// "key:" and the token's digest: no key is kept in Redis as it was sent. A request without one
// has no key (the guards answer 401).
func keyByBearer(r ratelimit.Request) (string, error) {
	auth := r.Header("Authorization")
	scheme, token, _ := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	switch {
	case !strings.EqualFold(scheme, "Bearer") || token == "":
		return "", fmt.Errorf("no bearer token: %w", ratelimit.ErrNoKey)
	case strings.ContainsAny(token, ", "):
		return "", errors.New("the Authorization header is repeated, or its token is not one")
	}
	return apiKeyID(token), nil
}

// apiKeyID is the limiters' key of an API key.
func apiKeyID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "key:" + hex.EncodeToString(sum[:16])
}

// limitHeaders writes, before the handler runs, what the guard in front decided, under
// OpenAI's names: x-ratelimit-limit-requests, x-ratelimit-remaining-requests,
// x-ratelimit-reset-requests (the time until the quota is whole again: "6s"), and the same
// with -tokens (remaining: what is left once this request's estimate is held).
func limitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := ratelimit.DecisionFrom(r.Context()); ok {
			h, name := w.Header(), d.Policy.Name
			h.Set("X-Ratelimit-Limit-"+name, fmt.Sprint(d.Limit))
			h.Set("X-Ratelimit-Remaining-"+name, fmt.Sprint(d.Remaining))
			h.Set("X-Ratelimit-Reset-"+name, d.ResetAfter.Round(time.Millisecond).String())
		}
		next.ServeHTTP(w, r)
	})
}

// denyLikeOpenAI answers a refusal as OpenAI does: 429 with an error object naming the limit
// (the guard adds Retry-After).
func denyLikeOpenAI(_ ratelimit.Request, d ratelimit.Decision) (int, string, []byte) {
	wait := (d.RetryAfter + time.Second - 1) / time.Second
	msg := fmt.Sprintf("Rate limit reached for %s per min on this API key: limit %d, remaining %d. Please try again in %ds.",
		d.Policy.Name, d.Limit, d.Remaining, wait)
	return http.StatusTooManyRequests, "application/json", errorBody(d.Policy.Name, "rate_limit_exceeded", msg)
}

// errorBody is an OpenAI error object.
func errorBody(typ, code, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return append(b, '\n')
}

// writeError answers an OpenAI error object with status.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(typ, errorCode(status), msg))
}

// errorCode is the code of an error object of the proxy's own: its status's text,
// "bad_gateway", say.
func errorCode(status int) string {
	return strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
}

// completion is a chat completion request as the proxy read it.
type completion struct {
	body     []byte // what is sent to the model
	stream   bool
	estimate int64 // its tokens, before the model counts them
}

// completionKey is the context key of the request's completion.
type completionKey struct{}

// readCompletion reads the request's body (at most maxBody), estimates its tokens, and hands
// the completion to next in its context. A stream is sent on asking for its usage
// (stream_options.include_usage), which the tokens guard charges. A body that is not a chat
// completion request is answered 400, one too long 413.
func readCompletion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			if errors.As(err, new(*http.MaxBytesError)) {
				writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("the request is more than %d bytes", maxBody))
				return
			}
			writeError(w, http.StatusBadRequest, "invalid_request_error", "the request's body could not be read")
			return
		}
		c, err := parseCompletion(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), completionKey{}, c)))
	})
}

// parseCompletion reads a chat completion request and estimates it: max_tokens (or
// max_completion_tokens; defaultMaxTokens without) and a token per 4 bytes of its messages.
func parseCompletion(body []byte) (*completion, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, errors.New("the request is not a JSON object")
	}
	var req struct {
		Messages            []json.RawMessage `json:"messages"`
		MaxTokens           *int64            `json:"max_tokens"`
		MaxCompletionTokens *int64            `json:"max_completion_tokens"`
		Stream              bool              `json:"stream"`
		StreamOptions       map[string]any    `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("the request is not a chat completion: %v", err)
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("messages: give at least one")
	}
	c := &completion{body: body, stream: req.Stream, estimate: int64(len(fields["messages"]))/4 + 1}
	maxTokens := int64(defaultMaxTokens)
	for _, f := range []struct {
		name string
		v    *int64
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} { // the newer one wins
		switch {
		case f.v == nil:
		case *f.v < 1:
			return nil, fmt.Errorf("%s is %d: give 1 or more", f.name, *f.v)
		default:
			maxTokens = *f.v
		}
	}
	c.estimate += min(maxTokens, tokensPerMinute) // beyond, the guard holds half the quota at most
	if req.Stream && req.StreamOptions["include_usage"] != true {
		if req.StreamOptions == nil {
			req.StreamOptions = map[string]any{}
		}
		req.StreamOptions["include_usage"] = true
		fields["stream_options"], _ = json.Marshal(req.StreamOptions)
		body, err := json.Marshal(fields)
		if err != nil {
			return nil, err
		}
		c.body = body
	}
	return c, nil
}
