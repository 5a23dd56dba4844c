package rules

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisKey is the key of the rules in Redis unless a deployment picks another: the hash
// [Push] writes and [Fetch] reads, and the channel on which Push announces each version.
const DefaultRedisKey = "rl:rules"

// ErrNoRules is the error of [Fetch] and [StoredVersion] when the key holds no rules. Test for
// it with errors.Is.
var ErrNoRules = errors.New("rules: no rules stored")

// The fields of the hash.
const (
	fieldVersion  = "version"
	fieldName     = "name"
	fieldDocument = "document"
	fieldPushedAt = "pushed_at"
	fieldForced   = "forced"
	fieldPrevious = "previous"
)

// storedFields are the fields every stored document has, in the order errors name them.
var storedFields = []string{fieldVersion, fieldName, fieldDocument, fieldPushedAt}

//go:embed push.lua
var pushLua string

var pushScript = redis.NewScript(pushLua)

// Stored is a rules document as [Push] keeps it in Redis, read back by [Fetch].
type Stored struct {
	// Set is the document, parsed and validated again as it is read.
	Set *Set
	// Version is the document's version: Set.Version().
	Version string
	// Name is the file name the document was pushed under. It chose the format, and the
	// document's errors name it.
	Name string
	// Document is the document as pushed, byte for byte.
	Document []byte
	// PushedAt is when the document was pushed, on the Redis server's clock, to the
	// millisecond.
	PushedAt time.Time
	// Forced reports a push made with PushOptions.Force, and Previous the version it
	// replaced ("" for none).
	Forced   bool
	Previous string
}

// Push validates a rules document as [Parse] does (name and opts are Parse's) and stores it
// in Redis at key, usually [DefaultRedisKey], for every instance to load; it returns the
// parsed Set. The document must say its version in its version: field ([ErrNoVersion]
// otherwise, forced or not): push orders versions ([CompareVersions]), and the hash of the
// rules that stands for the version of a document without one has no order. It refuses what
// would silently roll back limiting, a version that is not newer than the one stored
// ([ErrNotNewer]; [PushWith] with Force overrides), and, forced or not, a version an instance
// of the fleet runs as read from the stored document when the document says other than what
// the instance runs ([ErrNotNewer], naming the instances; [Instance.IgnoresPushOf]): it would
// never read it, as happens when the key was emptied (deleted, evicted, a Redis restarted
// without its data) and any version passes the stored one's checks. The same document again
// is pushed. A document without rules is refused by Parse ([ErrEmptyRules]) unless it says
// allow_empty: true. The hash at key is replaced whole
// and the version published on the channel key, in one atomic script call (EVALSHA, EVAL when
// the server lacks the script) that also makes the checks: a reader sees the previous
// document or this one, never a mixture, and of two pushes over one version only one wins.
//
// A document that does not parse writes nothing: the error is Parse's [Errors], and the rules
// in Redis stay as they were. Neither does a refused push.
func Push(ctx context.Context, client redis.UniversalClient, key, name string, data []byte, opts ...ParseOption) (*Set, error) {
	return PushWith(ctx, client, key, name, data, PushOptions{}, opts...)
}

// PushOptions are what an operator may say about a push (see [PushWith]).
type PushOptions struct {
	// IfVersion, when set, pushes only over the stored version *IfVersion ("" for a key that
	// holds no rules): the version the operator started from (compare-and-set). Otherwise
	// [ErrVersionChanged].
	IfVersion *string
	// Force pushes whatever is stored, older or newer: a deliberate rollback. The push is
	// recorded as forced, and every instance that applies it says so in its log. It never
	// pushes the version already stored, nor, as no push does, a version an instance of the
	// fleet runs from the stored document (one that refused a newer version since) with other
	// rules: instances running that version would not read another document under it; give
	// a changed document a new version. Nor does it push a document without a version
	// ([ErrNoVersion]), or without rules that does not say allow_empty: true ([ErrEmptyRules]).
	Force bool
}

// Errors of a push refused; test for them with errors.Is.
var (
	// ErrEmptyRules is the kind of the error of [Parse] — so of Open, Push, and a watcher's
	// refusal — for a document without rules that does not say allow_empty: true: every
	// instance would stop limiting.
	ErrEmptyRules = errors.New("rules: the document has no rules: every instance would stop limiting")
	// ErrNotNewer is the error of a push of a version that is not newer than the stored one.
	ErrNotNewer = errors.New("rules: the version is not newer than the stored one")
	// ErrNoVersion is the error of a push of a document without a version: field, and of
	// [Fetch] of such a document stored by other means: its version would be a hash of its
	// rules ([Set.Versioned]), which has no order, so no push could say whether it is newer.
	ErrNoVersion = errors.New("rules: the document has no version")
	// ErrVersionChanged is the error of a push whose IfVersion is not the stored version.
	ErrVersionChanged = errors.New("rules: the stored version is not the one the push started from")
)

