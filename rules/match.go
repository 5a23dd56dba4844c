package rules

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// scope holds the rules of one pattern (or of none): one for each tier, and one for every
// tier.
type scope struct {
	any   *Rule
	tiers map[string]*Rule
}

func (sc *scope) add(r *Rule) {
	if r.Tier == "" {
		sc.any = r
		return
	}
	if sc.tiers == nil {
		sc.tiers = map[string]*Rule{}
	}
	sc.tiers[r.Tier] = r
}

// pick returns the rule of tier, else the rule for every tier, else nil.
func (sc *scope) pick(tier string) *Rule {
	if r, ok := sc.tiers[tier]; ok {
		return r
	}
	return sc.any
}

// Match returns the rule for request r of the given tier (the application's name for the
// client's plan; "" when it has none), or false when no rule applies.
//
// The rule's pattern is found as http.ServeMux finds a handler, among the patterns of the
// document: the most specific pattern that matches the request's method, host and path wins.
// Of the rules of that pattern, the one for tier applies, else the one for every tier. When
// neither exists, or no pattern matches, the rules without a pattern apply the same way: the
// one for tier, else the one for every tier.
//
// The rule is the Set's own: read it, do not modify it.
func (s *Set) Match(r *http.Request, tier string) (*Rule, bool) {
	return s.matchOn(s.mux, nil, r, tier)
}

// matchOn is Match, finding the pattern on mux; names, when not nil, name the pattern as
// written of each pattern registered there (see indexFolded).
func (s *Set) matchOn(mux *http.ServeMux, names map[string]string, r *http.Request, tier string) (*Rule, bool) {
	if mux != nil && r != nil && r.URL != nil {
		if _, pattern := mux.Handler(r); pattern != "" {
			if names != nil {
				pattern = names[pattern]
			}
			if sc, ok := s.patterns[pattern]; ok {
				if rule := sc.pick(tier); rule != nil {
					return rule, true
				}
			}
		}
	}
	rule := s.anywhere.pick(tier)
	return rule, rule != nil
}

// index registers every distinct pattern on the Set's mux, reporting patterns that are not
// ServeMux patterns and patterns that conflict (ServeMux cannot tell which of two is more
// specific), and files each rule under its pattern.
func (s *Set) index(c *checker, where []written) {
	s.patterns = map[string]*scope{}
	first := map[string]int{} // the first rule of each pattern
	refused := map[string]bool{}
	for i := range s.rules {
		r := &s.rules[i]
		if r.Pattern == "" {
			s.anywhere.add(r)
			continue
		}
		if sc, ok := s.patterns[r.Pattern]; ok {
			sc.add(r)
			continue
		}
		if refused[r.Pattern] || where[i].pattern == nil {
			continue // reported already, or not read
		}
		field := fmt.Sprintf("rules[%d].match.pattern", i)
		if err := register(http.NewServeMux(), r.Pattern); err != nil {
			refused[r.Pattern] = true
			c.add(where[i].pattern, field, "%q is not a ServeMux pattern: %v", r.Pattern, err)
			continue
		}
		if why := matchesNothing(r.Pattern); why != "" {
			refused[r.Pattern] = true
			c.add(where[i].pattern, field, "%q%s", r.Pattern, why)
			continue
		}
		if s.mux == nil {
			s.mux = http.NewServeMux()
		}
		if err := register(s.mux, r.Pattern); err != nil {
			refused[r.Pattern] = true
			other, detail := conflict(err)
			if j, ok := first[other]; ok {
				c.add(where[i].pattern, field, "%q conflicts with %q of rules[%d] (line %d): %s", r.Pattern, other, j, where[j].pattern.Line, detail)
			} else {
				c.add(where[i].pattern, field, "%q conflicts with another pattern: %v", r.Pattern, err)
			}
			continue
		}
		first[r.Pattern] = i
		sc := &scope{}
		sc.add(r)
		s.patterns[r.Pattern] = sc
	}
	s.indexFolded()
}

// indexFolded registers every pattern of the Set's mux on its fold mux with its path in lower
// case, for the requests of a router that compares paths in lower case, the paths it was given
// too (Fiber by default): "GET /api/getUser/{id}" is the route of "/api/getuser/bob" there, and
// its rule must limit that request, as "/api/getUser/Bob". Of two patterns the same in lower
// case, the first in the document is kept, as such a router serves the first route registered.
func (s *Set) indexFolded() {
	for i := range s.rules {
		p := s.rules[i].Pattern
		if _, ok := s.patterns[p]; !ok {
			continue
		}
		f := foldPath(p)
		if _, ok := s.folded[f]; ok {
			continue
		}
		if s.fold == nil {
			s.fold, s.folded = http.NewServeMux(), map[string]string{}
		}
		if register(s.fold, f) == nil {
			s.folded[f] = p
		}
	}
}

