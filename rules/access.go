package rules

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a7d3e0dd/ratelimit"
)

// The fields of the document's access lists and of an override.
var (
	accessFields   = []string{"allow", "deny", "deny_clients", "deny_status", "deny_body"}
	overrideFields = []string{"client", "rule", "policies", "unlimited"}
)

// MaxNetworks is the most networks an access list (allow or deny) may hold.
const MaxNetworks = 100_000

// maxOverrides is the most overrides and denied clients a document may hold.
const maxOverrides = 10_000

// accessLists are the document's access field: networks never limited (allow) and refused
// outright (deny), clients refused outright, and the response of a refusal.
type accessLists struct {
	allow, deny []network
	denyClients []client
	status      int    // 0: the core's default, 403
	body        string // "": the core's default
}

// empty reports whether the lists hold nothing.
func (a *accessLists) empty() bool {
	return len(a.allow)+len(a.deny)+len(a.denyClients) == 0
}

// network is one entry of an allow or deny list, as written and as the prefix it is.
type network struct {
	text   string
	prefix netip.Prefix
	line   int
}

// client is a client named by one part of a key and its value, such as {api_key: acme}.
type client struct {
	part  string // the part's identity (partID): api_key is header:X-Api-Key
	spec  string // the part as written
	value string
	line  int
}

// String returns the client as written: api_key=acme.
func (c client) String() string { return c.spec + "=" + c.value }

// override gives one client other limits: on one rule, or on every rule keyed by its part.
type override struct {
	client    client
	rule      string // "": every rule keyed by the client's part
	unlimited bool
	policies  []ratelimit.Policy
	line      int
}

// access reads the document's access field.
func (c *checker) access(n *yaml.Node) accessLists {
	var a accessLists
	f := c.fields(n, "access", accessFields)
	if f == nil {
		return a
	}
	if v := f["allow"]; present(v) {
		a.allow = c.networks(v, "access.allow")
	}
	if v := f["deny"]; present(v) {
		a.deny = c.networks(v, "access.deny")
	}
	if v := f["deny_clients"]; present(v) {
		if items, ok := c.items(v, "access.deny_clients", maxOverrides); ok {
			for i, item := range items {
				if cl, ok := c.client(item, fmt.Sprintf("access.deny_clients[%d]", i)); ok {
					a.denyClients = append(a.denyClients, cl)
				}
			}
		}
	}
	if v := f["deny_status"]; present(v) {
		if s, ok := c.integer(v, "access.deny_status"); ok {
			if s < 400 || s > 599 {
				c.add(v, "access.deny_status", "%d is not a 4xx or 5xx status (default 403)", s)
			}
			a.status = int(s)
		}
	}
	if v := f["deny_body"]; present(v) {
		a.body, _ = c.text(v, "access.deny_body")
	}
	if a.empty() && len(c.errs) == 0 {
		c.add(n, "access", "lists nothing; give allow, deny or deny_clients, or leave access out")
	}
	c.allowedDenied(a.allow, a.deny)
	return a
}

// networks reads a list of networks, each validated by the core as WithAccess reads it, and
// refuses a network listed twice, naming both lines.
func (c *checker) networks(n *yaml.Node, path string) []network {
	items, ok := c.items(n, path, MaxNetworks)
	if !ok {
		return nil
	}
	out := make([]network, 0, len(items))
	seen := make(map[netip.Prefix]int, len(items))
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		text, ok := c.text(item, p)
		if !ok {
			continue
		}
		prefix, err := c.coreNetwork(text)
		if err != nil {
			c.add(item, p, "%v", err)
			continue
		}
		line := deref(item).Line
		if first, dup := seen[prefix]; dup {
			c.add(item, p, "%s is listed twice (first at line %d); list each network once", prefix, first)
			continue
		}
		seen[prefix] = line
		out = append(out, network{text: text, prefix: prefix, line: line})
	}
	c.shadowed(out, path)
	return out
}

