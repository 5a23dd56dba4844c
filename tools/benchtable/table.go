package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// goal is a target of the performance issue: the figure, or its ratio to its floor, op v.
type goal struct {
	op    string // "≤", "≥", "<" or "="
	v     float64
	ratio bool // the target is on the ratio, not on the figure
}

func (g goal) String() string {
	if g.ratio {
		return fmt.Sprintf("%s %.2f×", g.op, g.v)
	}
	return fmt.Sprintf("%s %g", g.op, g.v)
}

func (g goal) met(x float64) bool {
	switch g.op {
	case "≤":
		return x <= g.v
	case "≥":
		return x >= g.v
	case "<":
		return x < g.v
	}
	return x == g.v
}

// row is one line of the table. A row without a floor is itself a floor (or a figure shown
// for context); a row without a goal is reported only.
type row struct {
	label string
	key   string // its figure
	unit  string // how to print it: "µs", "/s", "allocs", "B", "ns", "%", "×", "calls", "req" (requests)
	floor string // the figure its ratio is taken to; "" for none
	goal  *goal
}

// section is a group of rows under a heading, the number of the target first.
type section struct {
	heading string
	rows    []row
}

var (
	ratioAtMost  = func(v float64) *goal { return &goal{"≤", v, true} }
	ratioAtLeast = func(v float64) *goal { return &goal{"≥", v, true} }
)

