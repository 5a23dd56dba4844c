package ratelimit

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash/fnv"
	"strconv"
)

// DefaultPrefix starts every storage key unless a store is given another with [WithPrefix].
const DefaultPrefix = "rl:"

// maxPlainKey is the longest identity stored as it is; longer ones are hashed.
const maxPlainKey = 64

// ErrEmptyKey is returned when a limiter is asked to check an empty key.
var ErrEmptyKey = errors.New("ratelimit: empty key")

// A storage key is prefix + "{" + identity + "}:" + policy tag. The braces make the identity
// the Redis Cluster hash tag, so every policy of one identity lives in one slot and one script
// can check them all. An identity of at most 64 bytes drawn from plainByte is written as it is;
// any other (long, binary, containing '{', '}' or NUL) is written as '#' and a SHA-256 digest,
// and since '#' is never plain, the two forms cannot collide.

// plainByte reports whether c may appear in an identity written as it is.
func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '-' || c == '_' || c == ':' || c == '/' || c == '@' || c == '+' || c == '=' || c == '|'
}

func plainIdentity(id string) bool {
	if len(id) > maxPlainKey {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !plainByte(id[i]) {
			return false
		}
	}
	return true
}

// appendKey appends the storage key of identity id under policy tag to b.
func appendKey(b []byte, prefix, id, tag string) []byte {
	b = append(b, prefix...)
	b = append(b, '{')
	if plainIdentity(id) {
		b = append(b, id...)
	} else {
		sum := sha256.Sum256([]byte(id))
		b = append(b, '#')
		b = base64.RawURLEncoding.AppendEncode(b, sum[:18])
	}
	b = append(b, '}', ':')
	return append(b, tag...)
}

// storageKey returns the storage key of identity id under policy p.
func storageKey(prefix, id string, p *Policy) string {
	var buf [160]byte
	return string(appendKey(buf[:0], prefix, id, p.tag()))
}

// tag returns the short code that names p's state in storage keys. It changes with every
// parameter, so a policy whose parameters change never reads the state of the old one.
func (p *Policy) tag() string {
	if p.compiled != nil {
		return p.compiled.tag
	}
	return computeTag(p)
}

func computeTag(p *Policy) string {
	h := fnv.New64a()
	a := p.algorithm()
	for _, s := range []string{p.DisplayName(), a.Code(), strconv.FormatInt(p.Limit, 10),
		strconv.FormatInt(p.Window.Microseconds(), 10), strconv.FormatInt(p.Capacity(), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return a.Code() + strconv.FormatUint(h.Sum64(), 36)
}
