package prefixset

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func mustSet(t testing.TB, nets ...string) *Set {
	t.Helper()
	var es []Entry
	for i, n := range nets {
		p, err := Parse(n)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, Entry{Prefix: p, Source: "line " + string(rune('1'+i))})
	}
	s, err := New(es)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContains(t *testing.T) {
	s := mustSet(t, "10.0.0.0/8", "192.168.1.7", "2001:db8:1:2::/64", "203.0.113.0/24")
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"10.1.2.3", true}, {"10.255.255.255", true}, {"11.0.0.0", false}, {"9.255.255.255", false},
		{"192.168.1.7", true}, {"192.168.1.8", false},
		{"::ffff:10.1.2.3", true}, // a dual-stack listener's IPv4 client
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", true}, {"2001:db8:1:2::1", true}, {"2001:db8:1:3::1", false},
		{"203.0.113.255", true}, {"203.0.114.0", false},
		{"::a00:1", false}, // an IPv6 address whose low bits spell 10.0.0.1 is not IPv4's
	} {
		if got := s.Contains(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Contains(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
	if (*Set)(nil).Contains(netip.MustParseAddr("10.0.0.1")) || s.Contains(netip.Addr{}) {
		t.Error("a nil set or an invalid address matched")
	}
}

func TestEdgesOfTheSpace(t *testing.T) {
	s := mustSet(t, "0.0.0.0/0", "::/0")
	for _, a := range []string{"0.0.0.0", "255.255.255.255", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"} {
		if !s.Contains(netip.MustParseAddr(a)) {
			t.Errorf("%s is outside the whole space", a)
		}
	}
	top := mustSet(t, "255.255.255.255/32", "255.255.255.254/31", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128")
	if !top.Contains(netip.MustParseAddr("255.255.255.255")) || top.Contains(netip.MustParseAddr("255.255.255.253")) {
		t.Error("the last IPv4 addresses are matched wrongly")
	}
}

func TestParse(t *testing.T) {
	for _, bad := range []string{"", "10.0.0.0/33", "10.0.0/8", "nonsense", "::ffff:10.0.0.0/90", "2001:db8::/129"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = nil error", bad)
		}
	}
	for in, want := range map[string]string{
		" 10.1.2.3/8 ":        "10.0.0.0/8", // masked
		"::ffff:10.0.0.0/104": "10.0.0.0/8", // the IPv4 network it maps
		"::ffff:192.0.2.1":    "192.0.2.1/32",
		"fe80::1%eth0":        "fe80::1/128", // the zone dropped
		"2001:db8:1:2:3::/64": "2001:db8:1:2::/64",
	} {
		if p, err := Parse(in); err != nil || p.String() != want {
			t.Errorf("Parse(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
}

func TestDuplicateRefusedNamingBoth(t *testing.T) {
	a, _ := Parse("10.0.0.0/8")
	b, _ := Parse("10.9.9.9/8") // the same network, written otherwise
	_, err := New([]Entry{{a, "rules.yaml:3"}, {b, "rules.yaml:9"}})
	if err == nil || !strings.Contains(err.Error(), "rules.yaml:9") || !strings.Contains(err.Error(), "rules.yaml:3") {
		t.Fatalf("New with a duplicate = %v; want an error naming both lines", err)
	}
}

func TestShadowedAndMatches(t *testing.T) {
	s := mustSet(t, "10.1.0.0/16", "10.0.0.0/8", "10.1.2.0/24", "192.168.0.0/16", "2001:db8::/32", "2001:db8:1::/48")
	got := map[string]string{}
	for _, p := range s.Shadowed() {
		got[p[0].Prefix.String()] = p[1].Prefix.String()
	}
	want := map[string]string{"10.1.0.0/16": "10.0.0.0/8", "10.1.2.0/24": "10.0.0.0/8", "2001:db8:1::/48": "2001:db8::/32"}
	if len(got) != len(want) {
		t.Fatalf("Shadowed = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Shadowed[%s] = %q, want %q", k, got[k], v)
		}
	}
	m := s.Matches(netip.MustParseAddr("10.1.2.3"))
	if len(m) != 3 || m[0].Prefix.String() != "10.1.2.0/24" || m[2].Prefix.String() != "10.0.0.0/8" {
		t.Errorf("Matches(10.1.2.3) = %v; want the /24, the /16, the /8", m)
	}
}

// randomPrefix draws a network of either family, biased to short and long prefixes and to a
// small corner of the space, so that overlaps, nesting and touching ranges are frequent.
func randomPrefix(r *rand.Rand) netip.Prefix {
	if r.IntN(2) == 0 {
		b := [4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))}
		return netip.PrefixFrom(netip.AddrFrom4(b), 8+r.IntN(25)).Masked()
	}
	var b [16]byte
	b[0], b[1], b[7], b[15] = 0x20, 0x01, byte(r.IntN(4)), byte(r.IntN(256))
	return netip.PrefixFrom(netip.AddrFrom16(b), 16+r.IntN(113)).Masked()
}

func randomAddr(r *rand.Rand) netip.Addr {
	if r.IntN(2) == 0 {
		return netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))})
	}
	var b [16]byte
	b[0], b[1], b[7], b[15] = 0x20, 0x01, byte(r.IntN(4)), byte(r.IntN(256))
	return netip.AddrFrom16(b)
}