// table is every row, in the order of targets.
var table = []section{
	// Issue 23 asks 5 µs for one policy and 2.5 µs for each further one, against a floor of
	// the three calls (TIME, GET, SET PX) that it measured at 3.2 µs: 1.56× and 0.78× the floor.
	{"1  Redis server time per check (INFO commandstats: usec / checks), calls from one goroutine",
		redisRows("srv", "µs", ratioAtMost(5/3.2), ratioAtMost(2.5/3.2), nil)},
	{"1  the same, calls from 64 goroutines (the server saturated; checks merged)",
		redisRows("srv64", "µs", ratioAtMost(5/3.2), ratioAtMost(2.5/3.2), nil)},
	{"2  throughput, 64 goroutines over 10k identities, unpipelined floor",
		// Issue 23: one policy at 2× the floor's checks per second, three at 1.5×.
		redisRows("tput", "/s", ratioAtLeast(2), nil, ratioAtLeast(1.5))},
	{"2  what bounds it: the Redis main thread's CPU per call over the same runs (INFO cpu), and its load", []row{
		{"trivial EVALSHA (floor)", "cpu64.evalsha", "µs", "", nil},
		{"GCRA check, 1 policy", "cpu64.gcra1", "µs", "cpu64.evalsha", nil},
		{"GCRA check, 3 policies", "cpu64.gcra3", "µs", "cpu64.evalsha", nil},
		{"GCRA check, 3 policies, WithHashState", "cpu64.gcra3h", "µs", "cpu64.evalsha", nil},
		{"client CPU per call (this process, all threads): trivial EVALSHA", "client64.evalsha", "µs", "", nil},
		{"client CPU per call: GCRA check, 1 policy", "client64.gcra1", "µs", "client64.evalsha", nil},
		{"client CPU per call: GCRA check, 3 policies", "client64.gcra3", "µs", "client64.evalsha", nil},
		{"main thread busy: trivial EVALSHA", "busy64.evalsha", "%", "", nil},
		{"main thread busy: GCRA check, 1 policy", "busy64.gcra1", "%", "", nil},
	}},
	{"3  p50 latency, one goroutine",
		redisRows("lat", "µs", ratioAtMost(1.1), nil, nil)},
	{"3  where it goes: the p50 less the call's Redis time from one goroutine (in 1): the client, the network, Redis reading and answering", []row{
		{"trivial EVALSHA (floor)", "rest.evalsha", "µs", "", nil},
		{"GCRA check, 1 policy", "rest.gcra1", "µs", "rest.evalsha", nil},
		{"GCRA check, 3 policies", "rest.gcra3", "µs", "rest.evalsha", nil},
	}},
	{"4  client allocations per call", append(redisRows("allocs", "allocs", ratioAtMost(1), nil, nil),
		row{"GCRA check, 1 policy, client without ContextTimeoutEnabled", "allocs.gcra1.plain", "allocs", "allocs.evalsha", nil},
		row{"net/http: EVALSHA, then the handler (floor)", "allocs.mw.floor", "allocs", "", nil},
		row{"net/http: Middleware, 1 policy, then the handler", "allocs.mw", "allocs", "allocs.mw.floor", ratioAtMost(1)},
	)},
	{"5  Redis used_memory per identity, 100k identities, one check each", append([]row{
		{"SET of the identity alone as the key, same value and expiry", "mem.bare", "B", "", nil},
		{"SET of the same key and value, same expiry (floor)", "mem.floor", "B", "", nil},
		{"GCRA check, 1 policy (100/h: no key expires meanwhile)", "mem.gcra1", "B", "mem.floor", &goal{"<", 117, false}},
		{"SET of a compact key: the TAT's last 3 digits, expiring at the TAT (floor)", "mem.cfloor", "B", "", nil},
		{"GCRA check, 1 policy, WithCompactState", "mem.gcra1c", "B", "mem.cfloor", &goal{"<", 117, false}},
		{"GCRA check, 1 policy, WithHashState", "mem.gcra1h", "B", "mem.floor", nil},
		{"GCRA check, 3 policies (100/h, 1000/day, 10000/week)", "mem.gcra3", "B", "mem.floor", nil},
		{"GCRA check, 3 policies, WithHashState", "mem.gcra3h", "B", "mem.floor", nil},
		{"GCRA check, 3 policies, WithHashState and WithCompactState", "mem.gcra3hc", "B", "mem.floor", nil},
		{"GCRA check, 1 policy of 7/h (an interval of no whole µs: the TAT keeps its fraction)", "mem.gcra1frac", "B", "mem.floor", nil},
	}, algorithmMemoryRows()...)},
	{"6  memory store, 1 GCRA policy (floor: a map under a mutex, in 64 shards); net/http Middleware over it", []row{
		{"floor, one key", "ms.floor", "ns", "", nil},
		{"check, one key", "ms.gcra1", "ns", "ms.floor", &goal{"≤", 150, false}},
		{"check, one key: allocations", "msallocs.gcra1", "allocs", "", &goal{"=", 0, false}},
		{"floor, RunParallel, GOMAXPROCS 1, 10k keys", "ms.p1.floor", "ns", "", nil},
		{"check, RunParallel, GOMAXPROCS 1, 10k keys", "ms.p1.gcra1", "ns", "ms.p1.floor", &goal{"≤", 150, false}},
		{"floor, RunParallel, GOMAXPROCS 2, 10k keys", "ms.p2.floor", "ns", "", nil},
		{"check, RunParallel, GOMAXPROCS 2, 10k keys", "ms.p2.gcra1", "ns", "ms.p2.floor", &goal{"≤", 150, false}},
		{"floor, checks/s at GOMAXPROCS 2 over 1", "ms.scale.floor", "×", "", nil},
		{"check, checks/s at GOMAXPROCS 2 over 1", "ms.scale.gcra1", "×", "ms.scale.floor", &goal{"≥", 1.6, false}},
		{"net/http: a bare handler (floor)", "mwm.bare", "ns", "", nil},
		{"net/http: Middleware, 1 policy, then the handler", "mwm.ours", "ns", "mwm.bare", nil},
		{"net/http: what Middleware adds to the handler", "mwm.added", "ns", "", nil},
		{"net/http: Middleware, then the handler: allocations per request", "mwmallocs.ours", "allocs", "", nil},
		{"net/http: Middleware, then the handler: bytes allocated per request", "mwmbytes.ours", "B", "", nil},
	}},
	{"37 allow and deny lists (WithAccess), net/http Middleware in-process, one client", []row{
		{"Middleware over the memory store, 1 policy (floor)", "acc.mem", "ns", "", nil},
		{"Middleware over Redis, the client allow-listed", "acc.redis.allowed", "ns", "acc.mem", ratioAtMost(1)},
		{"Middleware over the memory store, no list (floor)", "acc.none", "ns", "", nil},
		{"the same, the client in none of 10,000 denied networks", "acc.10k", "ns", "acc.none", nil},
		{"what 10,000 networks add to a request", "acc.added", "ns", "", &goal{"≤", 1000, false}},
	}},
	{"7  net/http end to end on loopback, 64 connections, one client address", []row{
		{"bare handler, no Redis", "http.bare", "/s", "", nil},
		{"trivial EVALSHA, then the handler (floor)", "http.evalsha", "/s", "", nil},
		{"Middleware, 1 policy, then the handler", "http.ours", "/s", "http.evalsha", nil},
	}},
}

