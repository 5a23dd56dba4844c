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
		{replyError("BUSY Redis is busy running a script."), kindBusy},
		{replyError("OOM command not allowed when used memory > 'maxmemory'."), kindOOM},
		{replyError("READONLY You can't write against a read only replica."), kindReadOnly},
		{replyError("LOADING Redis is loading the dataset in memory"), kindUnavailable},
		{replyError("MASTERDOWN Link with MASTER is down"), kindUnavailable},
		{replyError("CLUSTERDOWN The cluster is down"), kindUnavailable},
		{replyError("ERR user_function:12: Script attempted to access nonexistent global variable"), kindScript},
		{replyError("ERR Error running script (call to f_1): bad argument"), kindScript},
		{replyError("NOPERM this user has no permissions"), kindOther},
		{fmt.Errorf("x: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), kindUnavailable},
		{fmt.Errorf("x: %w", &net.OpError{Op: "read", Err: syscall.ECONNRESET}), kindUnavailable},
		{io.EOF, kindUnavailable},
		{redis.ErrClosed, kindUnavailable},
		{context.DeadlineExceeded, kindTimeout},
		{redis.ErrPoolTimeout, kindTimeout},
		{fmt.Errorf("%w: reply is a string", errBadReply), kindScript},
		{errors.New("something else"), kindOther},
	} {
		if got := kindOf(tc.err); got != tc.want {
			t.Errorf("kindOf(%v) = %s, want %s", tc.err, got.label, tc.want.label)
		}
	}
}
