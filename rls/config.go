package rls

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// Config is a parsed set of envoyproxy/ratelimit configuration files: one domain a file, its
// descriptors nested. It is immutable once parsed, and safe for concurrent use.
type Config struct {
	domains map[string]*level
	files   []string // the files it was parsed from, in order
	version string   // Version
}

// File is one configuration file: its name (used in errors) and its contents.
type File struct {
	Name string
	Data []byte
}

// Domains returns the domains the configuration has, sorted.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Version names the configuration by its files: "sha256:" and the first 16 hexadecimal digits
// of the SHA-256 of their names and contents, in order. Two instances whose files are the same
// run the same version; the one an instance runs is what the fleet shows (see [Server.ReportFleet]).
func (c *Config) Version() string { return c.version }

// versionOf is the Version of files whose digest is sum.
func versionOf(sum [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(sum[:8]) }

// Files returns the names of the files the configuration was parsed from.
func (c *Config) Files() []string { return slices.Clone(c.files) }

// level is one level of a domain's descriptor tree: what an entry of a request's descriptor
// is matched against, in the reference's order: a key and value given exactly, then the
// wildcard values in file order, then the key alone.
type level struct {
	exact     map[entryKey]*node
	wildcards []wildcard
	byKey     map[string]*node // descriptors with no value: any value of the key
}

type entryKey struct{ key, value string }

// wildcard is a descriptor whose value holds '*', each of which matches any run of bytes.
type wildcard struct {
	key   string
	parts []string // the value split at '*'
	node  *node
}

// node is one descriptor of the file: its limit, if any, and the descriptors nested in it.
type node struct {
	path  string // domain.key_value.key..., the reference's full key, for logs and the debug dump
	share string // share_threshold: the wildcard value that counts for every value it matches
	limit *rule  // nil: none at this level
	next  *level // nil: no nested descriptors
	// valueToMetric and shareThreshold are the descriptor's flags of those names, which only
	// change the key of the reference's metrics (see statKey).
	valueToMetric, shareThreshold bool
}

// rule is the rate_limit of one descriptor.
type rule struct {
	path      string
	file      string
	line      int
	name      string // rate_limit.name, the name replaces refers to; "" none
	unit      rlsv3.RateLimitResponse_RateLimit_Unit
	perUnit   uint32
	unlimited bool
	shadow    bool
	quota     bool
	detailed  bool
	replaces  []string
	// algorithm is rate_limit's algorithm (nil: the reference's fixed window, aligned to the
	// epoch), burst its burst, and also the rule's other windows (see windows.go).
	algorithm algorithms.Algorithm
	burst     int64
	also      []window
	// period makes rate_limit's own window a calendar quota (calendar.go); nil: unit's.
	period *calendar.Period
	// policyName names the rule's counts in the store: a digest of the domain and the rule's
	// path, so that two rules never share a count (see README, "Counters").
	policyName string
}

// units are the rate_limit units and their windows. MONTH is 30 days and YEAR 365 days, as in
// envoyproxy/ratelimit (its windows are multiples of these since the Unix epoch, and so are
// this package's fixed windows: both servers' windows start and end at the same instants).
var units = map[rlsv3.RateLimitResponse_RateLimit_Unit]time.Duration{
	rlsv3.RateLimitResponse_RateLimit_SECOND: time.Second,
	rlsv3.RateLimitResponse_RateLimit_MINUTE: time.Minute,
	rlsv3.RateLimitResponse_RateLimit_HOUR:   time.Hour,
	rlsv3.RateLimitResponse_RateLimit_DAY:    24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_WEEK:   7 * 24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_MONTH:  30 * 24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_YEAR:   365 * 24 * time.Hour,
}

// unitWindow returns the window of unit, and false for UNKNOWN or a value out of the enum.
func unitWindow(u rlsv3.RateLimitResponse_RateLimit_Unit) (time.Duration, bool) {
	w, ok := units[u]
	return w, ok
}

// ConfigError is one problem of a configuration file, at a line of it (1 is the first; 0 when
// the problem is the whole file's).
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

// ParseConfig parses configuration files in envoyproxy/ratelimit's YAML format:
//
//	domain: edge
//	descriptors:
//	  - key: remote_address
//	    rate_limit: {unit: second, requests_per_unit: 10}
//	  - key: path
//	    value: /api/*
//	    rate_limit: {unit: minute, requests_per_unit: 100, name: api}
//
// It refuses, with file and line, an empty domain, a domain in two files, a descriptor with no
// key, two descriptors of one key and value in one level, an unknown or missing unit, a unit
// with unlimited, an empty replaces name or one naming its own limit, share_threshold without
// a wildcard, an unknown field and a value of the wrong type. Every problem is reported, each
// as one error of the errors.Join it returns (each a *ConfigError).
//
// No file is a valid, empty configuration: every request is then answered OK with no limit.
func ParseConfig(files ...File) (*Config, error) {
	c := &Config{domains: map[string]*level{}}
	p := &parser{cfg: c}
	where := map[string]string{} // domain → file:line that declared it
	for _, f := range files {
		c.files = append(c.files, f.Name)
		p.file = f.Name
		domain, line, lv := p.parseFile(f.Data)
		if lv == nil {
			continue
		}
		at := f.Name + ":" + strconv.Itoa(line)
		if prev, ok := where[domain]; ok {
			p.errorf(line, "duplicate domain %q: already declared at %s", domain, prev)
			continue
		}
		where[domain] = at
		c.domains[domain] = lv
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	c.version = versionOf(digest(files))
	return c, nil
}

// parser collects the problems of the files it parses.
type parser struct {
	cfg  *Config
	file string
	errs []error
}

func (p *parser) errorf(line int, format string, args ...any) {
	p.errs = append(p.errs, &ConfigError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// fields reads mapping n, refusing a key not in allowed and a key given twice; it returns the
// value of each key given.
func (p *parser) fields(n *yaml.Node, what string, allowed ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "%s must be a mapping, not %s", what, kindName(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		switch {
		case k.Kind != yaml.ScalarNode:
			p.errorf(k.Line, "%s has a key that is not a string", what)
		case !slices.Contains(allowed, name):
			p.errorf(k.Line, "unknown field %q in %s%s", name, what, misplaced(name))
		case out[name] != nil:
			p.errorf(k.Line, "field %q given twice in %s", name, what)
		default:
			out[name] = v
		}
	}
	return out
}

// misplaced says where a known field that is in the wrong mapping belongs.
func misplaced(name string) string {
	switch name {
	case "unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "burst", "also", "period":
		return " (it belongs in rate_limit)"
	case "key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode", "detailed_metric",
		"value_to_metric", "share_threshold", "metadata":
		return " (it belongs in a descriptor)"
	case "domain":
		return " (it belongs at the top of the file)"
	}
	return ""
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

// emptyDocument reports whether n is a document that holds nothing: a "---" that ends a
// file, alone or before comments, which the reference reads as no document.
func emptyDocument(n *yaml.Node) bool {
	return isNull(n) || n.Kind == yaml.DocumentNode && (len(n.Content) == 0 || isNull(n.Content[0]))
}

func isNull(n *yaml.Node) bool { return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// str reads a string scalar (a number or a boolean is read as written, as the reference does).
func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	if isNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		p.errorf(n.Line, "%s must be a string, not %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) boolean(n *yaml.Node, what string) bool {
	if isNull(n) {
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.errorf(n.Line, "%s must be true or false, not %s", what, kindName(n))
		return false
	}
	return b
}

// maxExpandedNodes bounds what a file's aliases may expand to (a "billion laughs" of nested
// aliases would otherwise take the parser's time and memory).
const maxExpandedNodes = 1 << 20

// expansion is the state of one file's expand: the nodes it may still make, the nodes on the
// path to the one it expands (an alias to one of them would expand for ever), and why it
// stopped, "" while it goes on.
type expansion struct {
	budget int
	path   map[*yaml.Node]bool
	failed string
}

// expand returns n with its aliases replaced by the nodes they name and its merge keys ("<<",
// a mapping or a list of them) merged into their mappings, a key given beside one winning over
// the merged, as the reference's YAML parser (gopkg.in/yaml.v2) reads a file; nil when it
// cannot (x.failed says why). Nodes keep their lines, for errors.
func expand(n *yaml.Node, x *expansion) *yaml.Node {
	if x.budget--; x.budget < 0 {
		x.failed = fmt.Sprintf("the file's aliases expand to more than %d nodes", maxExpandedNodes)
		return nil
	}
	if x.path[n] {
		x.failed = "an alias names a node it is in"
		return nil
	}
	x.path[n] = true
	defer delete(x.path, n)
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return n
		}
		return expand(n.Alias, x)
	case yaml.SequenceNode:
		out := *n
		out.Content = make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			if out.Content[i] = expand(c, x); out.Content[i] == nil {
				return nil
			}
		}
		return &out
	case yaml.MappingNode:
		out := *n
		out.Content = nil
		var merged []*yaml.Node // the pairs of the merge keys' mappings, in order
		given := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], expand(n.Content[i+1], x)
			if v == nil {
				return nil
			}
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				from := []*yaml.Node{v}
				if v.Kind == yaml.SequenceNode {
					from = v.Content
				}
				for _, m := range from {
					if m.Kind != yaml.MappingNode {
						out.Content = append(out.Content, k, v) // refused as an unknown field
						break
					}
					merged = append(merged, m.Content...)
				}
				continue
			}
			given[k.Value] = true
			out.Content = append(out.Content, k, v)
		}
		for i := 0; i+1 < len(merged); i += 2 {
			if k := merged[i]; !given[k.Value] {
				given[k.Value] = true
				out.Content = append(out.Content, k, merged[i+1])
			}
		}
		return &out
	}
	return n
}