// coreNetwork returns the network text is, as the core reads it: the core validates it (its
// message is the error), and the prefix is read here as the core documents it (masked, an
// IPv4-mapped network as the IPv4 one), for the comparisons of the file's entries.
func (c *checker) coreNetwork(text string) (netip.Prefix, error) {
	l, err := ratelimit.New(c.memoryStore(), ratelimit.Policy{Limit: 1, Window: time.Second})
	if err != nil {
		return netip.Prefix{}, err
	}
	if _, err := ratelimit.NewGuard(l, ratelimit.WithAccess(ratelimit.Access{Deny: []string{text}})); err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "Deny[0]: "); i >= 0 {
			msg = msg[i+len("Deny[0]: "):]
		}
		return netip.Prefix{}, fmt.Errorf("%s", msg)
	}
	s := strings.TrimSpace(text)
	var p netip.Prefix
	if strings.Contains(s, "/") {
		p, err = netip.ParsePrefix(s)
		if err == nil && p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
	} else {
		var a netip.Addr
		if a, err = netip.ParseAddr(s); err == nil {
			a = a.Unmap().WithZone("")
			p = netip.PrefixFrom(a, a.BitLen())
		}
	}
	return p.Masked(), err
}

// shadowed warns of each entry of list that a wider entry of the same list covers: it
// changes nothing.
func (c *checker) shadowed(list []network, path string) {
	sorted := slices.Clone(list)
	slices.SortStableFunc(sorted, func(x, y network) int {
		if d := x.prefix.Addr().Compare(y.prefix.Addr()); d != 0 {
			return d
		}
		return x.prefix.Bits() - y.prefix.Bits()
	})
	var open []network // nested networks, the widest first
	for _, e := range sorted {
		for len(open) > 0 && !open[len(open)-1].prefix.Overlaps(e.prefix) {
			open = open[:len(open)-1]
		}
		if len(open) > 0 {
			c.warn(e.line, path, "%s is inside %s (line %d): it changes nothing", e.text, open[0].text, open[0].line)
		}
		open = append(open, e)
	}
}

// allowedDenied warns of each allowed network inside a denied one: deny wins, so it allows
// nothing.
func (c *checker) allowedDenied(allow, deny []network) {
	for _, a := range allow {
		for _, d := range deny {
			if d.prefix.Bits() <= a.prefix.Bits() && d.prefix.Contains(a.prefix.Addr()) {
				c.warn(a.line, "access.allow", "%s is inside the denied %s (line %d): deny wins, so it allows nothing", a.text, d.text, d.line)
				break
			}
		}
	}
}

