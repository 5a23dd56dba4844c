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
// parsed Set. It refuses what would silently disable or roll back limiting: a document
// without rules ([ErrEmptyRules]) and a version that is not newer than the one stored
// ([ErrNotNewer], see [CompareVersions]); [PushWith] overrides either. The hash at key is
// replaced whole and the version published on the channel key, in one atomic script call
// (EVALSHA, EVAL when the server lacks the script) that also makes the checks: a reader sees
// the previous document or this one, never a mixture, and of two pushes over one version only
// one wins.
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
	// pushes the version already stored: instances running that version would not read
	// another document under it; give a changed document a new version.
	Force bool
	// AllowEmpty pushes a document without rules, which stops limiting the requests of every
	// instance.
	AllowEmpty bool
}

// Errors of a push refused; test for them with errors.Is.
var (
	// ErrEmptyRules is the error of a push of a document without rules.
	ErrEmptyRules = errors.New("rules: the document has no rules: every instance would stop limiting")
	// ErrNotNewer is the error of a push of a version that is not newer than the stored one.
	ErrNotNewer = errors.New("rules: the version is not newer than the stored one")
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
	if len(set.Rules()) == 0 && !o.AllowEmpty {
		return nil, fmt.Errorf("%w (version %s to Redis key %q); push it with AllowEmpty (ratelimit push -allow-empty) if you mean it", ErrEmptyRules, set.Version(), key)
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

// CompareVersions orders two versions of rules documents: -1 when a is older than b, 0 when
// they are the same, 1 when a is newer. A version is compared segment by segment, the
// segments being separated by dots, from the left: two segments of digits by their numbers
// ("10" after "9", whatever their length), other segments byte by byte ("2026-11-23" before
// "2026-11-24"); a version that has run out of segments is the older ("2" before "2.1").
func CompareVersions(a, b string) int {
	x, y := strings.FieldsFunc(a, isDot), strings.FieldsFunc(b, isDot)
	for i := 0; i < max(len(x), len(y)); i++ {
		if i >= len(x) {
			return -1
		}
		if i >= len(y) {
			return 1
		}
		p, q := x[i], y[i]
		if digits(p) && digits(q) {
			p, q = strings.TrimLeft(p, "0"), strings.TrimLeft(q, "0")
			if len(p) != len(q) {
				return cmp.Compare(len(p), len(q))
			}
		}
		if c := strings.Compare(p, q); c != 0 {
			return c
		}
	}
	return 0
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
