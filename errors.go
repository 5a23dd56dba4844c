package ratelimit

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// Errors of a [Limiter] or a [Guard] that is not a misconfiguration wrap one of these, so
// callers tell them apart with errors.Is, never by their text; observe.ErrorKind names the
// kind of each, as the logs and the metrics modules do. The cause stays wrapped too: a store
// timeout wraps context.DeadlineExceeded or the client's i/o timeout.
var (
	// ErrNoKey is returned by a [KeyFunc] when the request carries no key of its kind. The
	// guard then limits the request by its client IP, or refuses it (see Access.MissingKey);
	// it never lets it through unlimited.
	ErrNoKey = errors.New("ratelimit: request has no key")
	// ErrBadRequest is what a request the limiter cannot count is: its key is unusable (empty,
	// longer than 4096 bytes, or one a key function could not read: a malformed proxy header,
	// a repeated API-key header) or its cost negative. The guard answers it 400 Bad Request
	// without asking the store, whatever the fail mode.
	ErrBadRequest = errors.New("ratelimit: bad request")
	// ErrStore is what every store failure is, whatever its kind: errors.Is(err, ErrStore)
	// asks "did the store fail?". Each failure also has exactly one kind, which
	// observe.ErrorKind names: unavailable, timeout, breaker_open, busy, oom, readonly, script
	// or other (see observe.ErrorKinds).
	ErrStore = errors.New("ratelimit: store failed")
)

// The kinds of store failure; observe.ErrorKinds says what each is.
var (
	kindUnavailable = &storeKind{"unavailable"}
	kindTimeout     = &storeKind{"timeout"}
	kindBreakerOpen = &storeKind{"breaker_open"}
	kindBusy        = &storeKind{"busy"}
	kindOOM         = &storeKind{"oom"}
	kindReadOnly    = &storeKind{"readonly"}
	kindScript      = &storeKind{"script"}
	kindOther       = &storeKind{"other"}
)

// storeKind is a kind of store failure; every kind is also [ErrStore].
type storeKind struct{ label string }

func (k *storeKind) Error() string { return "ratelimit: store " + k.label }
func (k *storeKind) Unwrap() error { return ErrStore }

// ErrorKind names the kind for observe.ErrorKind.
func (k *storeKind) ErrorKind() string { return k.label }

// errorKind returns the label of err's kind (see observe.ErrorKind).
func errorKind(err error) string { return observe.ErrorKind(err) }

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
	opSettle  = "store, settling"
	opWait    = "shaping wait"
	opSlot    = "waiting for an in-flight slot"
	// opFallback names a store failure on which the local fallback decided.
	opFallback = "store, decided by the local fallback (WithFallback)"
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

// ErrorKind names the error's kind for observe.ErrorKind.
func (e *opError) ErrorKind() string {
	switch k := e.kind.(type) {
	case *storeKind:
		return k.label
	case nil:
		return ""
	}
	return "bad_request"
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

func (e *kinded) Error() string     { return e.err.Error() }
func (e *kinded) ErrorKind() string { return e.kind.label }
func (e *kinded) Unwrap() []error   { return []error{e.kind, e.err} }

// storeError gives a store's error its kind (see observe.ErrorKind). The request's own
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
		if oe.op == "" && op != "" { // a refusal that names no operation (the open breaker's): this one
			return &opError{op, oe.kind, oe.err}
		}
		return err
	case errors.As(err, &k):
		return &opError{op, k, err}
	case errors.Is(err, context.Canceled):
		return &opError{op, nil, err}
	}
	return &opError{op, kindOf(err), err}
}

// kinds are the kinds of store failure by label.
var kinds = map[string]*storeKind{}

func init() {
	for _, k := range []*storeKind{kindUnavailable, kindTimeout, kindBreakerOpen, kindBusy, kindOOM, kindReadOnly, kindScript, kindOther} {
		kinds[k.label] = k
	}
}

// kindOf classifies a store error that has no kind yet. An error of a store written elsewhere
// may name its kind, with a method ErrorKind() string returning one of observe.ErrorKinds.
func kindOf(err error) *storeKind {
	var (
		reply redis.Error
		ne    net.Error
		op    *net.OpError
		named interface{ ErrorKind() string }
	)
	switch {
	case errors.As(err, &named) && kinds[named.ErrorKind()] != nil:
		return kinds[named.ErrorKind()]
	case errors.As(err, &reply):
		return replyKind(reply.Error())
	case errors.As(err, &op) && op.Op == "dial":
		return kindUnavailable // refused, unreachable, or no answer to the dial itself
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return kindTimeout // every connection busy: a slow Redis, or too small a pool
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, redis.ErrClosed):
		return kindUnavailable
	case errors.Is(err, errBadReply):
		return kindScript
	}
	return kindOther
}

// replyKind classifies an error reply of Redis by its prefix.
func replyKind(msg string) *storeKind {
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "BUSY":
		return kindBusy
	case "OOM":
		return kindOOM
	case "READONLY":
		return kindReadOnly
	case "LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN":
		return kindUnavailable
	case "ERR":
		// An error raised by the library's own code, or the server failing to run it.
		if strings.Contains(msg, "script") || strings.Contains(msg, "function") || strings.Contains(msg, "user_function") {
			return kindScript
		}
	}
	return kindOther
}

// errBadReply is the cause of a reply the store cannot decode.
var errBadReply = errors.New("ratelimit: malformed reply")
