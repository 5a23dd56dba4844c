package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/redis/rueidis"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
)

// protoStore is the prototype measured here: a [ratelimit.Store] whose every check is one
// FCALL of the core's Redis Function, sent once through rueidis (which retries no FCALL: it is
// not a read-only command), the library loaded on "Function not found" and the call then sent
// again. It has what the measurement needs and no more: one server (no Cluster routing of the
// load), no EVALSHA fallback, no Reset.
//
// A store outside the root package cannot read a policy's compiled ARGV
// (compiledPolicy.redisArgs), so policyArgs computes it again from the policy's fields and
// the algorithm's code, which the internal package algo gives to any package under the
// module's path.
type protoStore struct {
	client   rueidis.Client
	prefix   string
	lib, fn  string
	maxLoads int
}

var _ ratelimit.Store = (*protoStore)(nil)

func newProtoStore(client rueidis.Client, prefix string) *protoStore {
	lib, fn := redisscripts.Function()
	return &protoStore{client: client, prefix: prefix, lib: lib, fn: fn, maxLoads: 3}
}

// Check implements [ratelimit.Store].
func (s *protoStore) Check(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, charge bool, out []ratelimit.PolicyResult) (time.Time, error) {
	mode := "0"
	if charge {
		mode = "1"
	}
	reply, err := s.fcall(ctx, key, policies, cost, mode, "0")
	if err != nil {
		return time.Time{}, fmt.Errorf("rueidis store: check: %w", err)
	}
	if len(reply) != 6*len(policies)+1 {
		return time.Time{}, fmt.Errorf("rueidis store: check: got %d integers, want %d", len(reply), 6*len(policies)+1)
	}
	var row [6]int64
	for i := range policies {
		for j := range row {
			if row[j], err = reply[6*i+j].AsInt64(); err != nil {
				return time.Time{}, fmt.Errorf("rueidis store: check: reply element %d: %w", 6*i+j, err)
			}
		}
		out[i].Allowed, out[i].Remaining = row[0] == 1, row[1]
		out[i].ResetAfter, out[i].RetryAfter, out[i].Delay = micros(row[2]), micros(row[3]), micros(row[4])
	}
	at, err := reply[len(reply)-1].AsInt64()
	if err != nil {
		return time.Time{}, fmt.Errorf("rueidis store: check: the time: %w", err)
	}
	return time.UnixMicro(at), nil
}

// Refund implements [ratelimit.Store].
func (s *protoStore) Refund(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, at time.Time) error {
	_, err := s.fcall(ctx, key, policies, cost, "2", strconv.FormatInt(at.UnixMicro(), 10))
	if err != nil {
		return fmt.Errorf("rueidis store: refund: %w", err)
	}
	return nil
}

// Reset implements [ratelimit.Store]: not in the prototype.
func (s *protoStore) Reset(context.Context, string, []ratelimit.Policy) error {
	return errors.New("rueidis store: the prototype has no Reset")
}

// fcall sends check.lua's FCALL once, loading the library first where the server lacks it.
func (s *protoStore) fcall(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, mode, at string) ([]rueidis.RedisMessage, error) {
	cmd, err := s.cmd(key, policies, cost, mode, at)
	if err != nil {
		return nil, err
	}
	reply, err := s.client.Do(ctx, cmd).ToArray()
	for range s.maxLoads {
		if !functionMissing(err) {
			break
		}
		err = s.client.Do(ctx, s.client.B().FunctionLoad().FunctionCode(s.lib).Build()).Error()
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			return nil, err
		}
		if cmd, err = s.cmd(key, policies, cost, mode, at); err != nil { // rueidis recycles a sent command
			return nil, err
		}
		reply, err = s.client.Do(ctx, cmd).ToArray()
	}
	return reply, err
}

// cmd builds the FCALL: the storage keys, then check.lua's ARGV, every number written into
// one buffer that the command's strings point into.
func (s *protoStore) cmd(key string, policies []ratelimit.Policy, cost int64, mode, at string) (rueidis.Completed, error) {
	b := s.client.B().Fcall().Function(s.fn).Numkeys(int64(len(policies)))
	k := b.Key(ratelimit.StorageKey(s.prefix, key, policies[0], false))
	for i := 1; i < len(policies); i++ {
		k = k.Key(ratelimit.StorageKey(s.prefix, key, policies[i], false))
	}
	buf := make([]byte, 0, 20+48*len(policies))
	a := k.Arg("0", str(&buf, cost), mode, at)
	for i := range policies {
		p := &policies[i]
		code, err := codeOf(p)
		if err != nil {
			return rueidis.Completed{}, err
		}
		shadow := "0"
		if p.Shadow {
			shadow = "1"
		}
		a = a.Arg(code, str(&buf, p.Limit), str(&buf, p.Window.Microseconds()), str(&buf, p.Burst), shadow)
	}
	return a.Build(), nil
}

// str appends n to *buf, which never grows past its capacity, and returns it as a string that
// points into it; a number that does not fit gets a string of its own.
func str(buf *[]byte, n int64) string {
	b := *buf
	start := len(b)
	b = strconv.AppendInt(b, n, 10)
	if cap(b) != cap(*buf) { // it grew: the strings already made point into the old array
		return strconv.FormatInt(n, 10)
	}
	*buf = b
	return unsafe.String(&b[start], len(b)-start)
}

// policyArgs returns p's ARGV of check.lua: one string, "code:limit:window:burst:shadow" (the
// algorithm's code, the limit, the window in µs, the burst (0: the limit) and the shadow flag).
func policyArgs(p ratelimit.Policy) ([]string, error) {
	code, err := codeOf(&p)
	if err != nil {
		return nil, err
	}
	shadow := "0"
	if p.Shadow {
		shadow = "1"
	}
	return []string{code + ":" + strconv.FormatInt(p.Limit, 10) + ":" + strconv.FormatInt(p.Window.Microseconds(), 10) + ":" +
		strconv.FormatInt(p.Burst, 10) + ":" + shadow}, nil
}

// codeOf returns the code of p's algorithm (nil: GCRA, as ratelimit.New fills it in).
func codeOf(p *ratelimit.Policy) (string, error) {
	var a algorithms.Algorithm = algorithms.GCRA{}
	if p.Algorithm != nil {
		a = p.Algorithm
	}
	m := algo.Of(a)
	if m == nil {
		return "", fmt.Errorf("rueidis store: %#v is not an algorithm of package algorithms", p.Algorithm)
	}
	return m.Code(), nil
}

// micros converts check.lua's microseconds, -1 being never.
func micros(us int64) time.Duration {
	if us == -1 {
		return algorithms.Never
	}
	return time.Duration(us) * time.Microsecond
}

// functionMissing reports whether the server answered that it has no such function: it ran
// nothing.
func functionMissing(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), "ERR Function not found")
}
