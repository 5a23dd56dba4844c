package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
)

// The holds of Limiter.Reserve that an identity has outstanding, as inspect shows them: the
// store records the holds of each policy list of an identity in a sorted set of its own,
// "prefix{identity}:h" and a digest of the list's policy tags (see holdsPattern for compact
// state), one member per hold,
// "id:estimate:at:mask:offsets" (see holds.lua in the core), scored by when it expires.

// heldList is what the holds recorded under one holds key take.
type heldList struct {
	key   string
	ours  bool  // the list of the inspected policies
	count int   // the holds recorded
	total int64 // their estimates, charged until each is settled or given back
}

// holdsPattern is the SCAN pattern of the holds keys of st's identity, and the holds key of
// the list of the policies of d, a check of them: what precedes the end of the hash tag in
// the identity's storage keys, then ":h" and a digest of the list's policy tags, limits and
// bursts (as the library's holdsTag). With compact
// state, whose hash tag other identities share, a key is the compact key of its list's first
// policy, then ":h" and the digest, and the pattern matches the lists whose first policy is
// the inspected list's: the records of the identity's other lists cannot be told from other
// identities'.
func (st *state) holdsPattern(d ratelimit.Decision) (pattern, ours string) {
	results := d.Results()
	h := fnv.New64a()
	for _, r := range results {
		readable := ratelimit.StorageKey("", "-", r.Policy, false) // "{-}:" and the policy's tag
		h.Write([]byte(readable[len("{-}:"):]))
		fmt.Fprintf(h, "\x00%d\x00%d\x00", r.Policy.Limit, r.Policy.Burst)
	}
	tag := ":h" + strconv.FormatUint(h.Sum64(), 36)
	first := ratelimit.StorageKey(st.prefix, st.identity, results[0].Policy, st.compact)
	if st.compact {
		return globEscape(first) + ":h*", first + tag
	}
	head := first[:strings.IndexByte(first, '}')+1]
	return globEscape(head) + ":h*", head + tag
}

// globEscape escapes the bytes SCAN's MATCH reads as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\^`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// holds reads the holds recorded for st's identity, one heldList per policy list, that of the
// policies of d (a check of them) first.
func (st *state) holds(ctx context.Context, client redis.UniversalClient, d ratelimit.Decision) ([]heldList, error) {
	pattern, ours := st.holdsPattern(d)
	var node redis.Cmdable = client
	if c, ok := client.(*redis.ClusterClient); ok { // every key of the identity is in its slot
		n, err := c.MasterForKey(ctx, ours)
		if err != nil {
			return nil, err
		}
		node = n
	}
	var out []heldList
	iter := node.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		members, err := node.ZRange(ctx, iter.Val(), 0, -1).Result()
		if err != nil {
			return nil, err
		}
		l := heldList{key: iter.Val(), ours: iter.Val() == ours}
		for _, m := range members {
			parts := strings.SplitN(m, ":", 3)
			if len(parts) < 3 {
				return nil, fmt.Errorf("the holds key %s holds %q, not a hold", l.key, m)
			}
			est, err := strconv.ParseInt(parts[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("the holds key %s holds %q, not a hold", l.key, m)
			}
			l.count++
			l.total += est
		}
		if l.count == 0 {
			continue
		}
		if l.ours {
			out = append([]heldList{l}, out...)
		} else {
			out = append(out, l)
		}
	}
	return out, iter.Err()
}

// writeHolds writes the holds of lists, when there are any.
func writeHolds(w io.Writer, lists []heldList) error {
	if len(lists) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nHOLDS OF\tHOLDS\tESTIMATES HELD\tSTORAGE KEY")
	for _, l := range lists {
		of := "another policy list"
		if l.ours {
			of = "these policies"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", of, l.count, l.total, l.key)
	}
	return tw.Flush()
}
