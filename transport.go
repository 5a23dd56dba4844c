package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/cost"
)

// Transport is an http.RoundTripper that limits the requests an http.Client sends: a client
// of a third-party API limited to 100 requests a second across your fleet takes its turn in
// one quota shared by every instance.
//
//	client := &http.Client{Transport: &ratelimit.Transport{Limiter: limiter}}
//
// Each request waits for its turn ([Limiter.WaitN] under the key Key returns, bounded by the
// request's context), then goes out through Base. The server's own answers are honoured: a
// 429 or 503 with Retry-After, or RateLimit fields (the IETF draft's) that say the quota is
// spent, hold back every later request of that key until then — the response itself is
// returned to the caller as it came, never retried. A request whose turn would come after its
// context's deadline fails at once, unsent, with an error wrapping context.DeadlineExceeded;
// one without a deadline waits, at most MaxServerWait (an hour by default) on a server's word.
//
// Under an in-flight policy ([algorithms.InFlight]) a request holds its slots while it is in
// flight: until the caller closes its response's body (as it must anyway), or at once when
// the round trip fails. Nothing renews them: choose a Window (a slot's lifetime) longer than
// a request takes.
//
// With ChargeAfter, a request whose cost the response tells — the tokens of a completion an
// LLM provider reports in its usage — waits for its estimate (Cost) to be held
// ([Limiter.Reserve]) and is charged what ChargeAfter makes of it when the caller closes the
// response's body: its status, the bytes of the body read, and what the caller reported on the
// request's context, which the response carries:
//
//	cost.Report(resp.Request.Context(), usage.TotalTokens) // then resp.Body.Close()
type Transport struct {
	// Limiter decides each request. Required.
	Limiter *Limiter
	// Key returns the identity a request is limited by, and held back by when the server says
	// to wait. nil: the request's host ("api.example.com:443" as URL.Host writes it).
	Key func(*http.Request) string
	// Cost returns the cost of a request (with ChargeAfter, its estimate). nil: 1.
	Cost func(*http.Request) int64
	// ChargeAfter, when set, charges each request what it cost once its response's body is
	// closed, as [ChargeAfter] does for a guard; nothing when the round trip fails. The
	// Limiter's policies must be able to hold (see Limiter.Reserve).
	ChargeAfter func(cost.After) int64
	// Base sends the requests. nil: http.DefaultTransport.
	Base http.RoundTripper
	// MaxServerWait bounds how long a server's answer (Retry-After, or RateLimit fields with
	// nothing left) holds back the later requests of its key: a longer wait is cut to it, so
	// a bogus Retry-After of years does not stop a client for good, and a request without a
	// deadline waits at most this long on the server's word (before its own turn in the
	// limiter). 0: an hour. Negative: every request fails, unsent.
	MaxServerWait time.Duration

	mu   sync.Mutex
	held map[string]time.Time // key → until when the server said to wait
}

// defaultMaxServerWait is a Transport's MaxServerWait unless it says otherwise.
const defaultMaxServerWait = time.Hour

// maxHeld bounds the keys a Transport holds back at once: a client of many hosts cannot make
// it grow beyond.
const maxHeld = 10_000

// RoundTrip waits for r's turn, sends it, and reads what the server says of its limits.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	key, d, err := t.admit(r)
	if err != nil {
		if r.Body != nil { // a RoundTripper closes the body, also of a request it does not send
			_ = r.Body.Close()
		}
		return nil, err
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	var meter *cost.Meter
	if t.ChargeAfter != nil { // the caller reports the cost on the request's context
		meter = new(cost.Meter)
		r = r.WithContext(cost.NewContext(cost.Detach(r.Context()), meter)) // its own: not an incoming request's
	}
	resp, err := base.RoundTrip(r)
	if d.holds() || meter != nil { // in flight until its body is closed
		s := &slots{l: t.Limiter, ctx: context.WithoutCancel(r.Context()), key: key, d: d, charge: d.Cost}
		if err != nil || resp == nil || resp.Body == nil {
			if meter != nil {
				s.charge = 0 // nothing came back: nothing is charged
				if err == nil && resp != nil {
					s.charge = t.charged(meter.After(resp.StatusCode, d.Cost))
				}
			}
			if rerr := s.release(); rerr != nil { // the slots or the hold end with their lease
				if err != nil {
					err = errors.Join(err, rerr)
				} else { // a response without a body: no error to carry it
					loggerOf(t.Limiter.store).get().Warn("ratelimit: Transport: a request's slots or hold could not be given back; they end with their lease",
						"error", rerr)
				}
			}
		} else {
			if meter != nil {
				s.after = func() int64 { return t.charged(meter.After(resp.StatusCode, d.Cost)) }
			}
			resp.Body = s.wrap(resp.Body, meter)
		}
	}
	if err == nil {
		if wait, ok := serverWait(resp, t.maxServerWait()); ok {
			now := clockOf(t.Limiter.store).Now()
			t.hold(key, now.Add(wait), now)
		}
	}
	return resp, err
}