// Contains agrees with asking every entry, on random lists and addresses; so does Shadowed
// with comparing every pair.
func TestAgreesWithEveryEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 300; round++ {
		seen := map[netip.Prefix]bool{}
		var es []Entry
		for n := r.IntN(40); len(es) < n; {
			p := randomPrefix(r)
			if !seen[p] {
				seen[p] = true
				es = append(es, Entry{Prefix: p})
			}
		}
		s, err := New(es)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			a := randomAddr(r)
			want := false
			for _, e := range es {
				want = want || e.Prefix.Contains(a)
			}
			if got := s.Contains(a); got != want {
				t.Fatalf("round %d: Contains(%s) = %v, every entry says %v (%v)", round, a, got, want, es)
			}
		}
		shadowed := map[netip.Prefix]bool{}
		for _, p := range s.Shadowed() {
			shadowed[p[0].Prefix] = true
		}
		for _, e := range es {
			want := false
			for _, o := range es {
				want = want || o.Prefix.Bits() < e.Prefix.Bits() && o.Prefix.Contains(e.Prefix.Addr())
			}
			if shadowed[e.Prefix] != want {
				t.Fatalf("round %d: %s shadowed = %v, by pairs %v", round, e.Prefix, shadowed[e.Prefix], want)
			}
		}
	}
}

func TestContainsAllocatesNothing(t *testing.T) {
	s := mustSet(t, "10.0.0.0/8", "2001:db8::/32")
	a := netip.MustParseAddr("10.1.2.3")
	if n := testing.AllocsPerRun(100, func() { s.Contains(a) }); n != 0 {
		t.Errorf("Contains allocates %v times", n)
	}
}

// BenchmarkContains10k is a request's cost of a list of 10,000 networks (issue 37: at most
// 1 µs added); compare with BenchmarkContains1.
func BenchmarkContains10k(b *testing.B) { benchContains(b, 10000) }
func BenchmarkContains1(b *testing.B)   { benchContains(b, 1) }

func benchContains(b *testing.B, n int) {
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[netip.Prefix]bool{}
	var es []Entry
	for len(es) < n {
		var ip [4]byte
		for i := range ip {
			ip[i] = byte(r.IntN(256))
		}
		p := netip.PrefixFrom(netip.AddrFrom4(ip), 16+r.IntN(17)).Masked()
		if !seen[p] {
			seen[p] = true
			es = append(es, Entry{Prefix: p})
		}
	}
	s, err := New(es)
	if err != nil {
		b.Fatal(err)
	}
	addrs := make([]netip.Addr, 1024)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Contains(addrs[i&1023])
	}
}
