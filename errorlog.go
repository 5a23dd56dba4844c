package ratelimit

import (
	"errors"
	"log/slog"
	"sync/atomic"
)

// errorLog is the default error handler: it logs with log/slog, at most once a second for
// each of two classes, the requests a client made wrong (ErrBadRequest: answered 400) and
// every other failure (the store's, above all), so that a client that sends one bad request a
// second cannot keep a store outage out of the log.
type errorLog struct {
	clock    Clock
	failOpen bool
	log      logs
	classes  [2]errorClass // the client's errors, the others
}

// errorClass is what an errorLog keeps of one class of errors.
type errorClass struct {
	last    atomic.Int64 // Unix second of the last log
	dropped atomic.Int64 // errors not logged since
}

func (l *errorLog) report(r Request, err error) {
	c := &l.classes[1]
	if errors.Is(err, ErrBadRequest) {
		c = &l.classes[0]
	}
	now, last := l.clock.Now().Unix(), c.last.Load()
	if now == last || !c.last.CompareAndSwap(last, now) {
		c.dropped.Add(1)
		return
	}
	msg, kind, dropped := l.message(err), errorKind(err), c.dropped.Swap(0)
	if kind == "" { // an error of no kind, such as a Resolver's failure: no kind to name
		l.log.get().LogAttrs(r.Context(), slog.LevelWarn, msg, slog.String("error", err.Error()), slog.Int64("not_logged_since", dropped))
		return
	}
	l.log.get().LogAttrs(r.Context(), slog.LevelWarn, msg, slog.String("kind", kind),
		slog.String("error", err.Error()), slog.Int64("not_logged_since", dropped))
}

// message says what the guard did about err.
func (l *errorLog) message(err error) string {
	var op *opError
	switch {
	case errors.As(err, &op) && op.op == opResolve: // whatever the error says, no store was called
		return "ratelimit: the Resolver failed; the limiter's own policies decide the request, and the key's others while the failure is kept (a second, or the Resolver's TTL if shorter)"
	case errors.As(err, &op) && op.kind == ErrBadRequest && op.op == opCost:
		return "ratelimit: request answered 400: its cost is negative"
	case errors.As(err, &op) && op.op == opSettle:
		return "ratelimit: a request's hold could not be settled after its handler; the store gives it back when its lifetime ends, and the request is charged nothing"
	case errors.Is(err, ErrBadRequest):
		return "ratelimit: request answered 400: its key could not be read"
	case errors.As(err, &op) && op.op == opRefund:
		return "ratelimit: a request could not be refunded after its handler"
	case errors.As(err, &op) && op.op == opRelease:
		return "ratelimit: a request's in-flight slots could not be released; they end with their lease"
	case errors.As(err, &op) && op.op == opRenew:
		return "ratelimit: a request's in-flight slots could not be renewed"
	case !l.failOpen:
		return "ratelimit: the store failed; the request was refused (fail-closed)"
	case errors.As(err, &op) && op.op == opFallback:
		return "ratelimit: the store failed; the local fallback decided the request under this instance's share of the limits"
	}
	return "ratelimit: the store failed; the request was let through unlimited (fail-open)"
}
