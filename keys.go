package ratelimit

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// defaultPrefix starts every storage key unless a store is given another with [WithPrefix].
const defaultPrefix = "rl:"

// maxPlainKey is the longest identity stored as it is; longer ones are hashed.
const maxPlainKey = 64

// StorageKey returns the key under which a store keeps the state of identity under policy p,
// for stores and tools written outside this package; compact says the store was made with
// [WithCompactState].
//
// The readable key (compact false) is prefix + "{" + identity + "}:" + a tag of the policy.
// The braces make the identity the Redis Cluster hash tag, so every policy of one identity
// lives in one slot and one script checks them all. An identity of at most 64 bytes of
// letters, digits and ".-_:/@+=|" is written as it is; any other (long, binary, or holding
// '{', '}' or NUL) as '#' and its SHA-256 digest, and since '#' is never written as it is, the
// two forms cannot collide. The tag names the policy's state by its Name, its algorithm and
// its Window (and the layout of the state), not by its Limit or Burst: a policy whose limit
// changes reads the state it had, and its count carries over (package algorithms says what
// each algorithm keeps); one whose name, algorithm or window changes starts afresh.
//
// A calendar policy (Policy.Period) keeps each period under a key of its own: the tag is
// followed by "_" and the period's name (calendar.Period.Tag: "_d20260308", "_m202603"). The
// key is the period's of a policy taken from a decision (Decision.Results), else the period
// that holds now.
//
// The compact key is a digest of prefix, identity and the same tag; it cannot be read back.
func StorageKey(prefix, identity string, p Policy, compact bool) string {
	if p.compiled == nil {
		if c, err := p.compile(); err == nil {
			p = c
		}
	}
	if c := p.compiled; c != nil && c.cal != nil && !c.cal.resolved() {
		p = p.inPeriod(time.Now())
	}
	if compact {
		var buf [compactKeyLen]byte
		return string(appendCompactKey(buf[:0], prefix, identity, p.tag()))
	}
	var buf [160]byte
	return string(appendKey(buf[:0], prefix, identity, p.tag()))
}

// plainBytes marks the bytes that may appear in an identity written as it is: letters,
// digits and ".-_:/@+=|". A table, since the Redis store scans every identity it checks.
var plainBytes = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-_:/@+=|", byte(c)) >= 0
	}
	return t
}()

func plainIdentity(id string) bool {
	if len(id) > maxPlainKey {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !plainBytes[id[i]] {
			return false
		}
	}
	return true
}

// appendKey appends the storage key of identity id under policy tag to b.
func appendKey(b []byte, prefix, id, tag string) []byte {
	b = append(b, prefix...)
	b = append(b, '{')
	b = appendStoredIdentity(b, id)
	b = append(b, '}', ':')
	return append(b, tag...)
}

// appendStoredIdentity appends identity id as storage keys hold it between their braces: as it
// is when it is plain, else '#' and its SHA-256 digest.
func appendStoredIdentity(b []byte, id string) []byte {
	if plainIdentity(id) {
		return append(b, id...)
	}
	sum := sha256.Sum256([]byte(id))
	b = append(b, '#')
	return base64.RawURLEncoding.AppendEncode(b, sum[:18])
}

// storedIdentity returns identity id as storage keys hold it between their braces, which is
// how the scripts name an identity when they announce a refund or a reset (see forgetChannel).
// A plain identity is returned as it is, without allocating.
func storedIdentity(id string) string {
	if plainIdentity(id) {
		return id
	}
	var buf [32]byte
	return string(appendStoredIdentity(buf[:0], id))
}

// tag returns the short code that names p's state in storage keys.
func (p *Policy) tag() string {
	if p.compiled != nil {
		return p.compiled.tag
	}
	return computeTag(p, "")
}

// stateLayout changes when the stored form of any algorithm's state does, so that keys of the
// old layout are never read as the new (v2: the rate-based algorithms keep an exact TAT; v3:
// keys leave out Limit and Burst, and a TAT's fraction names its denominator).
const stateLayout = "3"

// computeTag hashes what names p's state. Limit and Burst stay out: every algorithm reads state
// written under another limit or burst as its documentation says. The window stays in, since
// the window algorithms' state is counted in windows of its length.
//
// The tag is the algorithm's code and 36 bits of the hash, six characters: it tells apart the
// few policies of one identity (two of a hundred collide with odds of 1 in 10^7, and only if
// they share an algorithm), and each byte of a key costs Redis memory for every identity.
func computeTag(p *Policy, code string) string {
	return hashTag(code, p.Name, strconv.FormatInt(p.Window.Microseconds(), 10))
}

// hashTag is the tag of a policy of algorithm code named by what parts say: the code and 36
// bits of the hash of the layout, the code and the parts.
func hashTag(code string, parts ...string) string {
	h := fnv.New64a()
	for _, s := range append([]string{stateLayout, parts[0], code}, parts[1:]...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" // base64url
	sum := h.Sum64()
	tag := []byte(code)
	for i := range 6 {
		tag = append(tag, digits[sum>>(58-6*i)&63])
	}
	return string(tag)
}

// The compact keys of a store with compact state ([WithCompactState]) are 14 bytes, the
// most a key of Redis can take in an allocation of 16 (its bytes and the two of its header):
// "{" + 4 characters + "}" + 8 characters, base64url. The 4 between the braces are 24 bits of
// the SHA-256 of the prefix and the identity: the Redis Cluster hash tag, the same for every
// policy of one identity, and the identity as announcements of refunds and resets name it,
// which tells the instances whose cached denials to forget (forgetting one too many only costs
// a call). The 8 after are 48 bits of the SHA-256 of the prefix, the identity and the policy's
// tag. Two keys are the same only when both digests are: among a million identities under
// three policies each, the odds that any two share a key are about 1 in 80 million; among a
// billion, about 1 in 1,000 (they would then share that policy's quota). An identity made to
// share the key of a given other takes about 2^72 tries; one whose own two policies share a
// key (their braces are the same: 48 bits), about 2^48. The prefix is in the digests, not in the key, so two prefixes still name different
// keys; it names the channel of the announcements, as for readable keys.
const (
	compactTagChars = 4
	compactKeyChars = 8
	compactKeyLen   = 1 + compactTagChars + 1 + compactKeyChars
)

// appendCompactKey appends the compact key of identity id under policy tag to b.
func appendCompactKey(b []byte, prefix, id, tag string) []byte {
	b = append(b, '{')
	b = appendCompactIdentity(b, prefix, id)
	b = append(b, '}')
	return appendDigest(b, compactKeyChars, prefix, id, tag)
}

// appendCompactIdentity appends identity id as the compact keys of prefix hold it between
// their braces.
func appendCompactIdentity(b []byte, prefix, id string) []byte {
	return appendDigest(b, compactTagChars, prefix, id)
}

// appendDigest appends the first n base64url characters of the SHA-256 of parts, each
// preceded by its length, so that no two lists of parts hash the same bytes.
func appendDigest(b []byte, n int, parts ...string) []byte {
	var in [256]byte
	msg := in[:0]
	for _, p := range parts {
		msg = binary.AppendUvarint(msg, uint64(len(p)))
		msg = append(msg, p...)
	}
	sum := sha256.Sum256(msg)
	var out [12]byte // 9 bytes of the digest: 12 characters, at least n
	base64.RawURLEncoding.Encode(out[:], sum[:9])
	return append(b, out[:n]...)
}
