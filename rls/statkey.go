package rls

import (
	"regexp"
	"strings"
)

// statKey is the key envoyproxy/ratelimit names the statistics of rule r by, for a descriptor
// of domain whose entries found it (config_impl.go's GetLimit): the rule's path
// ("domain.key_value.key"), but with the request's entries ("domain.key_value.key_value") when
// the rule has detailed_metric, and with the request's value at each level that has
// value_to_metric. An entry matched by a share_threshold wildcard keeps the wildcard. The
// result is sanitized as the reference's stat names are (sanitizeStatName).
func (c *Config) statKey(domain string, entries []entry, r *rule) string {
	lv := c.domains[domain]
	var detailed, enhanced strings.Builder
	detailed.WriteString(domain)
	enhanced.WriteString(domain)
	shared := map[int]string{} // share_threshold patterns, by entry
	for i, e := range entries {
		if r.detailed {
			detailed.WriteString(".")
			detailed.WriteString(e.key + "_" + e.value)
		}
		var nd *node
		wildcard := ""
		if lv != nil {
			nd = lv.exact[entryKey{e.key, e.value}]
			if nd == nil {
				for _, w := range lv.wildcards {
					if w.key == e.key && globMatch(w.parts, e.value) {
						nd, wildcard = w.node, strings.Join(w.parts, "*")
						break
					}
				}
			}
		}
		byValue := nd != nil
		if nd == nil && lv != nil {
			nd = lv.byKey[e.key]
		}
		if wildcard != "" && nd.shareThreshold {
			shared[i] = wildcard
		}
		enhanced.WriteString(".")
		enhanced.WriteString(e.key)
		if nd != nil {
			value := ""
			switch {
			case wildcard != "" && shared[i] != "":
				value = shared[i]
			case wildcard != "" && nd.valueToMetric:
				value = e.value
			case wildcard != "":
				value = wildcard
			case byValue:
				value = e.value
			case nd.valueToMetric:
				value = e.value
			}
			if value != "" {
				enhanced.WriteString("_" + value)
			}
		}
		if nd == nil || nd.next == nil {
			break
		}
		lv = nd.next
	}
	key := enhanced.String()
	if r.detailed {
		key = detailed.String()
		if len(shared) > 0 {
			var b strings.Builder
			b.WriteString(domain)
			for i, e := range entries {
				b.WriteString(".")
				b.WriteString(e.key)
				switch {
				case shared[i] != "":
					b.WriteString("_" + shared[i])
				case e.value != "":
					b.WriteString("_" + e.value)
				}
			}
			key = b.String()
		}
	}
	return sanitizeStatName(key)
}

// overrideStatKey is the reference's key of a request-supplied limit (descriptorKey): the
// domain and every entry, "key_value" or "key" for an empty value.
func overrideStatKey(domain string, entries []entry) string {
	var b strings.Builder
	b.WriteString(domain)
	for _, e := range entries {
		b.WriteString(".")
		b.WriteString(e.key)
		if e.value != "" {
			b.WriteString("_" + e.value)
		}
	}
	return sanitizeStatName(b.String())
}

var (
	statNameReplacer = strings.NewReplacer(":", "_", "|", "_")
	ipv4             = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)
)

// sanitizeStatName is the reference's utils.SanitizeStatName: ':' and '|' become '_', and so
// do the dots of what looks like an IPv4 address.
func sanitizeStatName(s string) string {
	if !mayHoldIPv4(s) {
		return statNameReplacer.Replace(s)
	}
	return ipv4.ReplaceAllStringFunc(statNameReplacer.Replace(s), func(ip string) string {
		return strings.ReplaceAll(ip, ".", "_")
	})
}

// mayHoldIPv4 reports whether s has three dots each between two digits, as anything ipv4
// matches has: without them, the regular expression need not run.
func mayHoldIPv4(s string) bool {
	n := 0
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '.' && isDigit(s[i-1]) && isDigit(s[i+1]) {
			if n++; n == 3 {
				return true
			}
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// statLabels are the labels the reference's Prometheus mapping (src/stats/prom/
// default_mapper.yaml) gives a stat of key: the domain and first key for a key of two parts,
// the domain and first two keys for a longer one (deeper keys add to the same series).
func statLabels(key string) (domain, key1, key2 string, deep bool) {
	domain, rest, ok := strings.Cut(key, ".")
	if !ok {
		return domain, "", "", false
	}
	key1, rest, ok = strings.Cut(rest, ".")
	if !ok {
		return domain, key1, "", false
	}
	key2, _, _ = strings.Cut(rest, ".")
	return domain, key1, key2, true
}