// tailTable is issue 39's targets of the tail and of exactness at full speed, with a section
// of its own in the results file ("bench-tail"; -only tail takes it alone).
var tailTable = []section{
	// Issue 39: the tail of the same runs, at most 1.1× the trivial script's.
	{"39 net/http end to end on loopback, 64 connections, one client address (the runs of 7): latency of a request at p50, p99 and p99.9", []row{
		{"p50: bare handler", "http.p50.bare", "µs", "", nil},
		{"p50: trivial EVALSHA, then the handler (floor)", "http.p50.evalsha", "µs", "", nil},
		{"p50: Middleware, 1 policy", "http.p50.ours", "µs", "http.p50.evalsha", nil},
		{"p99: bare handler", "http.p99.bare", "µs", "", nil},
		{"p99: trivial EVALSHA, then the handler (floor)", "http.p99.evalsha", "µs", "", nil},
		{"p99: Middleware, 1 policy", "http.p99.ours", "µs", "http.p99.evalsha", ratioAtMost(1.1)},
		{"p99: Middleware, against the bare handler", "http.p99.ours", "µs", "http.p99.bare", nil},
		{"p99.9: bare handler", "http.p999.bare", "µs", "", nil},
		{"p99.9: trivial EVALSHA, then the handler (floor)", "http.p999.evalsha", "µs", "", nil},
		{"p99.9: Middleware, 1 policy", "http.p999.ours", "µs", "http.p999.evalsha", ratioAtMost(1.1)},
	}},
	// Issue 39: exact at full speed, 198 of 200 (0.99×) in every run, none over.
	{"39 one hot identity, 64 goroutines, one second from a second boundary: GCRA 100/s, burst 100", []row{
		{"what GCRA admits in that second (floor)", "hot.allows", "req", "", nil},
		{"admitted, default options (denial cache on)", "hot.gcra", "req", "hot.allows", ratioAtLeast(0.99)},
		{"admitted, default options: the worst round", "hot.worst", "req", "hot.allows", ratioAtLeast(0.99)},
		{"admitted above what GCRA admits over the round's span: the most of any round", "hot.over", "req", "", &goal{"≤", 0, false}},
		{"admitted, WithDenialCache(0): every request asks Redis", "hot.nocache", "req", "hot.allows", nil},
		{"admitted, WithDenialCache(0): the worst round", "hot.nocache.worst", "req", "hot.allows", nil},
		{"what GCRA admits over the span of the worst round's load, from its first request to its end (floor)", "hot.worst.spanfloor", "req", "", nil},
		{"admitted, default options, against what GCRA admits over its load's span: the worst round", "hot.worst.span", "req", "hot.worst.spanfloor", ratioAtLeast(0.99)},
	}},
}

// algorithmMemoryRows are the used_memory rows of every rate-limiting algorithm but GCRA
// (whose row is above) under the same policy (algorithmSubjects).
func algorithmMemoryRows() []row {
	var rows []row
	for _, alg := range algorithms.All() {
		if name := alg.Name(); name != (algorithms.GCRA{}).Name() && name != (algorithms.InFlight{}).Name() {
			rows = append(rows, row{name + ", 1 policy (100/h)", "mem." + name, "B", "mem.floor", nil})
		}
	}
	return rows
}

