package rls

import "testing"

// A file ending with "---" (an empty second document, as templating tools write) is read by
// the reference (yaml.v2 Unmarshal reads the first document) and was read here before
// 9550104's parent; parseFile now refuses it as "a second YAML document".
// A file that ends with "---" (templating tools write it), alone or before a comment, holds
// one document, as the reference reads it: it was refused as a second document.
func TestTrailingSeparatorIsNoDocument(t *testing.T) {
	base := "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"
	for _, s := range []string{base + "---\n", base + "---\n# nothing\n"} {
		if _, err := ParseConfig(File{Name: "a.yaml", Data: []byte(s)}); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}
