package ratelimit

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"

	"github.com/redis/go-redis/v9"
)

// A check that charges is not idempotent, and go-redis retries a command whose reply did not
// come in time (up to MaxRetries, 3 by default): a request would be charged once per attempt
// the server ran. So the store sends each script call once, whatever the client's retry
// settings, and leaves what to do about a failure to the caller — the fail mode, the fallback.
// A call that failed may still have run: then its request was charged once, never more.

// script is a Lua script run by its SHA1 digest, and by its source when the server does not
// have it (after SCRIPT FLUSH, a restart or a failover).
type script struct {
	src, sha string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// processor runs one command: every go-redis client (*redis.Client, the failover client,
// *redis.ClusterClient, *redis.Ring) is one.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// onceCmd is a command go-redis sends once: it never retries a command whose NoRetry says so
// (it routes a Cluster command after MOVED or ASK all the same, which is not a retry: the node
// that answered so did not run it).
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command again.
func (onceCmd) NoRetry() bool { return true }

// run runs s with keys and args on client, once. A client that is not a go-redis client runs
// it through redis.Script, with its own retry policy.
func (s *script) run(ctx context.Context, client redis.Scripter, keys []string, args []any) (any, error) {
	p, ok := client.(processor)
	if !ok {
		return redis.NewScript(s.src).Run(ctx, client, keys, args...).Result()
	}
	cmd := s.cmd(ctx, "evalsha", s.sha, keys, args)
	err := p.Process(ctx, cmd)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// The server did not run it: sending the source is the same call, not a retry.
		cmd = s.cmd(ctx, "eval", s.src, keys, args)
		err = p.Process(ctx, cmd)
	}
	if err != nil {
		reroute(ctx, client, err)
		return nil, err
	}
	return cmd.Val(), nil
}

// stateReloader is a client that routes by a map of the servers it can reload:
// *redis.ClusterClient.
type stateReloader interface {
	ReloadState(ctx context.Context)
}

// reroute has a Cluster client reload its map of slots after a failed call. go-redis does so
// itself when it retries on another node; a call sent once (NoRetry) would otherwise keep
// going to a dead master until the map's periodic reload, a minute later by default. The
// reload runs in the background, at most one at a time.
func reroute(ctx context.Context, client redis.Scripter, err error) {
	if r, ok := client.(stateReloader); ok && !errors.Is(err, context.Canceled) {
		r.ReloadState(ctx)
	}
}

func (s *script) cmd(ctx context.Context, name, body string, keys []string, args []any) onceCmd {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, name, body, len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	return onceCmd{redis.NewCmd(ctx, all...)}
}
