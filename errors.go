package ratelimit

import (
	"context"
	"errors"
	"net"
	"strings"
)

// Error kinds. Every error of a [Limiter] or a [Guard] that is not a misconfiguration wraps one
// of them, so callers tell them apart with errors.Is, never by their text. The cause stays
// wrapped too: a store timeout wraps the cause, context.DeadlineExceeded or the client's i/o timeout.
var (
	// ErrNoKey is returned by a [KeyFunc] when the request carries no key of its kind. The
	// guard then limits the request by its client IP, or refuses it (see [RejectMissingKey]);
	// it never lets it through unlimited.
	ErrNoKey = errors.New("ratelimit: request has no key")
	// ErrBadKey is the kind of an unusable key: empty, longer than 4096 bytes, or one a key
	// function could not read (a malformed proxy header, a repeated API-key header). The guard
	// answers such a request 400 Bad Request.
	ErrBadKey = errors.New("ratelimit: bad key")
	// ErrBadCost is the kind of a negative cost. The guard answers such a request 400.
	ErrBadCost = errors.New("ratelimit: bad cost")
	// ErrStoreUnavailable is the kind of a store failure other than a timeout: Redis refusing
	// connections, an error reply, a malformed reply.
	ErrStoreUnavailable = errors.New("ratelimit: store unavailable")
	// ErrStoreTimeout is the kind of a store call that did not answer within its deadline.
	ErrStoreTimeout = errors.New("ratelimit: store timeout")
)

// opError is an error of the limiter or the guard: what it was doing, its kind, and the cause.
type opError struct {
	op   string
	kind error // one of the Err kinds, or nil
	err  error
}

// Operations the guard names in its errors, and its error log reads.
const (
	opKey     = "key"
	opCost    = "cost"
	opCheck   = "store"
	opRefund  = "store, refunding after the handler"
	opRelease = "store, releasing in-flight slots"
	opRenew   = "store, renewing in-flight slots"
	opWait    = "shaping wait"
	opSlot    = "waiting for an in-flight slot"
)

func (e *opError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "ratelimit: ")
	if e.op == "" {
		return "ratelimit: " + msg
	}
	return "ratelimit: " + e.op + ": " + msg
}

func (e *opError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// storeError gives a store's error its kind: a timeout when the deadline passed (go-redis
// reports an i/o timeout), else unavailable. The request's own cancellation keeps no kind: a
// client going away is no store failure.
func storeError(op string, err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	switch {
	case errors.Is(err, ErrStoreTimeout) || errors.Is(err, ErrStoreUnavailable):
		return err
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &opError{op, ErrStoreTimeout, err}
	case errors.Is(err, context.Canceled):
		return &opError{op, nil, err}
	}
	return &opError{op, ErrStoreUnavailable, err}
}
