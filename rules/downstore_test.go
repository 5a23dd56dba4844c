package rules

import (
	"context"
	"errors"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// downStore is a store that is down: every call fails. It holds in-flight slots (Renew), so
// that an in-flight policy may run over it, and is local, so that no call is timed.
type downStore struct{}

var errStoreDown = errors.New("rules: the test store is down")

func (downStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errStoreDown
}
func (downStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errStoreDown
}
func (downStore) Reset(context.Context, string, []ratelimit.Policy) error { return errStoreDown }
func (downStore) Renew(context.Context, string, []ratelimit.Policy, int64, time.Time) (time.Time, error) {
	return time.Time{}, errStoreDown
}
func (downStore) Local() bool { return true }
