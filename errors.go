package ratelimit

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
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
	// ErrStore is what every store failure is, whatever its kind: errors.Is(err, ErrStore)
	// asks "did the store fail?". Each failure also has exactly one of the kinds below, and
	// [ErrorKind] names it.
	ErrStore = errors.New("ratelimit: store failed")
	// ErrStoreUnavailable is the kind of a store that cannot be reached: Redis refusing
	// connections, a connection reset or closed, no route to it, a closed client, a server
	// still loading its data or without a master; a dial that failed is of this kind even when
	// the deadline then passed. A call the circuit breaker did not make ([ErrBreakerOpen]) is
	// of this kind too.
	ErrStoreUnavailable = &storeKind{"unavailable"}
	// ErrStoreTimeout is the kind of a store call that did not answer within its deadline
	// while the store could be reached.
	ErrStoreTimeout = &storeKind{"timeout"}
	// ErrStoreBusy is the kind of a Redis busy running a script or function (a BUSY reply).
	ErrStoreBusy = &storeKind{"busy"}
	// ErrStoreOOM is the kind of a Redis at its maxmemory that refuses writes (an OOM reply).
	ErrStoreOOM = &storeKind{"oom"}
	// ErrStoreReadOnly is the kind of a write sent to a read-only replica (a READONLY reply),
	// typically a former master just after a failover.
	ErrStoreReadOnly = &storeKind{"readonly"}
	// ErrStoreScript is the kind of a failure of the limiter's own code on the server: an
	// error raised by the function or script, or a reply the store cannot decode.
	ErrStoreScript = &storeKind{"script"}
	// ErrStoreOther is the kind of any other store failure: an error reply of another kind
	// (NOPERM, WRONGPASS, a Cluster that is down), or an error of a store written outside
	// this package.
	ErrStoreOther = &storeKind{"other"}
)

// storeKind is a kind of store failure; every kind is also [ErrStore].
type storeKind struct{ label string }

func (k *storeKind) Error() string { return "ratelimit: store " + k.label }
func (k *storeKind) Unwrap() error { return ErrStore }

// ErrorKind returns the label of err's kind: "unavailable", "timeout", "busy", "oom",
// "readonly", "script" or "other" for a store failure ([ErrStore]); "bad_key" or "bad_cost"
// for a malformed request; "" for nil or an error of no kind (a client going away). Logs and
// the metrics modules name kinds with it, so they agree with errors.Is.
func ErrorKind(err error) string {
	var k *storeKind
	switch {
	case err == nil:
		return ""
	case errors.As(err, &k):
		return k.label
	case errors.Is(err, ErrBadKey):
		return "bad_key"
	case errors.Is(err, ErrBadCost):
		return "bad_cost"
	}
	return ""
}

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
	if k, ok := e.kind.(*storeKind); ok { // the kind first: "store: unavailable: ..."
		msg = k.label + ": " + strings.TrimPrefix(msg, "store "+k.label+": ")
	}
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

// kinded is a store error given its kind below the guard: its text is the cause's.
type kinded struct {
	kind *storeKind
	err  error
}

func (e *kinded) Error() string   { return e.err.Error() }
func (e *kinded) Unwrap() []error { return []error{e.kind, e.err} }

// storeError gives a store's error its kind (see [ErrorKind]). The request's own
// cancellation keeps no kind: a client going away is no store failure.
func storeError(op string, err error) error {
	if err == nil {
		return nil
	}
	var (
		oe *opError
		k  *storeKind
	)
	switch {
	case errors.As(err, &oe) && oe.kind != nil:
		return err
	case errors.As(err, &k):
		return &opError{op, k, err}
	case errors.Is(err, context.Canceled):
		return &opError{op, nil, err}
	}
	return &opError{op, kindOf(err), err}
}

// kindOf classifies a store error that has no kind yet.
func kindOf(err error) *storeKind {
	var (
		reply redis.Error
		ne    net.Error
		op    *net.OpError
	)
	switch {
	case errors.As(err, &reply):
		return replyKind(reply.Error())
	case errors.As(err, &op) && op.Op == "dial":
		return ErrStoreUnavailable // refused, unreachable, or no answer to the dial itself
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return ErrStoreTimeout // every connection busy: a slow Redis, or too small a pool
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, redis.ErrClosed):
		return ErrStoreUnavailable
	case errors.Is(err, errBadReply):
		return ErrStoreScript
	}
	return ErrStoreOther
}

// replyKind classifies an error reply of Redis by its prefix.
func replyKind(msg string) *storeKind {
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "BUSY":
		return ErrStoreBusy
	case "OOM":
		return ErrStoreOOM
	case "READONLY":
		return ErrStoreReadOnly
	case "LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN":
		return ErrStoreUnavailable
	case "ERR":
		// An error raised by the library's own code, or the server failing to run it.
		if strings.Contains(msg, "script") || strings.Contains(msg, "function") || strings.Contains(msg, "user_function") {
			return ErrStoreScript
		}
	}
	return ErrStoreOther
}

// errBadReply is the cause of a reply the store cannot decode.
var errBadReply = errors.New("ratelimit: malformed reply")
