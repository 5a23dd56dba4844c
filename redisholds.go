package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/rediscall"
)

// reserve declares that the store keeps holds (see holdStore): check.lua's mode "6", one call
// (never merged: check_many runs checks only).
func (s *redisStore) reserve(ctx context.Context, key string, policies []Policy, h *hold, out []PolicyResult) (time.Time, error) {
	args, err := s.holdArgs(key, policies, h.cost, 6, 0, h, h.life)
	if err != nil {
		return time.Time{}, err
	}
	s.checkEviction()
	s.checkPersistence(policies)
	reply, err := s.runInts(ctx, adjustScript, args)
	if err == nil {
		return decodeCheck(reply, out[:len(policies)])
	}
	return time.Time{}, fmt.Errorf("ratelimit: redis reserve: %w", err)
}

// settle declares that the store keeps holds (see holdStore): check.lua's mode "7".
func (s *redisStore) settle(ctx context.Context, key string, policies []Policy, h *hold, actual int64) (bool, error) {
	args, err := s.holdArgs(key, policies, actual, 7, h.at.UnixMicro(), h, h.cost)
	if err != nil {
		return false, err
	}
	args = append(args, h.mask, offsetsText(h.offs))
	reply, err := s.runInts(ctx, adjustScript, args)
	if err == nil && (len(reply) != 2 || reply[0] != 0 && reply[0] != 1) {
		err = fmt.Errorf("%w: redis settle: got %v, want the hold's state and the time", errBadReply, reply)
	}
	if err != nil {
		return false, fmt.Errorf("ratelimit: redis settle: %w", err)
	}
	return reply[0] == 1, nil
}

// holdArgs returns the arguments of a call of mode 6 or 7 (see holds.lua): a check's, with the
// list's holds key after the policies' keys, then the hold's id, n (its lifetime or its
// estimate), the record's lifetime and the channel of announcements.
func (s *redisStore) holdArgs(key string, policies []Policy, cost int64, mode int, at int64, h *hold, n int64) ([]any, error) {
	args, err := s.scriptArgs(key, policies, cost, mode, at)
	if err != nil {
		return nil, err
	}
	out := withHoldsKey(args, len(policies), s.holdsKey(key, policies, h.tag), 6)
	var channel any = ""
	if s.compact {
		channel = s.forgets // compact keys hold no prefix to name the channel by
	}
	return append(out, h.id, n, h.keep, channel), nil
}

// withHoldsKey returns the arguments of a call with the key holds inserted after its k keys,
// and counted with them, with room for extra more arguments.
func withHoldsKey(args []any, k int, holds string, extra int) []any {
	out := make([]any, 0, len(args)+1+extra)
	out = append(out, args[:rediscall.Head+k]...)
	out = append(out, &holds)
	out = append(out, args[rediscall.Head+k:]...)
	out[2] = k + 1
	return out
}

// holdsKey is the key of the record of the holds of policies (tag: their holdsTag) for
// identity: its prefix and identity in braces, the Cluster hash tag of every key of the
// identity, then ":h" and the tag: "rl:{user:42}:h1x2y3z". With compact state, whose hash tag
// is four characters of a digest that other identities share, it is the compact key of the
// list's first policy (the hash tag and a digest of the identity) followed by ":h" and the tag:
// no other identity's record.
func (s *redisStore) holdsKey(identity string, policies []Policy, tag string) string {
	if s.compact {
		return StorageKey(s.prefix, identity, policies[0], true) + ":h" + tag
	}
	var buf [160]byte
	b := append(buf[:0], s.prefix...)
	b = append(b, '{')
	b = appendStoredIdentity(b, identity)
	b = append(b, "}:h"...)
	return string(append(b, tag...))
}