// PushWith is [Push] with the operator's options o.
func PushWith(ctx context.Context, client redis.UniversalClient, key, name string, data []byte, o PushOptions, opts ...ParseOption) (*Set, error) {
	s, err := PushStored(ctx, client, key, name, data, o, opts...)
	if err != nil {
		return nil, err
	}
	return s.Set, nil
}

// PushStored is [PushWith], returning the document as it is stored, as [Fetch] would read it
// back then. Its PushedAt, on the Redis server's clock, tells the records of the fleet made
// after the push ([Instance].Seen) from those made before, which a version's name alone does
// not: an instance may run other rules under the pushed version's name (the default rules it
// started on).
func PushStored(ctx context.Context, client redis.UniversalClient, key, name string, data []byte, o PushOptions, opts ...ParseOption) (*Stored, error) {
	if err := checkRedisArgs("Push", client, key); err != nil {
		return nil, err
	}
	set, err := Parse(name, data, opts...)
	if err != nil {
		return nil, err
	}
	if !set.Versioned() {
		return nil, noVersion(set)
	}
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	ifVersion := ""
	if o.IfVersion != nil {
		ifVersion = *o.IfVersion
	}
	if err := runningElsewhere(ctx, client, key, set, o.Force); err != nil {
		return nil, err
	}
	reply, err := pushScript.Run(ctx, client, []string{key}, set.Version(), name, data,
		flag(o.Force), flag(o.IfVersion != nil), ifVersion).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("rules: pushing to Redis key %q: %w", key, err)
	}
	switch {
	case len(reply) == 2 && reply[0] == "not_newer":
		if reply[1] == set.Version() {
			return nil, fmt.Errorf("%w: Redis key %q already holds version %q, which instances running it never read again; give the document a new version",
				ErrNotNewer, key, reply[1])
		}
		return nil, fmt.Errorf("%w: Redis key %q holds version %q, the document is version %q; push a newer version, or force it (ratelimit push -force) to roll back",
			ErrNotNewer, key, reply[1], set.Version())
	case len(reply) == 2 && reply[0] == "changed":
		return nil, fmt.Errorf("%w: Redis key %q holds version %q, not %q: someone pushed meanwhile; start again from the stored version",
			ErrVersionChanged, key, reply[1], ifVersion)
	case len(reply) != 3 || reply[0] != "ok":
		return nil, fmt.Errorf("rules: pushing to Redis key %q: unexpected reply %q", key, reply)
	}
	ms, err := strconv.ParseInt(reply[1], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("rules: pushing to Redis key %q: unexpected reply %q", key, reply)
	}
	return &Stored{Set: set, Version: set.Version(), Name: name, Document: bytes.Clone(data), PushedAt: time.UnixMilli(ms),
		Forced: o.Force, Previous: reply[2]}, nil
}

