// Package prefixset matches client addresses against lists of networks (CIDR prefixes) the
// way the guard's allow and deny lists need it: compiled once when the lists load, then asked
// on every request, in time that grows with the logarithm of the list, whatever its length.
//
// A Set keeps two things: the networks as given, each with where it came from (a rules file's
// line, an option's argument), to explain a match and to warn of overlaps; and the address
// ranges they cover, merged and sorted, for Contains, which is a binary search over them and
// allocates nothing.
package prefixset

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Entry is one network of a list and where it was written, for errors and explanations.
type Entry struct {
	Prefix netip.Prefix // masked: 10.1.2.3/8 is kept as 10.0.0.0/8
	Source string       // e.g. "rules.yaml:12", or "" when it came from code
}

// Set is a compiled list of networks. The zero Set contains nothing. A Set is immutable once
// made and safe for concurrent use.
type Set struct {
	entries []Entry
	v4, v6  []span // merged, sorted, disjoint ranges of each family
}

// span is the inclusive range of addresses [lo, hi] of one family, as 128-bit numbers.
type span struct{ lo, hi u128 }

// u128 is an address as a number: IPv4 in the low 32 bits of lo.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// next returns a+1, and false when a is the largest number (no successor).
func (a u128) next() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return a, false
}

// Parse reads one network: a CIDR prefix ("10.0.0.0/8", "2001:db8::/32") or a single
// address ("203.0.113.7", "::1"), which is its own /32 or /128, masked (10.1.2.3/8 is
// 10.0.0.0/8). Client addresses are compared unmapped, so an IPv4-mapped IPv6 network
// ("::ffff:10.0.0.0/104", at least /96) is the IPv4 network it maps (10.0.0.0/8), and an
// address's zone is dropped. The guard's trusted proxies and its allow and deny lists are
// read by it alike.
func Parse(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Prefix{}, errors.New("empty: give a CIDR prefix such as 10.0.0.0/8, or an address")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, errors.New("IPv4-mapped prefix shorter than /96")
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// New compiles entries into a Set. Entries may overlap; a duplicate (the same network twice,
// however written) is refused, naming both places.
func New(entries []Entry) (*Set, error) {
	s := &Set{entries: make([]Entry, 0, len(entries))}
	seen := make(map[netip.Prefix]string, len(entries))
	var v4, v6 []span
	for _, e := range entries {
		p := e.Prefix.Masked()
		if !p.IsValid() {
			return nil, fmt.Errorf("%sinvalid network", at(e.Source))
		}
		if first, dup := seen[p]; dup {
			return nil, fmt.Errorf("%s%s is listed twice (first %s)", at(e.Source), p, orCode(first))
		}
		seen[p] = e.Source
		s.entries = append(s.entries, Entry{Prefix: p, Source: e.Source})
		sp := spanOf(p)
		if p.Addr().Is4() {
			v4 = append(v4, sp)
		} else {
			v6 = append(v6, sp)
		}
	}
	s.v4, s.v6 = merge(v4), merge(v6)
	return s, nil
}

func at(source string) string {
	if source == "" {
		return ""
	}
	return source + ": "
}

func orCode(source string) string {
	if source == "" {
		return "in code"
	}
	return "at " + source
}

// spanOf returns the addresses p covers.
func spanOf(p netip.Prefix) span {
	lo := number(p.Addr())
	bits := p.Addr().BitLen()
	host := uint(bits - p.Bits()) // the bits that vary inside the network
	hi := lo
	switch {
	case host >= 128:
		hi = u128{^uint64(0), ^uint64(0)}
	case host >= 64:
		hi = u128{lo.hi | (^uint64(0) >> (128 - host)), ^uint64(0)}
	case host > 0:
		hi = u128{lo.hi, lo.lo | (^uint64(0) >> (64 - host))}
	}
	return span{lo, hi}
}

// number returns a as a 128-bit number (IPv4 in the low 32 bits).
func number(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{0, uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])}
	}
	b := a.As16()
	var n u128
	for i := 0; i < 8; i++ {
		n.hi = n.hi<<8 | uint64(b[i])
		n.lo = n.lo<<8 | uint64(b[8+i])
	}
	return n
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.lo.less(b.lo):
			return -1
		case b.lo.less(a.lo):
			return 1
		}
		return 0
	})
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		after, ok := last.hi.next()
		if !ok || !after.less(sp.lo) { // overlaps or touches the last one
			if last.hi.less(sp.hi) {
				last.hi = sp.hi
			}
			continue
		}
		out = append(out, sp)
	}
	return slices.Clip(out)
}

// Contains reports whether a is in one of the set's networks. An IPv4-mapped IPv6 address
// (::ffff:10.1.2.3, as a dual-stack listener reports an IPv4 client) is compared as the IPv4
// address it maps. An invalid address is in no network.
func (s *Set) Contains(a netip.Addr) bool {
	if s == nil || !a.IsValid() {
		return false
	}
	a = a.Unmap()
	spans := s.v6
	if a.Is4() {
		spans = s.v4
	}
	n := number(a)
	// The first span whose hi is not below n; a is in it if it starts at or before n.
	i, j := 0, len(spans)
	for i < j {
		h := int(uint(i+j) >> 1)
		if spans[h].hi.less(n) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i < len(spans) && !n.less(spans[i].lo)
}

// Len returns the number of networks in the set.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Matches returns the set's entries that contain a, the most specific (longest prefix) first:
// the explanation of a match, for tools (it allocates; Contains is the request path's).
func (s *Set) Matches(a netip.Addr) []Entry {
	if s == nil || !a.IsValid() {
		return nil
	}
	a = a.Unmap()
	var out []Entry
	for _, e := range s.entries {
		if e.Prefix.Contains(a) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(x, y Entry) int { return y.Prefix.Bits() - x.Prefix.Bits() })
	return out
}

// Shadowed returns, for each entry that a wider entry of the same set already covers, the
// pair (the covered one, the widest one covering it): entries that change nothing, for a
// validator's warnings. It sorts a copy of the entries and sweeps them once, for networks are
// either nested or apart.
func (s *Set) Shadowed() [][2]Entry {
	if s == nil {
		return nil
	}
	sorted := slices.Clone(s.entries)
	slices.SortStableFunc(sorted, func(x, y Entry) int {
		if c := x.Prefix.Addr().Compare(y.Prefix.Addr()); c != 0 {
			return c
		}
		return x.Prefix.Bits() - y.Prefix.Bits()
	})
	var out [][2]Entry
	var open []Entry // nested networks, the widest first, each containing the next
	for _, e := range sorted {
		for len(open) > 0 && !open[len(open)-1].Prefix.Overlaps(e.Prefix) {
			open = open[:len(open)-1]
		}
		if len(open) > 0 {
			out = append(out, [2]Entry{e, open[0]})
		}
		open = append(open, e)
	}
	return out
}
