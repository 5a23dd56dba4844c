package rules

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// rule1 is a valid rule, for documents whose other rules are at fault.
const rule1 = "  - {name: ok, key: ip, policies: [{limit: 10, window: 1s}]}\n"

// TestBadDocuments checks each problem's place: every error line must start with the wanted
// "file:line: field: ", and say the wanted words after it, in order.
func TestBadDocuments(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // default limits.yaml
		doc  string
		want []string // "file:line: field: message prefix", one per problem, in order
	}{
		// Syntax.
		{name: "yaml syntax", doc: "rules:\n  - name: a\n    key: [ip\n", want: []string{ // the line of the '['
			"limits.yaml:3: YAML syntax: did not find expected ',' or ']'"}},
		{name: "yaml tab", doc: "rules:\n\t- name: a\n", want: []string{
			"limits.yaml:2: YAML syntax: found character that cannot start any token"}},
		{name: "json syntax", file: "limits.json", doc: "{\n  \"rules\": [\n    {\"name\": \"a\",}\n  ]\n}", want: []string{
			"limits.json:3: JSON syntax: invalid character '}' looking for beginning of object key string"}},
		{name: "json truncated", file: "limits.json", doc: "{\n  \"rules\": [\n    {\"name\": \"a\"\n\n", want: []string{
			"limits.json:3: JSON syntax: unexpected end of the document"}},
		{name: "json trailing data", file: "limits.json", doc: "{\"rules\": []}\n{}\n", want: []string{
			"limits.json:2: JSON syntax: data after the end of the document"}},
		{name: "json too deep", file: "limits.json", doc: "{\"rules\": [], \"x\":\n" + strings.Repeat("[", 70), want: []string{
			"limits.json:2: JSON syntax: the document nests more than 64 levels deep"}},
		{name: "empty", doc: "# nothing\n", want: []string{
			"limits.yaml: the file is empty; want a mapping with rules"}},
		{name: "two documents", doc: "rules: []\n---\nrules: []\n", want: []string{
			"limits.yaml:2: a second YAML document"}}, // the line of its ---

		// Unknown and repeated fields, at every level.
		{name: "unknown fields", doc: "versions: 1\nrules:\n  - name: a\n    keys: ip\n    key: ip\n    match: {pattern: /a, method: GET}\n    policies:\n      - {limit: 1, window: 1s, windw: 1m}\n", want: []string{
			"limits.yaml:1: versions: unknown field; want version, allow_empty, access, rules, overrides",
			"limits.yaml:4: rules[0].keys: unknown field; want name, match, key, tier, cost, estimate, settle, fail, policies",
			"limits.yaml:6: rules[0].match.method: unknown field; want pattern",
			"limits.yaml:8: rules[0].policies[0].windw: unknown field; want name, algorithm, rate, limit, window, period, burst, shadow",
		}},
		{name: "json unknown fields", file: "limits.json", doc: "{\n  \"rules\": [\n    {\n      \"name\": \"a\", \"key\": \"ip\",\n      \"policies\": [\n        {\"limit\": 1, \"window\": \"1s\",\n         \"brust\": 2}\n      ]\n    }\n  ],\n  \"extra\": true\n}\n", want: []string{
			"limits.json:7: rules[0].policies[0].brust: unknown field",
			"limits.json:11: extra: unknown field",
		}},
		{name: "yaml field twice", doc: "rules:\n  - name: a\n    key: ip\n    name: b\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			"limits.yaml:4: rules[0].name: given twice (first at line 2)"}},
		{name: "json field twice", file: "limits.json", doc: "{\"allow_empty\": true, \"rules\": [],\n \"rules\": []}", want: []string{
			"limits.json:2: rules: given twice (first at line 1)"}},
		{name: "merge key", doc: "rules:\n  - <<: {name: a}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			"limits.yaml:2: rules[0].<<: unknown field",
			"limits.yaml:2: rules[0].name: required"}},

		// Missing fields.
		{name: "no rules", doc: "version: x\n", want: []string{
			"limits.yaml:1: rules: required"}},
		{name: "missing rule fields", doc: "rules:\n  - tier: free\n", want: []string{
			"limits.yaml:2: rules[0].name: required",
			"limits.yaml:2: rules[0].key: required",
			"limits.yaml:2: rules[0].policies: required"}},
		{name: "missing policy fields", doc: "rules:\n  - name: a\n    key: ip\n    policies:\n      - name: p\n", want: []string{
			"limits.yaml:5: rules[0].policies[0].limit: required (or rate)",
			"limits.yaml:5: rules[0].policies[0].window: required (or period, or rate)"}},
		{name: "empty required", doc: "rules:\n  - name:\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			"limits.yaml:2: rules[0].name: required, and empty"}},

		// Wrong types.
		{name: "document is a list", doc: "- rules\n", want: []string{
			"limits.yaml:1: want a mapping of version, allow_empty, access, rules, overrides, got a list"}},
		{name: "rules is a mapping", doc: "rules: {name: a}\n", want: []string{
			"limits.yaml:1: rules: want a list, got a mapping"}},
		{name: "wrong types", doc: "rules:\n  - name: 7\n    match: [/a]\n    key: {ip: true}\n    tier: [free]\n    cost: \"2\"\n    fail: true\n    policies:\n      - {name: 1, algorithm: 2, limit: \"10\", window: 1s, burst: 1.5, shadow: \"no\"}\n", want: []string{
			"limits.yaml:2: rules[0].name: want text, got 7",
			"limits.yaml:3: rules[0].match: want a mapping of pattern, got a list",
			"limits.yaml:4: rules[0].key: want text, got a mapping",
			"limits.yaml:5: rules[0].tier: want text, got a list",
			"limits.yaml:6: rules[0].cost: want an integer, got \"2\"",
			"limits.yaml:7: rules[0].fail: want text, got true",
			"limits.yaml:9: rules[0].policies[0].name: want text, got 1",
			"limits.yaml:9: rules[0].policies[0].algorithm: want text, got 2",
			"limits.yaml:9: rules[0].policies[0].limit: want an integer, got \"10\"",
			"limits.yaml:9: rules[0].policies[0].burst: want an integer, got 1.5",
			"limits.yaml:9: rules[0].policies[0].shadow: want true or false, got \"no\"",
		}},
		{name: "json wrong types", file: "limits.json", doc: "{\"rules\": [\n{\"name\": \"a\", \"key\": \"ip\",\n \"policies\": [{\"limit\": 1e3, \"window\": 60}]}]}", want: []string{
			"limits.json:3: rules[0].policies[0].limit: want an integer, got 1e3",
			"limits.json:3: rules[0].policies[0].window: want a duration such as 1s, 1m30s or 1d, got 60",
		}},
		{name: "integer out of range", doc: "rules:\n  - name: a\n    key: ip\n    cost: 9223372036854775808\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			"limits.yaml:4: rules[0].cost: 9223372036854775808 is out of range"}},
		{name: "json integer out of range", file: "limits.json", doc: "{\"rules\": [{\"name\": \"a\", \"key\": \"ip\", \"cost\": -9223372036854775809,\n\"policies\": [{\"limit\": 1, \"window\": \"1s\"}]}]}", want: []string{
			"limits.json:1: rules[0].cost: -9223372036854775809 is out of range"}},

		// Durations.
		{name: "bad durations", doc: "rules:\n  - name: a\n    key: ip\n    policies:\n      - {limit: 1, window: 1x}\n      - {limit: 1, window: \"\"}\n      - {limit: 1, window: 60}\n", want: []string{
			`limits.yaml:5: rules[0].policies[0].window: "1x" is not a duration`,
			`limits.yaml:6: rules[0].policies[1].window: "" is not a duration`,
			`limits.yaml:7: rules[0].policies[2].window: want a duration such as 1s, 1m30s or 1d, got 60`,
		}},

		// Limits the core refuses, in its own words.
		{name: "core refuses", doc: "rules:\n  - name: a\n    key: ip\n    policies:\n" +
			"      - {limit: 0, window: 1s}\n" +
			"      - {limit: 1, window: 1us}\n" +
			"      - {limit: 1, window: 1s, burst: -1}\n" +
			"      - {algorithm: fixed_window, limit: 5, window: 1s, burst: 10}\n" +
			"      - {algorithm: sliding_window_log, limit: 5000, window: 1s}\n" +
			"      - {name: Bad, limit: 1, window: 1s}\n" +
			"      - {limit: 1, window: 8784h, burst: 100}\n" +
			"      - {limit: 3, window: 1s, burst: 1099511627776}\n", want: []string{
			`limits.yaml:5: rules[0].policies[0].limit: ratelimit: invalid policy "gcra-0-per-1s": Limit is 0; it must be at least 1`,
			`limits.yaml:6: rules[0].policies[1].window: ratelimit: invalid policy "gcra-1-per-1us": Window is 1µs; it must be at least 1ms`,
			`limits.yaml:7: rules[0].policies[2].burst: ratelimit: invalid policy "gcra-1-per-1s": Burst is -1`,
			`limits.yaml:8: rules[0].policies[3].burst: ratelimit: invalid policy "fixed-window-5-per-1s": Burst is 10, but fixed_window does not use a burst`,
			`limits.yaml:9: rules[0].policies[4].limit: ratelimit: invalid policy "sliding-window-log-5000-per-1s": Limit is 5000, but the sliding log`,
			`limits.yaml:10: rules[0].policies[5].name: ratelimit: invalid policy "Bad": Name must be a lower-case token`,
			`limits.yaml:11: rules[0].policies[6].burst: ratelimit: invalid policy "gcra-1-per-366d": Burst 100 takes longer than 2^50µs`,
			`limits.yaml:12: rules[0].policies[7].burst: ratelimit: invalid policy "gcra-3-per-1s": Burst 1099511627776 at 3 per 1000000µs is beyond exact arithmetic`,
		}},
		{name: "every policy shadow", doc: "rules:\n  - name: a\n    key: ip\n    policies:\n      - {limit: 1, window: 1s, shadow: true}\n", want: []string{
			"limits.yaml:5: rules[0].policies: ratelimit: invalid policy: every policy has Shadow set"}},
		{name: "made-up names collide", doc: "rules:\n  - name: a\n    key: ip\n    policies: [{limit: 1, window: 1s}, {limit: 1, window: 1s, shadow: true}]\n", want: []string{
			`limits.yaml:4: rules[0].policies: ratelimit: invalid policy "gcra-1-per-1s": two policies have this name`}},
		{name: "cost above capacity", doc: "rules:\n  - name: a\n    key: ip\n    cost: 11\n    policies: [{name: p, limit: 10, window: 1s}, {limit: 100, window: 1s, shadow: true}]\n", want: []string{
			`limits.yaml:4: rules[0].cost: 11 is more than policy "p" can ever admit at once (10)`}},
		{name: "unknown algorithm", doc: "rules:\n  - name: a\n    key: ip\n    policies: [{algorithm: sliding_log, limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:4: rules[0].policies[0].algorithm: unknown algorithm "sliding_log"; want one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket, leaky_bucket_shaping, gcra`}},

		// Names.
		{name: "bad rule name", doc: "rules:\n  - name: Search\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:2: rules[0].name: "Search" is not a lower-case token`}},
		{name: "duplicate rule names", doc: "rules:\n  - name: a\n    key: ip\n    tier: x\n    policies: [{limit: 1, window: 1s}]\n  - name: a\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:6: rules[1].name: "a" is also the name of rules[0] (line 2)`}},
		{name: "duplicate policy names", doc: "rules:\n  - name: a\n    key: ip\n    policies:\n      - {name: p, limit: 1, window: 1s}\n      - {name: p, limit: 10, window: 1m}\n", want: []string{
			`limits.yaml:6: rules[0].policies[1].name: "p" is also the name of rules[0].policies[0] (line 5)`}},

		// Keys.
		{name: "bad keys", doc: "rules:\n  - name: a\n    key:\n      - ip\n      - bogus\n      - \"header:X Y\"\n      - \"header:\"\n      - user\n      - api_key\n      - header:x-api-key\n      - IP\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:5: rules[0].key[1]: unknown key "bogus"; want ip, route, method, user, api_key or header:<Name>`,
			`limits.yaml:6: rules[0].key[2]: "header:X Y": "X Y" is not a header name`,
			`limits.yaml:7: rules[0].key[3]: "header:": "" is not a header name`,
			`limits.yaml:8: rules[0].key[4]: "user" needs to know where the application stores the user's id: pass rules.WithUserKey to Parse`,
			`limits.yaml:10: rules[0].key[6]: "header:x-api-key" is the same part as rules[0].key[5]`,
			`limits.yaml:11: rules[0].key[7]: unknown key "IP"`,
		}},
		{name: "empty key", doc: "rules:\n  - name: a\n    key: []\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			"limits.yaml:3: rules[0].key: empty; give at least one of"}},
		{name: "too many key parts", doc: "rules:\n  - name: a\n    key: [ip, route, method, api_key, header:a, header:b, header:c, header:d, header:e]\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			"limits.yaml:3: rules[0].key: 9 items; at most 8 are allowed"}},

		// Patterns.
		{name: "bad patterns", doc: "rules:\n  - name: a\n    match: {pattern: \"GET /{\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: b\n    match: {pattern: \"/a/{x}/{x}\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: c\n    match: {pattern: \"\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: d\n    match: {pattern: \"GET\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:3: rules[0].match.pattern: "GET /{" is not a ServeMux pattern: at offset 5: bad wildcard segment`,
			`limits.yaml:7: rules[1].match.pattern: "/a/{x}/{x}" is not a ServeMux pattern: at offset 7: duplicate wildcard name "x"`,
			`limits.yaml:11: rules[2].match.pattern: empty; leave out match to match every request`,
			`limits.yaml:15: rules[3].match.pattern: "GET" is not a ServeMux pattern: at offset 0: host/path missing /`,
		}},
		{name: "patterns that match no request", doc: "rules:\n  - name: a\n    match: {pattern: \"post /login\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: b\n    match: {pattern: \"example.com:8443/x\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: c\n    match: {pattern: \"/a/../b\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: d\n    match: {pattern: \"GET /api//items/{id}\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: e\n    match: {pattern: \"/files/./x/\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: f\n    match: {pattern: \"GET example.com/a/{x}/\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:3: rules[0].match.pattern: "post /login" matches no request: methods are case-sensitive, and clients send POST`,
			`limits.yaml:7: rules[1].match.pattern: "example.com:8443/x" matches no request: a request's host is matched without its port; write example.com`,
			`limits.yaml:11: rules[2].match.pattern: "/a/../b" matches no request but CONNECT: the paths of the others are matched cleaned, without empty, "." or ".." segments`,
			`limits.yaml:15: rules[3].match.pattern: "GET /api//items/{id}" is not a ServeMux pattern: at offset 4: non-CONNECT pattern with unclean path can never match`,
			`limits.yaml:19: rules[4].match.pattern: "/files/./x/" matches no request but CONNECT: the paths of the others are matched cleaned, without empty, "." or ".." segments`,
		}},
		{name: "conflicting patterns", doc: "rules:\n  - name: a\n    match: {pattern: \"/a/{x}\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: b\n    match: {pattern: \"/{y}/b\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: c\n    match: {pattern: \"/{y}/b\"}\n    tier: free\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: d\n    match: {pattern: \"GET /a/{z}\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:7: rules[1].match.pattern: "/{y}/b" conflicts with "/a/{x}" of rules[0] (line 3): /{y}/b and /a/{x} both match some paths, like "/a/b".`,
		}},
		{name: "same pattern written apart", doc: "rules:\n  - name: a\n    match: {pattern: \"/a/{x}\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: b\n    match: {pattern: \"/a/{y}\"}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:7: rules[1].match.pattern: "/a/{y}" conflicts with "/a/{x}" of rules[0] (line 3): /a/{y} matches the same requests as /a/{x}`,
		}},
		{name: "same pattern and tier", doc: "rules:\n  - name: a\n    match: {pattern: /a}\n    tier: free\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: b\n    match: {pattern: /a}\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: c\n    match: {pattern: /a}\n    tier: free\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n" + "  - name: d\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n  - name: e\n    key: ip\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:12: rules[2].match.pattern: rules[0] (line 2) already has pattern "/a" and tier "free"; each pattern and tier may have one rule`,
			`limits.yaml:19: rules[4]: rules[3] (line 16) already has no pattern and no tier`,
		}},

		// Fail mode, cost, policies, tier, version.
		{name: "bad fail mode", doc: "rules:\n  - name: a\n    key: ip\n    fail: shut\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:4: rules[0].fail: "shut" is not a fail mode; want open or closed`}},
		{name: "negative cost", doc: "rules:\n  - name: a\n    key: ip\n    cost: -1\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			"limits.yaml:4: rules[0].cost: -1 is negative; a cost is 0 (charge nothing) or more"}},
		{name: "empty policies", doc: "rules:\n  - name: a\n    key: ip\n    policies: []\n", want: []string{
			"limits.yaml:4: rules[0].policies: empty; a rule needs at least one policy"}},
		{name: "too many policies", doc: "rules:\n  - name: a\n    key: ip\n    policies: [" + strings.Repeat("{limit: 1, window: 1s},", 33) + "]\n", want: []string{
			"limits.yaml:4: rules[0].policies: 33 items; at most 32 are allowed"}},
		{name: "bad labels", doc: "version: \" 1\"\nrules:\n  - name: a\n    key: ip\n    tier: \"\"\n    policies: [{limit: 1, window: 1s}]\n  - name: b\n    key: ip\n    tier: \"a\\tb\"\n    policies: [{limit: 1, window: 1s}]\n  - name: c\n    key: ip\n    tier: " + strings.Repeat("t", 129) + "\n    policies: [{limit: 1, window: 1s}]\n", want: []string{
			`limits.yaml:1: version: " 1" is empty or starts or ends with a space`,
			`limits.yaml:5: rules[0].tier: "" is empty or starts or ends with a space`,
			`limits.yaml:9: rules[1].tier: "a\tb" holds a control character`,
			`limits.yaml:13: rules[2].tier: 129 bytes; at most 128 are allowed`,
		}},

		// Charged after the response: estimate and settle.
		{name: "settle without estimate", doc: "rules:\n  - name: a\n    key: ip\n    settle: reported\n    policies: [{limit: 100, window: 1m}]\n", want: []string{
			"limits.yaml:4: rules[0].settle: settle needs an estimate: what each request holds while it runs"}},
		{name: "estimate without settle", doc: "rules:\n  - name: a\n    key: ip\n    estimate: 20\n    policies: [{limit: 100, window: 1m}]\n", want: []string{
			"limits.yaml:4: rules[0].estimate: an estimate without settle; give settle: reported or written, or write cost:"}},
		{name: "cost beside estimate", doc: "rules:\n  - name: a\n    key: ip\n    cost: 5\n    estimate: 20\n    settle: written\n    policies: [{limit: 100, window: 1m}]\n", want: []string{
			"limits.yaml:4: rules[0].cost: cost beside estimate and settle; a rule charged after the response holds its estimate while it runs: remove cost"}},
		{name: "unknown settle", doc: "rules:\n  - name: a\n    key: ip\n    estimate: 20\n    settle: tokens\n    policies: [{limit: 100, window: 1m}]\n", want: []string{
			`limits.yaml:5: rules[0].settle: "tokens" is not a settle source; want reported (what the handler reported with cost.Report) or written (the bytes of the response body)`}},
		{name: "bad estimate and settle", doc: "rules:\n  - name: a\n    key: ip\n    estimate: -1\n    settle: 5\n    policies: [{limit: 100, window: 1m}]\n  - name: b\n    key: ip\n    tier: t\n    estimate: x\n    settle: reported\n    policies: [{limit: 100, window: 1m}]\n", want: []string{
			"limits.yaml:4: rules[0].estimate: -1 is negative; an estimate is 0 or more",
			"limits.yaml:5: rules[0].settle: want text, got 5",
			`limits.yaml:10: rules[1].estimate: want an integer, got "x"`}},
		{name: "settle of an in-flight policy", doc: "rules:\n  - name: a\n    key: ip\n    estimate: 20\n    settle: reported\n    policies:\n      - {limit: 100, window: 1m}\n      - {algorithm: in_flight, limit: 2, window: 30s}\n", want: []string{
			`limits.yaml:5: rules[0].settle: ratelimit: NewGuard: ChargeAfter: ratelimit: invalid policy "in-flight-2": an in-flight policy takes no estimate to settle`}},
		{name: "settle of a shaping policy", doc: "rules:\n  - name: a\n    key: ip\n    estimate: 20\n    settle: written\n    policies: [{algorithm: leaky_bucket_shaping, limit: 10, window: 1s}]\n", want: []string{
			`limits.yaml:5: rules[0].settle: ratelimit: NewGuard: ChargeAfter: ratelimit: invalid policy "leaky-bucket-shaping-10-per-1s": a shaping policy takes no estimate to settle`}},
		{name: "override of a settled rule that cannot hold", doc: "rules:\n  - name: a\n    key: api_key\n    estimate: 20\n    settle: reported\n    policies: [{limit: 100, window: 1m}]\n  - name: b\n    match: {pattern: /b}\n    key: api_key\n    policies: [{limit: 100, window: 1m}]\noverrides:\n  - client: {api_key: acme}\n    policies: [{algorithm: in_flight, limit: 2, window: 30s}]\n", want: []string{
			`limits.yaml:13: overrides[0].policies: rule "a" has settle: reported, so these policies hold its estimate: ratelimit: NewGuard: ChargeAfter: ratelimit: invalid policy "in-flight-2"`}},

		// Bounds.
		{name: "too large", doc: "rules: []\n" + strings.Repeat("#", MaxFileSize), want: []string{
			"limits.yaml: the file is 1048586 bytes; a rules file may be at most 1048576 (1 MiB)"}},
		{name: "too many rules", doc: "rules:\n" + strings.Repeat("- {}\n", MaxRules+1), want: []string{
			"limits.yaml:2: rules: 10001 items; at most 10000 are allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = "limits.yaml"
			}
			s, err := Parse(file, []byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse succeeded (%d rules); want %d errors", len(s.rules), len(tc.want))
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("the error is a %T, not Errors: %v", err, err)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.want), err)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s...", i, e, tc.want[i])
				}
			}
		})
	}
}

func TestTooManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&b, "  - {name: r%d, key: ip, fail: shut, policies: [{limit: 1, window: 1s}], tier: t%d}\n", i, i)
	}
	_, err := Parse("limits.yaml", []byte(b.String()))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 101 {
		t.Fatalf("got %d errors; want the first 100 and one more", len(errs))
	}
	if last := errs[100].Error(); last != "limits.yaml: and 50 more problems" {
		t.Errorf("the last error is %q", last)
	}
	if first := errs[0].Error(); !strings.HasPrefix(first, "limits.yaml:2: rules[0].fail:") {
		t.Errorf("the first error is %q", first)
	}
}
