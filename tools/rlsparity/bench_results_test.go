package rlsparity

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The goals of issue 40: at least 1.5 times the reference's throughput and no worse latency,
// and, with Redis down, a p99 below 20 ms.
const (
	goalRate      = 1.5
	goalLatency   = 1.0
	goalOutageP99 = 20 * time.Millisecond
)

// benchMarkdown is the section's tables: under load, ours and ours with -key-compat reference
// each beside the reference (and ours at its defaults, its failures), then with Redis killed.
func benchMarkdown(s benchSettings, ref, ours, compat, ours10, compat10 *benchServer) string {
	var b strings.Builder
	head := "| figure | key | measured | reference | ratio | target | result |\n|---|---|---|---|---|---|---|\n"
	for _, srv := range []struct {
		s       *benchServer
		heading string
	}{
		{ours, "ratelimit-rls -timeout 1s beside the reference"},
		{compat, "ratelimit-rls -timeout 1s -key-compat reference (the reference's keys and Redis commands) beside the reference"},
	} {
		fmt.Fprintf(&b, "### %s: ShouldRateLimit, %d callers\n\n%s", srv.heading, s.callers, head)
		for _, n := range []int{1, 3} {
			o, r := srv.s.load[n], ref.load[n]
			key := fmt.Sprintf("rls.%s.d%d", srv.s.name, n)
			what := fmt.Sprintf("%d descriptor%s", n, map[bool]string{true: "s"}[n > 1])
			benchRow(&b, "checks per second, "+what, key+".rate", rate(o.rate()), rate(r.rate()), o.rate()/r.rate(), "≥ 1.50×", o.rate()/r.rate() >= goalRate)
			for _, q := range []struct {
				name string
				q    float64
			}{{"p50", 0.5}, {"p99", 0.99}} {
				ol, rl := o.quantile(q.q), r.quantile(q.q)
				ratio := float64(ol) / float64(rl)
				benchRow(&b, q.name+" per call, "+what, key+"."+q.name, dur(ol), dur(rl), ratio, "≤ 1.00×", ratio <= goalLatency)
			}
			oc, rc := o.cpuPerCall(), r.cpuPerCall()
			benchRow(&b, "server CPU time per call, "+what, key+".cpu", dur(oc), dur(rc), float64(oc)/float64(rc), "", true)
			orc, rrc := o.perCall(o.redisCPU), r.perCall(r.redisCPU)
			benchRow(&b, "Redis CPU time per call, "+what, key+".redis", dur(orc), dur(rrc), float64(orc)/float64(rrc), "", true)
			// Where the server and Redis have cores of their own (not this machine's two,
			// which the load generator shares), their CPU per call is what bounds the rate.
			osum, rsum := oc+orc, rc+rrc
			benchRow(&b, "calls per CPU-second of the server and Redis together, "+what, key+".cpurate",
				rate(float64(time.Second)/float64(osum)), rate(float64(time.Second)/float64(rsum)), float64(rsum)/float64(osum), "", true)
			olc, rlc := o.perCall(o.loadCPU), r.perCall(r.loadCPU)
			benchRow(&b, "the load generator's CPU time per call (this machine's cores are shared with it), "+what, key+".loadcpu", dur(olc), dur(rlc), float64(olc)/float64(rlc), "", true)
			if srv.s == ours {
				d := ours10.load[n]
				fmt.Fprintf(&b, "| at its defaults (-timeout 10ms), the same load: calls per second, p99, calls failed, %s | `rls.ours10.d%d` | %s, %s, %s | | | | |\n",
					what, n, rate(d.rate()), dur(d.quantile(0.99)), failed(d))
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "### Redis killed: ShouldRateLimit, 1 descriptor, %d callers, servers at their defaults\n\n%s", s.callers, head)
	r := &ref.outage
	// A latency at the caller's timeout is that call's timeout, not its answer's: at least.
	capped := func(d time.Duration) string {
		if d >= s.waitCap {
			return "≥ " + dur(d)
		}
		return dur(d)
	}
	for _, srv := range []struct {
		s    *benchServer
		what string
	}{{ours10, "ratelimit-rls"}, {compat10, "ratelimit-rls -key-compat reference"}} {
		o := &srv.s.outage
		key := "rls." + srv.s.name + ".outage"
		p99 := o.quantile(0.99)
		benchRow(&b, srv.what+": p99 per call", key+".p99", capped(p99), capped(r.quantile(0.99)), float64(p99)/float64(r.quantile(0.99)),
			"< 20 ms", p99 < goalOutageP99)
		benchRow(&b, srv.what+": p50 per call", key+".p50", capped(o.quantile(0.5)), capped(r.quantile(0.5)), float64(o.quantile(0.5))/float64(r.quantile(0.5)), "", true)
		benchRow(&b, srv.what+": calls answered per second", key+".rate", rate(o.rate()), rate(r.rate()), o.rate()/r.rate(), "", true)
		fmt.Fprintf(&b, "| %s: calls failed (gRPC error; timed out at %s) | `%s.failed` | %s | %s | | | |\n",
			srv.what, s.waitCap, key, failed(o), failed(r))
	}
	fmt.Fprintf(&b, "\nThe last error of each with Redis down: ratelimit-rls %s; -key-compat reference %s; the reference %s.\n\n",
		lastErr(&ours10.outage), lastErr(&compat10.outage), lastErr(r))
	return b.String()
}

// benchRow writes a row of a table; a figure with no target has no result.
func benchRow(b *strings.Builder, label, key, measured, reference string, ratio float64, target string, pass bool) {
	result := ""
	if target != "" {
		result = map[bool]string{true: "PASS", false: "MISS"}[pass]
	}
	fmt.Fprintf(b, "| %s | `%s` | %s | %s | %s | %s | %s |\n", label, key, measured, reference, times(ratio), target, result)
}

// rate formats calls per second.
func rate(r float64) string {
	if r < 1e3 {
		return fmt.Sprintf("%.1f/s", r)
	}
	return fmt.Sprintf("%.1fk/s", r/1e3)
}

// times formats a ratio: two decimals, two significant digits below 0.1, none from 100.
func times(r float64) string {
	switch {
	case r < 0.1:
		return fmt.Sprintf("%.2g×", r)
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}

// dur formats a latency.
func dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d.Nanoseconds())/1e6)
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// failed formats the calls of t that failed and timed out, of all.
func failed(t *tally) string {
	if t.calls() == 0 {
		return "no call"
	}
	return fmt.Sprintf("%d of %d (%.0f%%), %d timed out", t.errs, t.calls(), 100*float64(t.errs)/float64(t.calls()), t.timeouts)
}

// lastErr formats the last error of t, on one line, in code.
func lastErr(t *tally) string {
	if t.lastErr == nil {
		return "none"
	}
	return "`" + strings.ReplaceAll(strings.ReplaceAll(t.lastErr.Error(), "\n", " "), "`", "'") + "`"
}

// The figures' formats, and the order of the servers' turns.
func TestBenchFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{rate(2.7), "2.7/s"}, {rate(6250), "6.2k/s"},
		{dur(1500 * time.Nanosecond), "1.5 µs"}, {dur(8070 * time.Microsecond), "8.07 ms"}, {dur(15 * time.Second), "15.00 s"},
		{times(1.234), "1.23×"}, {times(0.00054), "0.00054×"}, {times(5394.2), "5394×"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	a, b, c := &benchServer{name: "a"}, &benchServer{name: "b"}, &benchServer{name: "c"}
	var order []string
	for k := range 3 {
		for _, s := range inTurn([]*benchServer{a, b, c}, k) {
			order = append(order, s.name)
		}
	}
	if got := strings.Join(order, ""); got != "abccbaabc" {
		t.Errorf("turns %s, want abccbaabc", got)
	}
}
