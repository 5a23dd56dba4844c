package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyError is an error reply of Redis, as go-redis reports one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

// Every cause a store meets has one kind.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *storeKind
	}{
		{replyError("BUSY Redis is busy running a script."), ErrStoreBusy},
		{replyError("OOM command not allowed when used memory > 'maxmemory'."), ErrStoreOOM},
		{replyError("READONLY You can't write against a read only replica."), ErrStoreReadOnly},
		{replyError("LOADING Redis is loading the dataset in memory"), ErrStoreUnavailable},
		{replyError("MASTERDOWN Link with MASTER is down"), ErrStoreUnavailable},
		{replyError("CLUSTERDOWN The cluster is down"), ErrStoreUnavailable},
		{replyError("ERR user_function:12: Script attempted to access nonexistent global variable"), ErrStoreScript},
		{replyError("ERR Error running script (call to f_1): bad argument"), ErrStoreScript},
		{replyError("NOPERM this user has no permissions"), ErrStoreOther},
		{fmt.Errorf("x: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), ErrStoreUnavailable},
		{fmt.Errorf("x: %w", &net.OpError{Op: "read", Err: syscall.ECONNRESET}), ErrStoreUnavailable},
		{io.EOF, ErrStoreUnavailable},
		{redis.ErrClosed, ErrStoreUnavailable},
		{context.DeadlineExceeded, ErrStoreTimeout},
		{redis.ErrPoolTimeout, ErrStoreTimeout},
		{fmt.Errorf("%w: reply is a string", errBadReply), ErrStoreScript},
		{errors.New("something else"), ErrStoreOther},
	} {
		if got := kindOf(tc.err); got != tc.want {
			t.Errorf("kindOf(%v) = %s, want %s", tc.err, got.label, tc.want.label)
		}
	}
}