// parseFile parses one file and returns its domain, the line of its domain field and its
// descriptor tree; lv is nil when the file has a problem that leaves no domain.
func (p *parser) parseFile(data []byte) (domain string, line int, lv *level) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		p.errorf(yamlErrorLine(err), "invalid YAML: %s", yamlErrorText(err))
		return "", 0, nil
	}
	// The reference reads a file's first document alone: a second one's domain would be
	// dropped without a word, so a file of several is refused.
	var next yaml.Node
	if err := dec.Decode(&next); err != io.EOF && (err != nil || !emptyDocument(&next)) {
		line := next.Line
		if err != nil {
			line = yamlErrorLine(err)
		}
		p.errorf(line, "a second YAML document (after ---): a file holds one domain's configuration; put each in a file of its own")
		return "", 0, nil
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		x := &expansion{budget: maxExpandedNodes, path: map[*yaml.Node]bool{}}
		if root = expand(doc.Content[0], x); root == nil {
			p.errorf(doc.Content[0].Line, "%s", x.failed)
			return "", 0, nil
		}
	}
	if doc.Kind == 0 || isNull(root) {
		p.errorf(0, "config file cannot have empty domain: the file is empty")
		return "", 0, nil
	}
	f := p.fields(root, "the file", "domain", "descriptors")
	if root.Kind != yaml.MappingNode {
		return "", 0, nil
	}
	domain, ok := p.str(f["domain"], "domain")
	line = root.Line
	if f["domain"] != nil {
		line = f["domain"].Line
	}
	if ok && domain == "" {
		p.errorf(line, "config file cannot have empty domain")
	}
	if !ok || domain == "" {
		return "", line, nil
	}
	return domain, line, p.level(f["descriptors"], domain+".", domain)
}

