package forwarded

import (
	"reflect"
	"strings"
	"testing"
)

// fwd is one parsed Forwarded element: for, by, host, proto.
type fwd = [4]string

func TestParseForwarded(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []fwd
		err  string
	}{
		{in: "for=192.0.2.60;proto=http;by=203.0.113.43", want: []fwd{{"192.0.2.60", "203.0.113.43", "", "http"}}},
		{in: `For="[2001:db8:cafe::17]:4711"`, want: []fwd{{"[2001:db8:cafe::17]:4711", "", "", ""}}},
		{in: "for=192.0.2.43, for=198.51.100.17", want: []fwd{{"192.0.2.43", "", "", ""}, {"198.51.100.17", "", "", ""}}},
		{in: ` for=a ;  host=example.com ,, ,for=b;`, want: []fwd{{"a", "", "example.com", ""}, {"b", "", "", ""}}},
		{in: `for="a\"b\\c"`, want: []fwd{{`a"b\c`, "", "", ""}}},
		{in: `for="a,b;c=d", for=e`, want: []fwd{{"a,b;c=d", "", "", ""}, {"e", "", "", ""}}},
		{in: "for=a;ext=1;secret=\"x\"", want: []fwd{{"a", "", "", ""}}},
		{in: "", want: nil},
		{in: " , ;, ", want: nil},
		{in: "for", err: "want '=' after parameter"},
		{in: "for =a", err: "want '=' after parameter"},
		{in: "for=", err: "want a value"},
		{in: `for=""`, err: `parameter "for" is empty`},
		{in: "for=a;FOR=b", err: `parameter "for" appears twice`},
		{in: "for=a b", err: "want ';' or ',' after a parameter"},
		{in: `for="abc`, err: "unterminated quoted string"},
		{in: `for="abc\`, err: "unterminated quoted string"},
		{in: "for=\"a\x01\"", err: "control character"},
		{in: "for=\"a\\\x7f\"", err: "control character"},
		{in: "=a", err: "want a parameter name"},
		{in: "for=[::1]", err: "want a value"}, // an IPv6 node must be quoted
		{in: strings.Repeat("for=a,", 65), err: "more than 64 elements"},
	} {
		got, err := parse(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseForwarded(%q): got %q, %v; want an error containing %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || !reflect.DeepEqual(got, c.want)):
			t.Errorf("ParseForwarded(%q): got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestParseForwardedNode(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "192.0.2.43", want: "192.0.2.43"},
		{in: "192.0.2.43:47011", want: "192.0.2.43"},
		{in: "192.0.2.43:_port", want: "192.0.2.43"},
		{in: "[2001:db8:cafe::17]", want: "2001:db8:cafe::17"},
		{in: "[2001:db8:cafe::17]:4711", want: "2001:db8:cafe::17"},
		{in: "[::ffff:192.0.2.1]:1", want: "192.0.2.1"},
		{in: "[fe80::1%25eth0]", want: "fe80::1"},
		{in: "2001:db8::1", want: "2001:db8::1"}, // lenient: unbracketed, no port
		{in: "unknown", err: "does not disclose the client address"},
		{in: "UNKNOWN:80", err: "does not disclose"},
		{in: "_gazonk", err: "does not disclose"},
		{in: "[_x]", err: "does not disclose"},
		{in: "[2001:db8::1", err: "has no closing ']'"},
		{in: "[2001:db8::1]x", err: "has text after ']'"},
		{in: "[192.0.2.1]", err: "is not an IP address"},
		{in: "192.0.2.1:123456", err: "has an invalid port"},
		{in: "192.0.2.1:8o", err: "has an invalid port"},
		{in: "192.0.2.1:_", err: "has an invalid port"},
		{in: "192.0.2.1:_a/b", err: "has an invalid port"},
		{in: "example.com", err: "is not an IP address"},
		{in: "", err: "is not an IP address"},
	} {
		got, err := ParseNode(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("node %q: got %v, %v; want an error containing %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got.String() != c.want):
			t.Errorf("node %q: got %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// FuzzForwarded holds the Forwarded parser to its grammar: it never panics, and what it
// parses, written back with every value quoted, parses to the same elements.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"for=192.0.2.60;proto=http;by=203.0.113.43",
		`for="[2001:db8:cafe::17]:4711", for=unknown`,
		`for="a\"b\\c";host="x,y"`,
		" , ;for=_hidden;ext=\"\t\", ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		elems, err := parse(v)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, e := range elems {
			if i > 0 {
				b.WriteString(", ")
			}
			sep := ""
			for j, name := range []string{"for", "by", "host", "proto"} {
				if e[j] == "" {
					continue
				}
				b.WriteString(sep + name + `="`)
				b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e[j]))
				b.WriteString(`"`)
				sep = ";"
			}
			if _, err := ParseNode(e[0]); err != nil && e[0] != "" && !strings.Contains(err.Error(), "for=") {
				t.Fatalf("node %q: error %q does not name it", e[0], err)
			}
		}
		again, err := parse(b.String())
		if err != nil || !reflect.DeepEqual(again, elems) {
			t.Fatalf("%q parsed to %q, written back as %q, parsed to %q, %v", v, elems, b.String(), again, err)
		}
	})
}

// parse parses v into the elements' for, by, host and proto, for the tables above.
func parse(v string) ([]fwd, error) {
	elems, err := Parse(v)
	if err != nil || len(elems) == 0 {
		return nil, err
	}
	out := make([]fwd, len(elems))
	for i, e := range elems {
		out[i] = fwd{e.For, e.By, e.Host, e.Proto}
	}
	return out, nil
}