// redisRows are the rows of one Redis figure: PING, the trivial EVALSHA that is the floor,
// and the checks of one policy (with the goal g) and of three (with g3). perPolicy, if not
// nil, adds the row of what each policy past the first adds, with that goal.
func redisRows(figure, unit string, g, perPolicy, g3 *goal) []row {
	floor := figure + ".evalsha"
	rows := []row{
		{"PING", figure + ".ping", unit, "", nil},
		{"trivial EVALSHA (floor)", floor, unit, "", nil},
	}
	if figure == "srv" || figure == "srv64" {
		// The floor of any exact check, and the check against it: what the library adds to
		// the three calls it cannot do without. The goals are against it.
		tgs := figure + ".tgs"
		rows = append(rows,
			row{"GCRA check, 1 policy", figure + ".gcra1", unit, floor, nil},
			row{"TIME + GET + SET PX in a script (the floor of an exact check)", tgs, unit, "", nil},
			row{"GCRA check, 1 policy, against TIME + GET + SET PX", figure + ".gcra1", unit, tgs, g},
			row{"GCRA check, 1 policy, WithCompactState", figure + ".gcra1c", unit, tgs, nil},
			row{"each further policy: (3 policies − 1) / 2", figure + ".extra", unit, tgs, perPolicy},
			// Issue 23's 2.5 µs per policy is below what a further key costs the floor itself:
			// the same three calls on three keys, less them on one, halved.
			row{"TIME + 3 × (GET + SET PX): each further key, (3 keys − 1) / 2", figure + ".tgsextra", unit, "", nil},
			row{"each further policy, against a further key of the floor", figure + ".extra", unit, figure + ".tgsextra", nil})
		rows = append(rows, row{"GCRA check, 3 policies (10/s, 100/min, 1000/h)", figure + ".gcra3", unit, floor, nil})
		// Hash state (WithHashState): one hash per identity, read and written once.
		return append(rows,
			row{"WithHashState: GCRA check, 1 policy, against TIME + GET + SET PX", figure + ".gcra1h", unit, tgs, nil},
			row{"WithHashState: each further policy: (3 policies − 1) / 2", figure + ".extrah", unit, tgs, perPolicy},
			row{"WithHashState: each further policy, against a further key of the floor", figure + ".extrah", unit, figure + ".tgsextra", nil},
			row{"WithHashState: GCRA check, 3 policies", figure + ".gcra3h", unit, floor, nil})
	}
	rows = append(rows, row{"GCRA check, 1 policy", figure + ".gcra1", unit, floor, g})
	if figure != "rest" {
		rows = append(rows, row{"GCRA check, 1 policy, WithCompactState", figure + ".gcra1c", unit, floor, nil})
	}
	if perPolicy != nil {
		rows = append(rows, row{"each further policy: (3 policies − 1) / 2", figure + ".extra", unit, floor, perPolicy})
	}
	rows = append(rows, row{"GCRA check, 3 policies (10/s, 100/min, 1000/h)", figure + ".gcra3", unit, floor, g3})
	if figure == "tput" || figure == "lat" {
		rows = append(rows, row{"WithHashState: GCRA check, 1 policy", figure + ".gcra1h", unit, floor, nil},
			row{"WithHashState: GCRA check, 3 policies", figure + ".gcra3h", unit, floor, g3})
	}
	return rows
}

// cells are what a row shows: the figure, its floor, their ratio, the target and whether it
// is met, each formatted ("" where the row has none).
type cells struct{ measured, floor, ratio, target, result string }

// cellsOf formats the row r of the figures f.
func cellsOf(r row, f figures) cells {
	v := f[r.key]
	c := cells{measured: format(v, r.unit)}
	x := v // what the goal is about
	if r.floor != "" {
		c.floor = format(f[r.floor], r.unit)
		x = v / f[r.floor]
		c.ratio = fmt.Sprintf("%.2f×", x)
	}
	if r.goal != nil {
		c.target = r.goal.String()
		if !r.goal.ratio {
			x = v
			c.target += " " + strings.TrimPrefix(r.unit, "/")
		}
		c.result = map[bool]string{true: "PASS", false: "MISS"}[r.goal.met(x)]
	}
	return c
}

