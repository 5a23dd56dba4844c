package observe

import "errors"

// errorKinds are the labels of ErrorKinds, in its order.
var errorKinds = [...]string{"unavailable", "timeout", "breaker_open", "busy", "oom", "readonly", "script", "other"}

// ErrorKinds returns the kinds of a store failure, as [ErrorKind] names them:
//
//   - "unavailable": the store cannot be reached: Redis refusing connections, a connection
//     reset or closed, no route to it, a closed client, a server still loading its data or
//     without a master, a Cluster that is down or a slot still moving after the store's
//     resends (LOADING, MASTERDOWN, CLUSTERDOWN, TRYAGAIN); a dial that failed is of this kind
//     even when the deadline then passed;
//   - "timeout": a call did not answer within its deadline while the store could be reached;
//   - "breaker_open": the call was not made: the store's circuit breaker is open;
//   - "busy": Redis is busy running a script or function (a BUSY reply);
//   - "oom": Redis is at its maxmemory and refuses writes (an OOM reply);
//   - "readonly": a write went to a read-only replica (a READONLY reply), typically a former
//     master just after a failover;
//   - "script": the limiter's own code failed on the server, or its reply could not be read;
//   - "other": any other failure: an error reply of another kind (NOPERM, WRONGPASS), or an
//     error of a store that does not name its kinds.
//
// A metrics module creates its series from them.
func ErrorKinds() []string { return append([]string(nil), errorKinds[:]...) }

// ErrorKind returns the label of err's kind: one of [ErrorKinds] for a store failure
// (ratelimit.ErrStore), "bad_request" for a request whose key or cost cannot be used
// (ratelimit.ErrBadRequest), "" for nil or an error of no kind (a client going away). Logs and
// the metrics modules name kinds with it.
//
// An error names its kind with a method ErrorKind() string, found with errors.As: the errors
// of this module's stores and guards have it, and so may those of a store written elsewhere.
func ErrorKind(err error) string {
	if err == nil {
		return ""
	}
	var k interface{ ErrorKind() string }
	if errors.As(err, &k) {
		return k.ErrorKind()
	}
	return ""
}