// level parses a list of descriptors, whose full keys start with parent.
func (p *parser) level(n *yaml.Node, parent, domain string) *level {
	lv := &level{exact: map[entryKey]*node{}, byKey: map[string]*node{}}
	if isNull(n) {
		return lv
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n.Line, "descriptors must be a list, not %s", kindName(n))
		return lv
	}
	seen := map[entryKey]int{}
	for _, d := range n.Content {
		f := p.fields(d, "a descriptor", "key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode",
			"detailed_metric", "value_to_metric", "share_threshold", "metadata")
		if d.Kind != yaml.MappingNode {
			continue
		}
		key, okK := p.str(f["key"], "key")
		value, okV := p.str(f["value"], "value")
		if !okK || !okV {
			continue
		}
		if key == "" {
			p.errorf(d.Line, "descriptor has empty key")
			continue
		}
		full := key
		if value != "" {
			full += "_" + value
		}
		path := parent + full
		ek := entryKey{key, value}
		if at, dup := seen[ek]; dup {
			p.errorf(d.Line, "duplicate descriptor composite key '%s' (key %q, value %q, first at line %d)", path, key, value, at)
			continue
		}
		seen[ek] = d.Line
		nd := &node{path: path}
		shadow := p.boolean(f["shadow_mode"], "shadow_mode")
		quota := p.boolean(f["quota_mode"], "quota_mode")
		detailed := p.boolean(f["detailed_metric"], "detailed_metric")
		nd.valueToMetric = p.boolean(f["value_to_metric"], "value_to_metric")
		nd.shareThreshold = p.boolean(f["share_threshold"], "share_threshold")
		if nd.shareThreshold {
			if !strings.Contains(value, "*") {
				p.errorf(d.Line, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", full)
			}
			nd.share = value
		}
		if m := f["metadata"]; !isNull(m) && m.Kind != yaml.MappingNode {
			p.errorf(m.Line, "metadata must be a mapping, not %s", kindName(m))
		}
		if rl := f["rate_limit"]; !isNull(rl) {
			nd.limit = p.rule(rl, path, domain)
			if nd.limit != nil {
				nd.limit.shadow, nd.limit.quota, nd.limit.detailed = shadow, quota, detailed
			}
		}
		if sub := f["descriptors"]; !isNull(sub) {
			nd.next = p.level(sub, path+".", domain)
		}
		switch {
		case value == "":
			lv.byKey[key] = nd
		default:
			lv.exact[ek] = nd
			if strings.Contains(value, "*") {
				lv.wildcards = append(lv.wildcards, wildcard{key: key, parts: strings.Split(value, "*"), node: nd})
			}
		}
	}
	return lv
}