// printTable prints the sections t of the table of the figures f.
func printTable(out io.Writer, t []section, f figures) {
	width := 0
	for _, s := range t {
		for _, r := range s.rows {
			width = max(width, utf8.RuneCountInString(r.label))
		}
	}
	line := func(label string, c cells) {
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(label))
		fmt.Fprintf(out, "   %s%s %11s %11s %7s %10s  %s\n", label, pad, c.measured, c.floor, c.ratio, c.target, c.result)
	}
	line("", cells{"measured", "floor", "ratio", "target", "result"})
	for _, s := range t {
		fmt.Fprintln(out, s.heading)
		for _, r := range s.rows {
			line(r.label, cellsOf(r, f))
		}
	}
	if note := failedOpenNote(f); note != "" {
		fmt.Fprintln(out, note)
	}
}

// failedOpenNote says how many middleware requests of the HTTP figures failed open, if any.
func failedOpenNote(f figures) string {
	if n := f["http.failedopen"]; n > 0 {
		return fmt.Sprintf("note: %.0f middleware requests (median of the rounds) failed open: Redis did not answer in time", n)
	}
	return ""
}

// format prints a figure with its unit.
func format(v float64, unit string) string {
	switch unit {
	case "µs":
		if v < 10 {
			return fmt.Sprintf("%.2f µs", v)
		}
		return fmt.Sprintf("%.1f µs", v)
	case "/s":
		return fmt.Sprintf("%.1fk/s", v/1e3)
	case "allocs":
		return fmt.Sprintf("%.0f allocs", v)
	case "B":
		return fmt.Sprintf("%.1f B", v)
	case "ns":
		return fmt.Sprintf("%.1f ns", v)
	case "%":
		return fmt.Sprintf("%.0f %%", v)
	case "×":
		return fmt.Sprintf("%.2f×", v)
	case "calls":
		return fmt.Sprintf("%.2f calls", v)
	case "req":
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}

// printBreakdown prints, for the trivial EVALSHA and each check, the commands Redis ran per
// call and their time, from the INFO commandstats of the last round.
func printBreakdown(out io.Writer, stats map[string]commandStats) {
	fmt.Fprintln(out, "Redis time per call from one goroutine, last round (INFO commandstats): the call, and the commands it ran")
	for _, name := range append([]string{"evalsha", "gcra1", "gcra3", "fw1", "cal1"}, holdNames...) {
		s := stats[name]
		call := "fcall"
		if s[call].Calls == 0 {
			call = "evalsha"
		}
		calls := float64(s[call].Calls)
		if calls == 0 {
			continue
		}
		total := float64(s[call].Usec) / calls
		inner := 0.0
		var parts []string
		for _, cmd := range slices.Sorted(maps.Keys(s)) {
			c := s[cmd]
			if cmd == call || cmd == "info" || strings.HasPrefix(cmd, "config") || c.Calls == 0 {
				continue
			}
			inner += float64(c.Usec) / calls
			parts = append(parts, fmt.Sprintf("%s ×%.2f %.2f µs", strings.ToUpper(cmd), float64(c.Calls)/calls, float64(c.Usec)/calls))
		}
		if len(parts) == 0 {
			parts = []string{"no command"}
		}
		fmt.Fprintf(out, "  %-8s %s %6.2f µs per call: %s; the rest (Lua, and calling Redis from Lua) %.2f µs\n",
			name, strings.ToUpper(call), total, strings.Join(parts, ", "), total-inner)
	}
}

// cpuModel returns the CPU's model name, from /proc/cpuinfo where there is one.
func cpuModel() string {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, _ := strings.Cut(line, ":"); strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "CPU model unknown"
}