// foldPath returns pattern with its path in lower case (its method and host as they are).
func foldPath(pattern string) string {
	rest := pattern // split as ServeMux splits it
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		rest = strings.TrimLeft(pattern[i:], " \t")
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return pattern
	}
	path := rest[i:]
	return pattern[:len(pattern)-len(path)] + lowerASCII(path)
}

// standardMethods are the methods of RFC 9110 and PATCH, as clients send them.
var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"}

// matchesNothing says why a ServeMux pattern matches no request a client sends, a rule of
// it silently limiting nothing, or returns "" when it may match; the text follows the quoted
// pattern in the error. ServeMux registers them all: a standard method not in upper case
// ("get /a": methods are case-sensitive, and clients send GET; a method of one's own is sent
// as written), a host with a port (a request's host is matched without its port), a host with
// capitals ("API.example.com/": ServeMux compares hosts as the request spells them, and
// clients send them in lower case, browsers always), and, in a pattern without a method, a
// path with an empty, "." or ".." segment (requests' paths are cleaned before they are
// matched, but for CONNECT; with a method other than CONNECT, ServeMux refuses it), a host
// in Unicode (clients send its ASCII form, xn--…), and a path with '?' or '#' (it matches
// only a path that escapes them; a pattern never matches a query or fragment). A host
// with a trailing dot ("example.com./") is another host to ServeMux, which clients send when
// the dot is written: it matches those requests.
func matchesNothing(pattern string) string {
	method, rest := "", pattern // split as ServeMux splits it
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		method, rest = pattern[:i], strings.TrimLeft(pattern[i:], " \t")
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	if i := slices.IndexFunc(standardMethods, func(m string) bool { return strings.EqualFold(m, method) }); i >= 0 && method != standardMethods[i] {
		return " matches no request: methods are case-sensitive, and clients send " + standardMethods[i]
	}
	if h, port, err := net.SplitHostPort(host); err == nil && port != "" {
		return " matches no request: a request's host is matched without its port; write " + lowerASCII(h)
	}
	if strings.IndexFunc(host, func(r rune) bool { return r >= 0x80 }) >= 0 {
		return " matches no request: clients send an internationalized host in its ASCII form (xn--…, IDNA); write that"
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		c := path[i : i+1]
		return fmt.Sprintf(" matches only paths that escape %q (%%%02X): a pattern matches a request's path, without its query or fragment", c, c[0])
	}
	if lower := lowerASCII(host); lower != host {
		return " matches only requests that spell the host in these capitals: hosts are case-insensitive, clients send them in lower case (browsers always do), and ServeMux compares them as spelled; write " + lower
	}
	if method == "" {
		for seg := range strings.SplitSeq(strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/"), "/") {
			if path != "/" && (seg == "" || seg == "." || seg == "..") {
				return ` matches no request but CONNECT: the paths of the others are matched cleaned, without empty, "." or ".." segments`
			}
		}
	}
	return ""
}

// lowerASCII returns s with its ASCII letters in lower case, as clients send a host.
func lowerASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// register registers pattern on mux, returning the error for which Handle panics.
func register(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
				if inner := errors.Unwrap(e); inner != nil && strings.HasPrefix(e.Error(), "parsing ") {
					err = inner // drop "parsing <pattern>: ", which the message repeats
				}
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	mux.Handle(pattern, http.NotFoundHandler())
	return nil
}

// conflict reads the earlier pattern out of ServeMux's conflict message, and the first line of
// its explanation. The message is net/http's:
//
//	pattern "A" (registered at ...) conflicts with pattern "B" (registered at ...):
//	A and B both match some paths, like "/x/y".
//	...
func conflict(err error) (other, detail string) {
	msg := err.Error()
	const mark = " conflicts with pattern "
	i := strings.Index(msg, mark)
	if i < 0 {
		return "", msg
	}
	q, perr := strconv.QuotedPrefix(msg[i+len(mark):])
	if perr != nil {
		return "", msg
	}
	other, _ = strconv.Unquote(q)
	detail = msg
	if j := strings.Index(msg, ":\n"); j >= 0 {
		detail = msg[j+2:]
		if k := strings.IndexByte(detail, '\n'); k >= 0 {
			detail = detail[:k]
		}
	}
	return other, detail
}
