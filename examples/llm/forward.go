package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/a7d3e0dd/ratelimit/cost"
)

// Bounds of what the proxy reads of the model's replies.
const (
	// maxReply is the longest reply (not a stream) the proxy passes on: it reads a reply
	// whole, to find its usage, before sending it. A longer one is answered 502.
	maxReply = 8 << 20
	// maxEventLine is the longest line of a stream the proxy looks into for the usage; a
	// longer line passes on unchanged, unread.
	maxEventLine = 64 << 10
)

// forwarder sends a completion to the model and its answer to the client, reporting the
// tokens the answer's usage counts (cost.Report) to the guard in front, which charges them.
// An answer without a usage the proxy can read reports nothing: the estimate is charged. An
// error answer of the model (4xx, 5xx) reports 0: no tokens were used.
//
// It is a handler of its own rather than an httputil.ReverseProxy, which reads the usage as
// well (ModifyResponse can wrap the body) but panics with http.ErrAbortHandler when a client
// goes away mid-stream: the guard settles a panic as a 500, which cost.Reported charges
// nothing, so that leaving before the last chunk would make any stream free.
type forwarder struct {
	target string // the model's /v1/chat/completions
	apiKey string // the proxy's own key to it; none when ""
	client *http.Client
	log    *slog.Logger
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, ok := r.Context().Value(completionKey{}).(*completion)
	if !ok {
		writeError(w, http.StatusInternalServerError, "server_error", "the completion was not read")
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, f.target, bytes.NewReader(c.body))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "the model's address is invalid")
		return
	}
	out.Header.Set("Content-Type", "application/json")
	if accept := r.Header.Get("Accept"); accept != "" {
		out.Header.Set("Accept", accept)
	}
	if f.apiKey != "" { // the client's key is the proxy's, never sent on
		out.Header.Set("Authorization", "Bearer "+f.apiKey)
	}
	resp, err := f.client.Do(out)
	if err != nil {
		if r.Context().Err() == nil {
			f.log.Warn("the model is unreachable", "url", f.target, "error", err)
		}
		writeError(w, http.StatusBadGateway, "upstream_error", "the model is unreachable")
		return
	}
	defer resp.Body.Close()
	copyHeaders(w.Header(), resp.Header)
	switch {
	case resp.StatusCode >= 400:
		cost.Report(r.Context(), 0)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(resp.Body, maxReply))
	case isEventStream(resp.Header):
		f.stream(w, r, resp)
	default:
		f.whole(w, r, resp)
	}
}

// whole passes on a reply read whole, reporting its usage.
func (f *forwarder) whole(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	switch {
	case err != nil:
		if r.Context().Err() == nil {
			f.log.Warn("the model's reply was cut", "error", err)
		}
		writeError(w, http.StatusBadGateway, "upstream_error", "the model's reply was cut")
		return
	case len(body) > maxReply:
		writeError(w, http.StatusBadGateway, "upstream_error", "the model's reply is longer than "+strconv.Itoa(maxReply)+" bytes")
		return
	}
	if n, ok := usageOf(body); ok {
		cost.Report(r.Context(), n)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// stream passes a stream of server-sent events on unchanged, line by line, flushing at the end
// of each event, and reports the usage of its last chunk that has one, once the stream ends.
// When the client goes away the request's context ends, and with it the model's stream; a
// stream that ended before its usage reports nothing.
func (f *forwarder) stream(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	br := bufio.NewReaderSize(resp.Body, maxEventLine)
	var (
		total    int64
		reported bool
		fragment bool // the line read is the rest of one longer than the buffer
	)
	for {
		line, err := br.ReadSlice('\n')
		if !fragment && !errors.Is(err, bufio.ErrBufferFull) {
			if n, ok := eventUsage(line); ok {
				total, reported = n, true
			}
		}
		fragment = errors.Is(err, bufio.ErrBufferFull)
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				break // the client went away
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 && rc.Flush() != nil {
				break
			}
		}
		if fragment {
			continue
		}
		if err != nil {
			if err != io.EOF && r.Context().Err() == nil {
				f.log.Warn("the model's stream was cut", "error", err)
			}
			break
		}
	}
	_ = rc.Flush()
	if reported {
		cost.Report(r.Context(), total)
	}
}

// eventUsage returns the tokens of the usage a line "data: {...}" of a stream carries.
func eventUsage(line []byte) (int64, bool) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage"`)) {
		return 0, false
	}
	return usageOf(data)
}

// usageOf returns the total tokens of the "usage" of a JSON reply or chunk: total_tokens, or
// prompt_tokens + completion_tokens when it gives no total. It reports false when there is
// none, or it is malformed.
func usageOf(b []byte) (int64, bool) {
	var v struct {
		Usage *usage `json:"usage"`
	}
	if json.Unmarshal(b, &v) != nil || v.Usage == nil {
		return 0, false
	}
	u := *v.Usage
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
		return 0, false
	}
	if u.TotalTokens == 0 {
		return u.PromptTokens + u.CompletionTokens, true
	}
	return u.TotalTokens, true
}

// isEventStream reports whether a response is a stream of server-sent events.
func isEventStream(h http.Header) bool {
	t, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && t == "text/event-stream"
}

// copyHeaders copies the model's response headers but the connection's own (hop-by-hop), its
// length (the proxy writes its own) and its rate limits (the client's are the proxy's).
func copyHeaders(dst, src http.Header) {
	for name, values := range src {
		switch name {
		case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
			"Transfer-Encoding", "Upgrade", "Content-Length":
			continue
		}
		if strings.HasPrefix(name, "X-Ratelimit-") {
			continue
		}
		dst[name] = append([]string(nil), values...)
	}
}
