package rules

import (
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
}

// Push validates a rules document as [Parse] does (name and opts are Parse's) and stores it
// in Redis at key, usually [DefaultRedisKey], for every instance to load; it returns the
// parsed Set. The hash at key is replaced whole and the version published on the channel key,
// in one atomic script call (EVALSHA, EVAL when the server lacks the script): a reader sees
// the previous document or this one, never a mixture.
//
// A document that does not parse writes nothing: the error is Parse's [Errors], and the rules
// in Redis stay as they were.
func Push(ctx context.Context, client redis.UniversalClient, key, name string, data []byte, opts ...Option) (*Set, error) {
	if err := checkRedisArgs("Push", client, key); err != nil {
		return nil, err
	}
	set, err := Parse(name, data, opts...)
	if err != nil {
		return nil, err
	}
	if err := pushScript.Run(ctx, client, []string{key}, set.Version(), name, data).Err(); err != nil {
		return nil, fmt.Errorf("rules: pushing to Redis key %q: %w", key, err)
	}
	return set, nil
}

// Fetch reads the rules document that [Push] stored at key and parses it again, with opts
// (such as [WithUserKey]), as Push did. The error wraps [ErrNoRules] when the key holds
// nothing; it names the key when what the key holds is not a document as Push stores it (a
// field missing, a version that is not the document's) or the document does not parse, and
// then wraps Parse's [Errors].
func Fetch(ctx context.Context, client redis.UniversalClient, key string, opts ...Option) (*Stored, error) {
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
func decodeStored(key string, h map[string]string, opts []Option) (*Stored, error) {
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
	s := &Stored{Version: h[fieldVersion], Name: h[fieldName], Document: []byte(h[fieldDocument]), PushedAt: time.UnixMilli(ms)}
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
