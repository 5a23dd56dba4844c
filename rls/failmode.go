package rls

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// FailMode says what a descriptor's status is when the store cannot decide it (an error, a
// timeout, an open breaker) and no fallback did ([ratelimit.WithFallback]).
type FailMode int

const (
	// FailError answers the whole call with gRPC code Unavailable: Envoy then applies its own
	// failure_mode_deny (false by default: the request passes).
	FailError FailMode = iota
	// FailAllow answers the descriptor OK, with no current limit.
	FailAllow
	// FailDeny answers the descriptor OVER_LIMIT.
	FailDeny
)

// failModes are the modes in the order of their values.
var failModes = [...]FailMode{FailError, FailAllow, FailDeny}

// ParseFailMode reads "error", "allow" or "deny", in any case.
func ParseFailMode(s string) (FailMode, error) {
	switch strings.ToLower(s) {
	case "error":
		return FailError, nil
	case "allow":
		return FailAllow, nil
	case "deny":
		return FailDeny, nil
	}
	return 0, fmt.Errorf("rls: fail mode %q: one of error, allow, deny", s)
}

func (m FailMode) String() string {
	switch m {
	case FailAllow:
		return "allow"
	case FailDeny:
		return "deny"
	}
	return "error"
}

func (m FailMode) valid() bool { return m >= FailError && m <= FailDeny }

// FailModes are the fail modes of a server: Default for every domain, but those that
// Domains gives a mode of their own.
type FailModes struct {
	Default FailMode
	Domains map[string]FailMode
}

// ParseFailModes reads a fail mode for every domain, then any number of DOMAIN=MODE for
// domains of their own, separated by commas: "allow,edge=deny,internal=error". The first
// element may be omitted ("edge=deny" leaves the others at error). Spaces around the
// elements are ignored; a domain named twice, an empty domain or an unknown mode is refused.
func ParseFailModes(s string) (FailModes, error) {
	var fm FailModes
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		domain, mode, named := strings.Cut(part, "=")
		if !named {
			if i != 0 {
				return FailModes{}, fmt.Errorf("rls: fail modes %q: %q: only the first element is a mode alone (the default); the others are DOMAIN=MODE", s, part)
			}
			m, err := ParseFailMode(part)
			if err != nil {
				return FailModes{}, err
			}
			fm.Default = m
			continue
		}
		domain, mode = strings.TrimSpace(domain), strings.TrimSpace(mode)
		if domain == "" {
			return FailModes{}, fmt.Errorf("rls: fail modes %q: %q names no domain", s, part)
		}
		m, err := ParseFailMode(mode)
		if err != nil {
			return FailModes{}, fmt.Errorf("rls: fail modes %q: domain %q: %w", s, domain, err)
		}
		if _, twice := fm.Domains[domain]; twice {
			return FailModes{}, fmt.Errorf("rls: fail modes %q: domain %q is given twice", s, domain)
		}
		if fm.Domains == nil {
			fm.Domains = map[string]FailMode{}
		}
		fm.Domains[domain] = m
	}
	return fm, nil
}

// For returns the fail mode of domain.
func (fm FailModes) For(domain string) FailMode {
	if m, ok := fm.Domains[domain]; ok {
		return m
	}
	return fm.Default
}

// String writes the modes as ParseFailModes reads them, the domains in order.
func (fm FailModes) String() string {
	var b strings.Builder
	b.WriteString(fm.Default.String())
	domains := make([]string, 0, len(fm.Domains))
	for d := range fm.Domains {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	for _, d := range domains {
		fmt.Fprintf(&b, ",%s=%s", d, fm.Domains[d])
	}
	return b.String()
}

// anyError reports whether some domain's mode is FailError (the default's included).
func (fm FailModes) anyError() bool {
	if fm.Default == FailError {
		return true
	}
	for _, m := range fm.Domains {
		if m == FailError {
			return true
		}
	}
	return false
}

// WithFailMode sets what a descriptor the store cannot decide gets, in every domain that
// [WithDomainFailMode] gives no mode of its own (FailError by default).
func WithFailMode(m FailMode) Option {
	return named(func(s *Server) error {
		if !m.valid() {
			return fmt.Errorf("rls: WithFailMode(%d): use FailError, FailAllow or FailDeny", m)
		}
		s.failModes.Default = m
		return nil
	}, "the default fail mode")
}

// WithDomainFailMode sets the fail mode of one domain, over [WithFailMode]'s.
func WithDomainFailMode(domain string, m FailMode) Option {
	return named(func(s *Server) error {
		if !m.valid() {
			return fmt.Errorf("rls: WithDomainFailMode(%q, %d): use FailError, FailAllow or FailDeny", domain, m)
		}
		if domain == "" {
			return fmt.Errorf("rls: WithDomainFailMode: an empty domain")
		}
		if s.failModes.Domains == nil {
			s.failModes.Domains = map[string]FailMode{}
		}
		s.failModes.Domains[domain] = m
		return nil
	}, "the fail mode of domain "+strconv.Quote(domain))
}

// WithFailModes sets every fail mode at once, as [ParseFailModes] reads them.
func WithFailModes(fm FailModes) Option {
	names := WithFailMode(fm.Default).sets()
	for d := range fm.Domains {
		names = append(names, WithDomainFailMode(d, 0).sets()...)
	}
	return named(func(s *Server) error {
		if err := WithFailMode(fm.Default).apply(s); err != nil {
			return err
		}
		for d, m := range fm.Domains {
			if err := WithDomainFailMode(d, m).apply(s); err != nil {
				return err
			}
		}
		return nil
	}, names...)
}
