package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The stub model: an OpenAI-compatible chat completions endpoint that needs no network, no
// model and no key, so that the proxy has something to limit. It answers by repeating the
// words of the last message, twice as many words as the prompt has, cut at max_tokens; a word
// is a token. What it answers and what it counts follow from the request alone.

// stubRequest is what the stub reads of a chat completion request.
type stubRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string, or an array of parts
	} `json:"messages"`
	MaxTokens           *int64 `json:"max_tokens"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	Stream              bool   `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// usage is the "usage" object of OpenAI's responses.
type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// stubMaxReply bounds a reply without max_tokens.
const stubMaxReply = 4096

// stubMaxBody bounds the request the stub reads.
const stubMaxBody = 1 << 20

// stubModel serves POST /v1/chat/completions: an OpenAI-shaped completion with its usage, or
// with "stream": true, server-sent events, a chunk a token, pause between two, the usage in a
// last chunk when stream_options.include_usage asks for it, then "data: [DONE]". now gives
// the responses' "created"; pause returns an error when the request ends first.
func stubModel(now func() time.Time, pause func(context.Context) error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, stubMaxBody))
		var req stubRequest
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil || len(req.Messages) == 0 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "a chat completion request is JSON with messages")
			return
		}
		sum := sha256.Sum256(body)
		c := stubCompletion{id: "chatcmpl-" + hex.EncodeToString(sum[:6]), model: req.Model, created: now().Unix()}
		if c.model == "" {
			c.model = "stub"
		}
		c.answer(req)
		if !req.Stream {
			c.writeJSON(w)
			return
		}
		c.stream(r.Context(), w, req.StreamOptions != nil && req.StreamOptions.IncludeUsage, pause)
	})
	return mux
}

// stubCompletion is one answer of the stub.
type stubCompletion struct {
	id, model string
	created   int64
	words     []string // the reply, a token each
	finish    string   // "stop", or "length" when max_tokens cut it
	usage     usage
}

// answer fills in the reply to req and its usage: a prompt token per word of every message,
// and 3 per message; a reply of twice the words of the prompt, cut at max_tokens.
func (c *stubCompletion) answer(req stubRequest) {
	var last []string
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			text = string(m.Content) // an array of parts: its words as they are written
		}
		last = strings.Fields(text)
		c.usage.PromptTokens += int64(len(last)) + 3
	}
	if len(last) == 0 {
		last = []string{"…"}
	}
	n, limit := 2*c.usage.PromptTokens, int64(stubMaxReply)
	for _, max := range []*int64{req.MaxTokens, req.MaxCompletionTokens} {
		if max != nil && *max >= 0 && *max < limit {
			limit = *max
		}
	}
	c.finish = "stop"
	if n > limit {
		n, c.finish = limit, "length"
	}
	for i := range n {
		c.words = append(c.words, last[i%int64(len(last))])
	}
	c.usage.CompletionTokens = n
	c.usage.TotalTokens = c.usage.PromptTokens + n
}

// stubMessage is a message of a completion, or a stream's delta.
type stubMessage struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// stubChoice is a choice of a completion (Message) or of a stream's chunk (Delta).
type stubChoice struct {
	Index        int          `json:"index"`
	Message      *stubMessage `json:"message,omitempty"`
	Delta        *stubMessage `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
}

// stubReply is a completion, or a stream's chunk; OmitUsage leaves "usage" out of a chunk
// whose client did not ask for it.
type stubReply struct {
	ID        string       `json:"id"`
	Object    string       `json:"object"`
	Created   int64        `json:"created"`
	Model     string       `json:"model"`
	Choices   []stubChoice `json:"choices"`
	Usage     *usage       `json:"usage"`
	omitUsage bool
}

// MarshalJSON writes r, with "usage" (null in a chunk before the last) or without.
func (r stubReply) MarshalJSON() ([]byte, error) {
	type plain stubReply
	if !r.omitUsage {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		plain
		Usage *usage `json:"usage,omitempty"`
	}{plain: plain(r)})
}

// reply is a completion or chunk of c with choices and u.
func (c *stubCompletion) reply(object string, choices []stubChoice, u *usage) stubReply {
	return stubReply{ID: c.id, Object: object, Created: c.created, Model: c.model, Choices: choices, Usage: u}
}

// writeJSON answers the whole completion at once.
func (c *stubCompletion) writeJSON(w http.ResponseWriter) {
	text := strings.Join(c.words, " ")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c.reply("chat.completion",
		[]stubChoice{{Message: &stubMessage{Role: "assistant", Content: &text}, FinishReason: &c.finish}}, &c.usage))
}

// stream sends the completion as OpenAI streams it: a chunk with the role, a chunk a token, a
// chunk with the finish reason, with withUsage a chunk with no choices and the usage (every
// chunk before it has "usage": null), then [DONE]; each event flushed as it is written.
func (c *stubCompletion) stream(ctx context.Context, w http.ResponseWriter, withUsage bool, pause func(context.Context) error) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	send := func(choices []stubChoice, u *usage) bool {
		chunk := c.reply("chat.completion.chunk", choices, u)
		chunk.omitUsage = !withUsage
		b, err := json.Marshal(chunk)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	delta := func(m stubMessage, finish *string) []stubChoice {
		return []stubChoice{{Delta: &m, FinishReason: finish}}
	}
	empty := ""
	if !send(delta(stubMessage{Role: "assistant", Content: &empty}, nil), nil) {
		return
	}
	for i, word := range c.words {
		if pause(ctx) != nil {
			return // the client went away: generate no more
		}
		if i > 0 {
			word = " " + word
		}
		if !send(delta(stubMessage{Content: &word}, nil), nil) {
			return
		}
	}
	if !send(delta(stubMessage{}, &c.finish), nil) {
		return
	}
	if withUsage && !send([]stubChoice{}, &c.usage) {
		return
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// every returns a pause of d, for stubModel.
func every(d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		if d <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