// rule parses a rate_limit.
func (p *parser) rule(n *yaml.Node, path, domain string) *rule {
	f := p.fields(n, "rate_limit", "unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "burst", "also", "period")
	if n.Kind != yaml.MappingNode {
		return nil
	}
	r := &rule{path: path, file: p.file, line: n.Line}
	bad := len(p.errs)
	unitText, _ := p.str(f["unit"], "unit")
	r.unlimited = p.boolean(f["unlimited"], "unlimited")
	v, known := rlsv3.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(unitText)]
	valid := known && v != int32(rlsv3.RateLimitResponse_RateLimit_UNKNOWN)
	line := n.Line
	if f["unit"] != nil {
		line = f["unit"].Line
	}
	period := !isNull(f["period"])
	switch {
	case period && f["unit"] != nil:
		p.errorf(line, "%s", unitWithPeriod)
	case period:
		// the unit is the period's (windowsOf)
	case r.unlimited && valid:
		p.errorf(line, "should not specify rate limit unit when unlimited")
	case !r.unlimited && !valid:
		p.errorf(line, "invalid rate limit unit '%s' (one of second, minute, hour, day, week, month, year)", unitText)
	}
	r.unit = rlsv3.RateLimitResponse_RateLimit_Unit(v)
	if rpu := f["requests_per_unit"]; !isNull(rpu) {
		var x int64
		if rpu.Kind != yaml.ScalarNode || rpu.Decode(&x) != nil || x < 0 || x > math.MaxUint32 {
			p.errorf(rpu.Line, "requests_per_unit must be a whole number from 0 to %d, not %s", uint32(math.MaxUint32), kindName(rpu))
		} else {
			r.perUnit = uint32(x)
		}
	}
	r.name, _ = p.str(f["name"], "name")
	if rep := f["replaces"]; !isNull(rep) {
		if rep.Kind != yaml.SequenceNode {
			p.errorf(rep.Line, "replaces must be a list, not %s", kindName(rep))
		} else {
			for _, e := range rep.Content {
				ef := p.fields(e, "a replaces entry", "name")
				if e.Kind != yaml.MappingNode {
					continue
				}
				name, _ := p.str(ef["name"], "name")
				switch {
				case name == "":
					p.errorf(e.Line, "should not have an empty replaces entry")
				case name == r.name:
					p.errorf(e.Line, "replaces should not contain name of same descriptor")
				default:
					r.replaces = append(r.replaces, name)
				}
			}
		}
	}
	p.windowsOf(r, f)
	if r.period != nil {
		r.unit = reportUnit(r.period)
	}
	if len(p.errs) > bad {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write([]byte(path))
	r.policyName = fmt.Sprintf("rls-%016x", h.Sum64())
	if err := r.validate(); err != nil {
		p.errorf(n.Line, "%v", err)
		return nil
	}
	return r
}

// yamlErrorLine finds the line in a YAML parser's error ("yaml: line 3: ..."); 0 if none.
func yamlErrorLine(err error) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		rest := s[i+len("line "):]
		j := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if j > 0 {
			if n, err := strconv.Atoi(rest[:j]); err == nil {
				return n
			}
		}
	}
	return 0
}