// admit waits until r may be sent: past what a server said to wait for its key, and for the
// limiter's admission. It returns the key and the decision.
func (t *Transport) admit(r *http.Request) (string, Decision, error) {
	if t.Limiter == nil {
		return "", Decision{}, fmt.Errorf("ratelimit: Transport without a Limiter")
	}
	if t.MaxServerWait < 0 {
		return "", Decision{}, fmt.Errorf("ratelimit: Transport's MaxServerWait is %v; it must be positive (or 0 for an hour)", t.MaxServerWait)
	}
	key := r.URL.Host
	if t.Key != nil {
		key = t.Key(r)
	}
	units := int64(1)
	if t.Cost != nil {
		units = t.Cost(r)
	}
	ctx := r.Context()
	clock := clockOf(t.Limiter.store)
	if until, ok := t.heldUntil(key); ok {
		wait := until.Sub(clock.Now())
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return "", Decision{}, &opError{opWaitN, nil, fmt.Errorf("the server said to wait %v for %s, past the request's deadline: %w", wait.Round(time.Millisecond), key, context.DeadlineExceeded)}
		}
		if wait > 0 {
			if err := clock.Sleep(ctx, wait); err != nil {
				return "", Decision{}, &opError{opWaitN, nil, err}
			}
		}
	}
	decide := t.Limiter.AllowN
	if t.ChargeAfter != nil {
		decide = t.Limiter.Reserve
	}
	d, err := t.Limiter.wait(ctx, key, units, decide)
	return key, d, err
}

// charged returns what ChargeAfter makes of a, or its estimate when it returns a negative cost.
func (t *Transport) charged(a cost.After) int64 {
	if n := t.ChargeAfter(a); n >= 0 {
		return n
	}
	return a.Estimate
}

// slots are the in-flight slots, or the hold (ChargeAfter), of a request the Transport sent,
// kept until its response's body is closed.
type slots struct {
	l      *Limiter
	ctx    context.Context
	key    string
	d      Decision
	charge int64        // what the request is settled at: its cost, unless after says
	after  func() int64 // ChargeAfter's charge, asked when the body is closed; nil: charge
	once   sync.Once
	err    error
}

// releaseTimeout bounds the release of a request's slots, which no caller's deadline bounds
// (the request may have ended).
const releaseTimeout = time.Second

// release gives the slots back, once.
func (s *slots) release() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(s.ctx, releaseTimeout)
		defer cancel()
		charge := s.charge
		if s.after != nil {
			charge = s.after()
		}
		s.err = s.l.Settle(ctx, s.key, s.d, charge)
	})
	return s.err
}

// wrap returns body, giving the slots back when it is closed, and counting the bytes read into
// meter (unless nil). A body that can be written (a response of 101 Switching Protocols) stays
// one.
func (s *slots) wrap(body io.ReadCloser, meter *cost.Meter) io.ReadCloser {
	b := &releasingBody{ReadCloser: body, slots: s, meter: meter}
	if w, ok := body.(io.ReadWriteCloser); ok {
		return &releasingConn{releasingBody: b, w: w}
	}
	return b
}

// releasingBody is a response's body that gives its request's slots back when closed.
type releasingBody struct {
	io.ReadCloser
	slots *slots
	meter *cost.Meter // ChargeAfter's: the bytes read; nil: none
}

// Read reads the body, counting what it read for ChargeAfter.
func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.meter != nil {
		b.meter.Wrote(int64(n))
	}
	return n, err
}

// Close closes the body and gives the slots back; it returns the body's error, else the
// release's.
func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	if rerr := b.slots.release(); err == nil {
		err = rerr
	}
	return err
}

// releasingConn is a releasingBody that can be written: the connection of a protocol switch.
type releasingConn struct {
	*releasingBody
	w io.Writer
}

func (c *releasingConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// heldUntil returns until when the server said key's requests must wait, if it did.
func (t *Transport) heldUntil(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	until, ok := t.held[key]
	return until, ok
}

// hold holds key's requests back until until; now is the time on the limiter's clock.
func (t *Transport) hold(key string, until, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held == nil {
		t.held = map[string]time.Time{}
	}
	if len(t.held) >= maxHeld {
		for k, u := range t.held { // drop what is over, else one key: it only sends a request early
			if u.Before(now) || len(t.held) >= maxHeld {
				delete(t.held, k)
			}
		}
	}
	if until.After(t.held[key]) {
		t.held[key] = until
	}
}

// maxServerWait returns t's MaxServerWait, or its default.
func (t *Transport) maxServerWait() time.Duration {
	if t.MaxServerWait == 0 {
		return defaultMaxServerWait
	}
	return t.MaxServerWait
}

// maxSeconds bounds the seconds a server's answer is read as, so that a Duration of them
// cannot overflow.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// serverWait returns how long the server of resp says to wait before the next request, at most
// limit: its Retry-After on a 429 or 503, else the time until the quota of the IETF RateLimit
// field comes back when it says none is left.
func serverWait(resp *http.Response, limit time.Duration) (time.Duration, bool) {
	var wait time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		wait, _ = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if w, ok := rateLimitSpent(resp.Header.Values("RateLimit")); ok {
		wait = max(wait, w)
	}
	if wait <= 0 {
		return 0, false
	}
	return min(wait, limit), true
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, maxSeconds)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return at.Sub(now), true
	}
	return 0, false
}

// rateLimitSpent reads the IETF RateLimit field ("name";r=<remaining>;t=<seconds>, one item
// per policy, comma-separated) and returns the longest t of an item with r=0.
func rateLimitSpent(values []string) (time.Duration, bool) {
	var wait time.Duration
	found := false
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			var r, tt int64 = -1, -1
			for param := range strings.SplitSeq(item, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(param), "=")
				if !ok {
					continue
				}
				n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
				if err != nil || n < 0 {
					continue
				}
				switch k {
				case "r":
					r = n
				case "t":
					tt = min(n, maxSeconds)
				}
			}
			if r == 0 && tt > 0 {
				wait, found = max(wait, time.Duration(tt)*time.Second), true
			}
		}
	}
	return wait, found
}