// runningElsewhere refuses a push of set, forced or not, when an instance of the fleet runs
// its version as read from the stored document, and other rules than set's
// ([Instance.IgnoresPushOf]): it would never read set, and the fleet would run two documents
// under one name while the push counted the instance as running it. A key that holds nothing
// (deleted, evicted, a Redis restarted without its data) lets any version through the
// script's checks, the one the fleet runs too. The error names every such instance. The
// version stored is refused by the push's script itself. A fleet that cannot be read (an ACL
// that allows the rules key alone, a key of another type) refuses a forced push, and lets an
// unforced one go on, as before the fleet was read for it: then it is not checked.
func runningElsewhere(ctx context.Context, client redis.UniversalClient, key string, set *Set, force bool) error {
	fleet, err := Fleet(ctx, client, key)
	if err != nil && !force {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rules: pushing to Redis key %q: reading the fleet: %w", key, err)
	}
	var names []string
	for _, in := range fleet {
		if in.IgnoresPushOf(set, force) {
			names = append(names, in.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	who := "instance " + names[0] + " runs"
	if len(names) > 1 {
		who = "instances " + strings.Join(names, ", ") + " run"
	}
	return fmt.Errorf("%w: %s version %q as read from Redis, other rules than this document's, and would never read another document under it; give the document a new version",
		ErrNotNewer, who, set.Version())
}

// noVersion is the error of a document without a version: field.
func noVersion(set *Set) error {
	return fmt.Errorf("%w: field; a push is ordered by versions, and the hash of its rules (%s) that stands for one has no order: "+
		"write one at the top of the document, such as version: \"2026-12-01.1\" or version: \"8\", newer than the stored one", ErrNoVersion, set.Version())
}

// CompareVersions orders two versions of rules documents: -1 when a is older than b, 0 when
// they are the same, 1 when a is newer. A version is compared segment by segment, the
// segments being separated by dots, from the left; a segment is read as runs of digits and
// runs of other bytes, run by run: two runs of digits by their numbers ("10" after "9",
// "v10" after "v9", "2026-11-10" after "2026-11-9", whatever their length), other runs byte
// by byte ("rc" before "v", "B" before "a"). Of two segments or versions equal as far as the
// shorter goes, the shorter is the older ("2" before "2.1", "1" before "1a"). Push and the
// script in Redis order versions so.
func CompareVersions(a, b string) int {
	x, y := strings.FieldsFunc(a, isDot), strings.FieldsFunc(b, isDot)
	for i := 0; i < max(len(x), len(y)); i++ {
		if i >= len(x) {
			return -1
		}
		if i >= len(y) {
			return 1
		}
		if c := compareSegments(x[i], y[i]); c != 0 {
			return c
		}
	}
	return 0
}

// compareSegments orders two segments of versions run by run (see CompareVersions).
func compareSegments(p, q string) int {
	for p != "" && q != "" {
		rp, rq := leadingRun(p), leadingRun(q)
		p, q = p[len(rp):], q[len(rq):]
		if digits(rp) && digits(rq) {
			rp, rq = strings.TrimLeft(rp, "0"), strings.TrimLeft(rq, "0")
			if len(rp) != len(rq) {
				return cmp.Compare(len(rp), len(rq))
			}
		}
		if c := strings.Compare(rp, rq); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(p), len(q)) // what is left of one: it is the newer
}

// leadingRun returns the digits s starts with, or else the other bytes it starts with.
func leadingRun(s string) string {
	isDigit := s[0] >= '0' && s[0] <= '9'
	for i := 1; i < len(s); i++ {
		if (s[i] >= '0' && s[i] <= '9') != isDigit {
			return s[:i]
		}
	}
	return s
}

func isDot(r rune) bool { return r == '.' }

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Fetch reads the rules document that [Push] stored at key and parses it again, with opts
// (such as [WithUserKey]), as Push did. The error wraps [ErrNoRules] when the key holds
// nothing; it names the key when what the key holds is not a document as Push stores it (a
// field missing, a version that is not the document's) or the document does not parse, and
// then wraps Parse's [Errors].
func Fetch(ctx context.Context, client redis.UniversalClient, key string, opts ...ParseOption) (*Stored, error) {
	if err := checkRedisArgs("Fetch", client, key); err != nil {
		return nil, err
	}
	h, err := client.HGetAll(ctx, key).Result()
	switch {
	case err != nil:
		return nil, fmt.Errorf("rules: reading Redis key %q: %w", key, err)
	case len(h) == 0:
		return nil, fmt.Errorf("%w at Redis key %q", ErrNoRules, key)
	}
	return decodeStored(key, h, opts)
}

// StoredVersion returns the version of the rules stored at key: one HGET, cheap enough to
// poll. The error wraps [ErrNoRules] when the key holds no version.
func StoredVersion(ctx context.Context, client redis.UniversalClient, key string) (string, error) {
	if err := checkRedisArgs("StoredVersion", client, key); err != nil {
		return "", err
	}
	v, err := client.HGet(ctx, key, fieldVersion).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", fmt.Errorf("%w at Redis key %q", ErrNoRules, key)
	case err != nil:
		return "", fmt.Errorf("rules: reading Redis key %q: %w", key, err)
	}
	return v, nil
}

// decodeStored checks the fields of the hash at key and parses its document.
func decodeStored(key string, h map[string]string, opts []ParseOption) (*Stored, error) {
	malformed := func(format string, args ...any) error {
		return fmt.Errorf("rules: Redis key %q does not hold rules as Push stores them: %s; push the rules again",
			key, fmt.Sprintf(format, args...))
	}
	var missing []string
	for _, f := range storedFields {
		if _, ok := h[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return nil, malformed("no field %s", strings.Join(missing, ", "))
	}
	ms, err := strconv.ParseInt(h[fieldPushedAt], 10, 64)
	if err != nil || ms < 0 {
		return nil, malformed("pushed_at %q is not a time in Unix milliseconds", clip(h[fieldPushedAt]))
	}
	s := &Stored{Version: h[fieldVersion], Name: h[fieldName], Document: []byte(h[fieldDocument]), PushedAt: time.UnixMilli(ms),
		Forced: h[fieldForced] == "1", Previous: h[fieldPrevious]}
	if s.Set, err = Parse(s.Name, s.Document, opts...); err != nil {
		return nil, fmt.Errorf("rules: the document at Redis key %q does not parse: %w", key, err)
	}
	if !s.Set.Versioned() {
		return nil, fmt.Errorf("rules: the document at Redis key %q: %w; push it again with a version", key, noVersion(s.Set))
	}
	if v := s.Set.Version(); v != s.Version {
		return nil, malformed("its version is %q, but its document's is %q", clip(s.Version), v)
	}
	return s, nil
}

// checkRedisArgs reports a missing client or key.
func checkRedisArgs(fn string, client redis.UniversalClient, key string) error {
	switch {
	case client == nil:
		return fmt.Errorf("rules: %s needs a go-redis client", fn)
	case key == "":
		return fmt.Errorf("rules: %s needs a key, such as rules.DefaultRedisKey", fn)
	}
	return nil
}
