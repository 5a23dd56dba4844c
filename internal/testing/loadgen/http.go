package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPResult is what a run of HTTP load measured: the requests per second, how many failed or
// were not 200, and the latency of a request at the 50th, 99th and 99.9th percentiles.
type HTTPResult struct {
	RPS            float64
	Bad            int64
	P50, P99, P999 time.Duration
}

// HTTP puts load on url for about d from conns keep-alive connections, one request at a time
// on each: through wrk (the path of its binary) with a thread per core, or, when wrk is "",
// through the Go load generator (HTTPGo).
func HTTP(ctx context.Context, wrk, url string, conns int, d time.Duration) (HTTPResult, error) {
	if wrk != "" {
		return httpWrk(ctx, wrk, url, conns, d)
	}
	return HTTPGo(url, conns, d)
}

// Wrk returns the path of wrk and the name of the load generator HTTP uses with it: "wrk", or
// the Go one when wrk is not installed (the path is then "").
func Wrk() (path, name string) {
	if p, err := exec.LookPath("wrk"); err == nil {
		return p, "wrk"
	}
	return "", "Go load generator (wrk not installed)"
}

var (
	wrkRate   = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	wrkErrors = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkTail   = regexp.MustCompile(`latency-us p50 (\d+) p99 (\d+) p999 (\d+)`)
)

// wrkScript makes wrk print the percentiles it keeps, in µs, for wrkTail.
const wrkScript = `done = function(summary, latency, requests)
  io.write(string.format("latency-us p50 %d p99 %d p999 %d\n", latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
`

// httpWrk runs wrk with one thread per core.
func httpWrk(ctx context.Context, path, url string, conns int, d time.Duration) (HTTPResult, error) {
	script, err := os.CreateTemp("", "loadgen-*.lua")
	if err != nil {
		return HTTPResult{}, err
	}
	defer os.Remove(script.Name())
	if _, err := script.WriteString(wrkScript); err != nil {
		return HTTPResult{}, err
	}
	if err := script.Close(); err != nil {
		return HTTPResult{}, err
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	threads := min(runtime.NumCPU(), conns)
	out, err := exec.CommandContext(ctx, path, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns),
		"-d", strconv.Itoa(secs)+"s", "-s", script.Name(), url).CombinedOutput()
	if err != nil {
		return HTTPResult{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		return HTTPResult{}, errors.New("wrk printed no Requests/sec: " + string(out))
	}
	var res HTTPResult
	res.RPS, err = strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return HTTPResult{}, err
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		res.Bad += n
	}
	if m := wrkErrors.FindSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(string(s), 10, 64)
			res.Bad += n
		}
	}
	m = wrkTail.FindSubmatch(out)
	if m == nil {
		return HTTPResult{}, errors.New("wrk printed no percentiles: " + string(out))
	}
	for i, p := range []*time.Duration{&res.P50, &res.P99, &res.P999} {
		us, _ := strconv.ParseInt(string(m[i+1]), 10, 64)
		*p = time.Duration(us) * time.Microsecond
	}
	return res, nil
}

// HTTPGo is the load generator without wrk: conns goroutines, each with a keep-alive
// connection of its own, one request at a time, each timed.
func HTTPGo(url string, conns int, d time.Duration) (HTTPResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return Timed(conns, d, func(int) error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

// Timed calls call from n goroutines, one call at a time on each, for about d, and times each
// call: a call that errs counts as bad. The goroutines are numbered 0 to n-1, and call is
// given its goroutine's number.
func Timed(n int, d time.Duration, call func(g int) error) (HTTPResult, error) {
	var (
		done, bad atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	took := make([][]time.Duration, n) // each goroutine's, merged at the end
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 1<<14)
			defer func() { took[i] = mine }()
			for !stop.Load() {
				done.Add(1)
				began := time.Now()
				if err := call(i); err != nil {
					bad.Add(1)
				}
				mine = append(mine, time.Since(began))
			}
		}()
	}
	time.Sleep(d) // a measuring period, not a wait for an event
	stop.Store(true)
	wg.Wait()
	res := HTTPResult{RPS: float64(done.Load()) / time.Since(start).Seconds(), Bad: bad.Load()}
	all := slices.Concat(took...)
	if len(all) == 0 {
		return HTTPResult{}, errors.New("no call was made")
	}
	slices.Sort(all)
	at := func(q float64) time.Duration { return all[min(len(all)-1, int(q*float64(len(all))))] }
	res.P50, res.P99, res.P999 = at(0.50), at(0.99), at(0.999)
	return res, nil
}