// warn records a warning: the document is valid, but an entry does nothing.
func (c *checker) warn(line int, field, format string, args ...any) {
	c.warnings = append(c.warnings, &Error{File: c.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// client reads a client: a mapping of one key part to its value, such as {api_key: acme} or
// {"header:X-Tenant": acme}.
func (c *checker) client(n *yaml.Node, path string) (client, bool) {
	m := deref(n)
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
		c.add(m, path, "want one key part and its value, such as {api_key: acme}, got %s", describe(m))
		return client{}, false
	}
	k, v := deref(m.Content[0]), deref(m.Content[1])
	spec := k.Value
	switch {
	case spec == "api_key", spec == "user", strings.HasPrefix(spec, "header:"):
	case spec == "ip":
		c.add(k, path, `"ip" is not a client here; list networks in access.allow or access.deny`)
		return client{}, false
	default:
		c.add(k, path, "%q is not a key part that names a client; want api_key, user or header:<Name>", clip(spec))
		return client{}, false
	}
	value, ok := c.label(v, path+"."+spec)
	if !ok {
		return client{}, false
	}
	return client{part: partID(spec), spec: spec, value: value, line: m.Line}, true
}

// overrides reads the document's overrides, once its rules are read: each names a client and
// either its policies or unlimited: true, on one rule or on every rule keyed by its part.
func (c *checker) overrides(n *yaml.Node, rules []Rule) []override {
	items, ok := c.items(n, "overrides", maxOverrides)
	if !ok {
		return nil
	}
	out := make([]override, 0, len(items))
	seen := map[[3]string]int{} // part, value, rule: line
	for i, item := range items {
		path := fmt.Sprintf("overrides[%d]", i)
		f := c.fields(item, path, overrideFields)
		if f == nil {
			continue
		}
		o := override{line: deref(item).Line}
		before := len(c.errs)
		where := map[string]*yaml.Node{"rule": f["rule"], "client": f["client"]}
		if v := f["client"]; present(v) {
			o.client, _ = c.client(v, path+".client")
		} else {
			c.missing(item, v, path+".client")
		}
		if v := f["rule"]; present(v) {
			o.rule, _ = c.text(v, path+".rule")
		}
		if v := f["unlimited"]; present(v) {
			o.unlimited, _ = c.boolean(v, path+".unlimited")
			if !o.unlimited {
				c.add(v, path+".unlimited", "false; leave it out, or give policies")
			}
		}
		switch v := f["policies"]; {
		case present(v) && o.unlimited:
			c.add(v, path+".policies", "give policies, or unlimited: true, not both")
		case present(v):
			r := Rule{}
			if c.policies(&r, v, path+".policies") {
				c.coreRule(&r, v, nil, nil, path)
				o.policies = r.Policies
			}
		case !o.unlimited:
			c.missingOr(item, v, path+".policies", "unlimited: true")
		}
		if len(c.errs) > before {
			continue
		}
		if c.appliesTo(o, rules, where, path) == 0 {
			continue
		}
		c.overrideFits(o, rules, f["policies"], path+".policies")
		id := [3]string{o.client.part, o.client.value, o.rule}
		if first, dup := seen[id]; dup {
			on := "every rule"
			if o.rule != "" {
				on = "rule " + o.rule
			}
			c.add(item, path, "a second override of %s on %s (first at line %d); give each client one per rule", o.client, on, first)
			continue
		}
		seen[id] = o.line
		out = append(out, o)
	}
	return out
}

// appliesTo returns how many rules override o applies to, after reporting an override that
// applies to none (it would change nothing): a rule named that does not exist, or is not
// keyed by the client's part alone; or no rule keyed by it.
func (c *checker) appliesTo(o override, rules []Rule, at map[string]*yaml.Node, path string) int {
	count := 0
	for i := range rules {
		r := &rules[i]
		if o.rule != "" && r.Name != o.rule {
			continue
		}
		if o.rule != "" && !keyedBy(r, o.client.part) {
			c.add(at["rule"], path+".rule", "rule %q is keyed by %s, not by %s alone: the override would change nothing", o.rule, strings.Join(r.Key, "+"), o.client.spec)
			return 0
		}
		if keyedBy(r, o.client.part) {
			count++
		}
	}
	switch {
	case o.rule != "" && count == 0:
		c.add(at["rule"], path+".rule", "no rule is named %q", clip(o.rule))
	case count == 0:
		c.add(at["client"], path+".client", "no rule is keyed by %s alone: the override would change nothing", o.client.spec)
	}
	return count
}

// keyedBy reports whether rule r is keyed by the part of identity part alone.
func keyedBy(r *Rule, part string) bool {
	return len(r.Key) == 1 && partID(r.Key[0]) == part
}

// keyOf returns the key the rule's key function finds for the client: the core's own, so that
// the lists compare what the guard compares.
func keyOf(r *Rule, cl client) (string, error) {
	return r.key(clientRequest{cl.value})
}

// clientRequest is a request that carries value in every header and under every context key:
// a rule keyed by one part reads it there, whichever part it is.
type clientRequest struct{ value string }

func (c clientRequest) Context() context.Context { return context.Background() }
func (c clientRequest) Method() string           { return "GET" }
func (c clientRequest) Path() string             { return "/" }
func (c clientRequest) Route() string            { return "/" }
func (c clientRequest) Header(string) string     { return c.value }
func (c clientRequest) RemoteAddr() string       { return "192.0.2.1:1" }
func (c clientRequest) Value(any) any            { return c.value }

// ruleAccess returns what the document's lists and overrides say for rule r: the Access of
// its guard (nil when there is none), and the policies of the clients whose limits the
// overrides change (nil when none). The most specific override of a client wins: the one
// naming r over the one for every rule; their order in the file does not matter.
func (s *Set) ruleAccess(r *Rule) (*ratelimit.Access, map[string][]ratelimit.Policy, error) {
	a := s.access.core()
	for _, cl := range s.access.denyClients {
		if !keyedBy(r, cl.part) {
			continue
		}
		k, err := keyOf(r, cl)
		if err != nil {
			return nil, nil, fmt.Errorf("access.deny_clients %s (line %d): %w", cl, cl.line, err)
		}
		a.DenyKeys = append(a.DenyKeys, k)
	}
	chosen := map[string]*override{}
	for i := range s.overrides {
		o := &s.overrides[i]
		if !keyedBy(r, o.client.part) || o.rule != "" && o.rule != r.Name {
			continue
		}
		k, err := keyOf(r, o.client)
		if err != nil {
			return nil, nil, fmt.Errorf("overrides: %s (line %d): %w", o.client, o.line, err)
		}
		if cur, ok := chosen[k]; !ok || cur.rule == "" && o.rule != "" {
			chosen[k] = o
		}
	}
	var policies map[string][]ratelimit.Policy
	for _, k := range slices.Sorted(maps.Keys(chosen)) {
		o := chosen[k]
		if slices.Contains(a.DenyKeys, k) {
			continue // deny wins, as in the core: the override never applies
		}
		if o.unlimited {
			a.AllowKeys = append(a.AllowKeys, k)
			continue
		}
		if policies == nil {
			policies = map[string][]ratelimit.Policy{}
		}
		policies[k] = o.policies
	}
	if len(a.Allow)+len(a.Deny)+len(a.AllowKeys)+len(a.DenyKeys) == 0 {
		return nil, policies, nil
	}
	return &a, policies, nil
}

// core returns the networks of the lists, and their response, as the core's Access.
func (a *accessLists) core() ratelimit.Access {
	out := ratelimit.Access{Status: a.status, Body: a.body}
	for _, n := range a.allow {
		out.Allow = append(out.Allow, n.text)
	}
	for _, n := range a.deny {
		out.Deny = append(out.Deny, n.text)
	}
	return out
}

// deniedOverrides warns of each override of a client that access.deny_clients refuses: deny
// wins, so it never applies.
func (c *checker) deniedOverrides(s *Set) {
	for _, o := range s.overrides {
		for _, d := range s.access.denyClients {
			if d.part == o.client.part && d.value == o.client.value {
				c.warn(o.line, "overrides", "%s is denied (access.deny_clients, line %d): deny wins, so the override never applies", o.client, d.line)
				break
			}
		}
	}
}

// clientKeys checks the clients of the lists and the overrides as every engine will: the key
// each rule's key function finds for it (a value the function refuses, a header's with a
// comma, say), two entries of access.deny_clients that name one client of a rule, and an
// entry that applies to no rule (it would deny nothing). A document an engine would refuse is
// refused here, so that validate and push refuse it, not each instance of the fleet.
func (c *checker) clientKeys(s *Set) {
	lineErr := func(line int, field, format string, args ...any) {
		c.errs = append(c.errs, &Error{File: c.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	applies := make([]bool, len(s.access.denyClients))
	for i := range s.rules {
		r := &s.rules[i]
		first := map[string]client{} // deny_clients by key
		for j, cl := range s.access.denyClients {
			if !keyedBy(r, cl.part) {
				continue
			}
			applies[j] = true
			k, err := keyOf(r, cl)
			if err != nil {
				lineErr(cl.line, "access.deny_clients", "%s on rule %q: %v", cl, r.Name, err)
				continue
			}
			if d, dup := first[k]; dup {
				lineErr(cl.line, "access.deny_clients", "%s names the client %s names (line %d) on rule %q: give each client once", cl, d, d.line, r.Name)
				continue
			}
			first[k] = cl
		}
		for _, o := range s.overrides {
			if !keyedBy(r, o.client.part) || o.rule != "" && o.rule != r.Name {
				continue
			}
			if _, err := keyOf(r, o.client); err != nil {
				lineErr(o.line, "overrides", "%s on rule %q: %v", o.client, r.Name, err)
			}
		}
	}
	for j, cl := range s.access.denyClients {
		if !applies[j] {
			lineErr(cl.line, "access.deny_clients", "no rule is keyed by %s alone: the entry would deny nothing", cl.spec)
		}
	}
}

// ClientLimits is what a rule's guard does with one client, and why: for tools that explain
// a decision (ratelimit inspect).
type ClientLimits struct {
	// Denied: the access lists refuse the client, without a store call.
	Denied bool
	// Unlimited: the access lists or an override let it through unlimited, without a store call.
	Unlimited bool
	// Policies are the client's policies on the rule, when it is limited: an override's, or
	// the rule's own.
	Policies []ratelimit.Policy
	// Why names the override or the entry of the access lists that decided, with its line,
	// such as "overrides: api_key=acme on rule export: 10/1m0s gcra (line 12)"; "" when the
	// rule's own policies apply.
	Why string
}

// ClientLimits returns what the guard of rule r does with the client whose key (as r's key
// function finds it, such as "hdr:x-api-key:acme") is key: the same choice the engine makes,
// most specific override first, deny winning. A key of a rule keyed by ip ("ip:192.0.2.7",
// or an IPv6 client's /64 as the guard keys it) is matched against the networks too.
func (s *Set) ClientLimits(r *Rule, key string) ClientLimits {
	if ip, ok := strings.CutPrefix(key, "ip:"); ok && len(r.Key) == 1 && r.Key[0] == "ip" {
		if p, err := netip.ParsePrefix(ip); err == nil || strings.Contains(ip, "/") {
			ip = p.Addr().String()
		}
		if a, err := netip.ParseAddr(ip); err == nil {
			a = a.Unmap()
			for _, n := range s.access.deny {
				if n.prefix.Contains(a) {
					return ClientLimits{Denied: true, Why: fmt.Sprintf("access.deny: %s (line %d)", n.text, n.line)}
				}
			}
			for _, n := range s.access.allow {
				if n.prefix.Contains(a) {
					return ClientLimits{Unlimited: true, Why: fmt.Sprintf("access.allow: %s (line %d)", n.text, n.line)}
				}
			}
		}
	}
	for _, cl := range s.access.denyClients {
		if k, err := keyOf(r, cl); err == nil && keyedBy(r, cl.part) && k == key {
			return ClientLimits{Denied: true, Why: fmt.Sprintf("access.deny_clients: %s (line %d)", cl, cl.line)}
		}
	}
	var chosen *override
	for i := range s.overrides {
		o := &s.overrides[i]
		if !keyedBy(r, o.client.part) || o.rule != "" && o.rule != r.Name {
			continue
		}
		if k, err := keyOf(r, o.client); err == nil && k == key && (chosen == nil || chosen.rule == "" && o.rule != "") {
			chosen = o
		}
	}
	if chosen == nil {
		return ClientLimits{Policies: slices.Clone(r.Policies)}
	}
	why := fmt.Sprintf("overrides: %s (line %d)", describeOverride(*chosen), chosen.line)
	if chosen.unlimited {
		return ClientLimits{Unlimited: true, Why: why}
	}
	return ClientLimits{Policies: slices.Clone(chosen.policies), Why: why}
}