// yamlErrorText is a YAML parser's error without its "yaml: line N:" prefix.
func yamlErrorText(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.HasPrefix(s, "line ") {
		if i := strings.Index(s, ": "); i >= 0 {
			s = s[i+2:]
		}
	}
	return s
}

// lookup finds the rule of a request's descriptor in domain, as the reference does: each entry
// in turn goes one level down the tree (its key and value exactly, else a wildcard value of
// its key, else its key with no value); the rule is the one of the level the last entry
// reached. A descriptor with more entries than the tree is deep, or whose entries leave the
// tree, has none. It returns nil for an unknown domain.
func (c *Config) lookup(domain string, entries []entry) *rule {
	r, _ := c.match(domain, entries)
	return r
}

// match is lookup, and returns the entries the rule counts: entries themselves, or, where an
// entry was matched by a wildcard value with share_threshold, a copy with that wildcard in its
// value (every value it matches shares one count, as in the reference).
func (c *Config) match(domain string, entries []entry) (*rule, []entry) {
	lv := c.domains[domain]
	if lv == nil {
		return nil, entries
	}
	counted := entries
	for i, e := range entries {
		nd := lv.exact[entryKey{e.key, e.value}]
		if nd == nil {
			for _, w := range lv.wildcards {
				if w.key == e.key && globMatch(w.parts, e.value) {
					nd = w.node
					break
				}
			}
			if nd != nil && nd.share != "" {
				if &counted[0] == &entries[0] {
					counted = slices.Clone(entries)
				}
				counted[i].value = nd.share
			}
		}
		if nd == nil {
			nd = lv.byKey[e.key]
		}
		if nd == nil {
			return nil, entries
		}
		if i == len(entries)-1 {
			return nd.limit, counted
		}
		if nd.next == nil {
			return nil, entries
		}
		lv = nd.next
	}
	return nil, entries
}

// entry is one key and value of a request's descriptor.
type entry struct{ key, value string }

// globMatch reports whether value matches a pattern split at its '*'s, each '*' matching any
// run of bytes (none included).
func globMatch(parts []string, value string) bool {
	if len(parts) == 1 {
		return parts[0] == value
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(value) < len(first)+len(last) || !strings.HasPrefix(value, first) || !strings.HasSuffix(value, last) {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return true
}

// rules returns every rule of the configuration, for the server to build their limiters.
func (c *Config) rules() []*rule {
	var out []*rule
	var walk func(lv *level)
	visit := func(nd *node) {
		if nd.limit != nil {
			out = append(out, nd.limit)
		}
		if nd.next != nil {
			walk(nd.next)
		}
	}
	walk = func(lv *level) {
		for _, nd := range lv.byKey {
			visit(nd)
		}
		for _, nd := range lv.exact {
			visit(nd)
		}
	}
	for _, lv := range c.domains {
		walk(lv)
	}
	return out
}

// Dump writes the configuration's rules, one a line, sorted, in the style of
// envoyproxy/ratelimit's /rlconfig.
func (c *Config) Dump() string {
	var lines []string
	for _, r := range c.rules() {
		if r.unlimited {
			lines = append(lines, fmt.Sprintf("%s: unlimited", r.path))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: unit=%s requests_per_unit=%d%s, shadow_mode: %t, quota_mode: %t",
			r.path, r.unit, r.perUnit, r.dumpWindows(), r.shadow, r.quota))
	}
	slices.Sort(lines)
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
