package exampletest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// The limits every framework example sets: per client IP, 5 requests per 10 s ("burst") and
// 100 per hour on every route, and 3 logins per minute on POST /login on top.
const (
	burst = 5
	login = 3
)

// Contract checks what every framework example promises (the examples of Gin, Echo and Fiber
// share it): the limits above with the memory store, limits shared through Redis, forwarding
// headers ignored, the handler reading the limiter's decision, and requests passing when Redis
// is down.
func Contract(t *testing.T) {
	bin := Build(t)

	t.Run("memory store", func(t *testing.T) {
		inst := Start(t, bin)
		if !strings.Contains(inst.Log(), "using the memory store") {
			t.Fatalf("the instance does not say it uses the memory store:\n%s", inst.Log())
		}
		// The fourth login is refused by the login limit, and its headers are the login
		// limit's; the global limit, which let it through, counted it.
		if got, want := fmt.Sprint(Statuses(t, login, http.MethodPost, inst.URL+"/login")), "[200 200 200]"; got != want {
			t.Errorf("logins: got %s, want %s", got, want)
		}
		resp := Do(t, http.MethodPost, inst.URL+"/login")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("X-RateLimit-Limit") != fmt.Sprint(login) ||
			resp.Header.Get("Retry-After") == "" || resp.Header.Get("RateLimit-Policy") == "" {
			t.Errorf("login %d: got %d %v, want 429 with Retry-After, RateLimit-Policy and X-RateLimit-Limit %d",
				login+1, resp.StatusCode, resp.Header, login)
		}
		// One request is left of the burst; forwarding headers do not make a new client.
		got := Statuses(t, 2, http.MethodGet, inst.URL+"/items/1")
		got = append(got, Statuses(t, 1, http.MethodGet, inst.URL+"/", "X-Forwarded-For", "203.0.113.9", "X-Real-IP", "203.0.113.9")...)
		if want := "[200 429 429]"; fmt.Sprint(got) != want {
			t.Errorf("requests after the logins, the last with forwarding headers: got %v, want %s", got, want)
		}
		if resp := Do(t, http.MethodGet, inst.URL+"/"); resp.Header.Get("X-RateLimit-Limit") != fmt.Sprint(burst) {
			t.Errorf("got X-RateLimit-Limit %q, want %d", resp.Header.Get("X-RateLimit-Limit"), burst)
		}
	})

	t.Run("the handler reads the decision", func(t *testing.T) {
		inst := Start(t, bin)
		resp, body := Read(t, http.MethodGet, inst.URL+"/hello")
		CheckDecision(t, resp, body)
		if got := resp.Header.Get("X-RateLimit-Remaining"); got != fmt.Sprint(burst-1) {
			t.Errorf("X-RateLimit-Remaining %q, want %d", got, burst-1)
		}
	})

	t.Run("Redis shared by two instances", func(t *testing.T) {
		// A check that misses the guard's 100 ms deadline passes unlimited, without rate-limit
		// headers (fail-open). On a machine loaded enough for that, the run says nothing of
		// the shared count: it is run again, on fresh keys, up to three times.
		for attempt := 1; ; attempt++ {
			env := []string{"REDIS_URL=redis://" + redistest.Addr(t) + "/0", "RATELIMIT_PREFIX=" + redistest.Prefix(t) + fmt.Sprint(attempt) + ":"}
			a, b := Start(t, bin, env...), Start(t, bin, env...)
			for _, inst := range []*Instance{a, b} {
				if !strings.Contains(inst.Log(), "using the Redis store") {
					t.Fatalf("the instance does not say it uses Redis:\n%s", inst.Log())
				}
			}
			var got []int
			unlimited := 0
			for i := range burst + 1 {
				url := []string{a.URL, b.URL}[i%2]
				resp := Do(t, http.MethodGet, url+"/items/"+fmt.Sprint(i))
				got = append(got, resp.StatusCode)
				if resp.StatusCode == http.StatusOK && resp.Header.Get("X-RateLimit-Limit") == "" {
					unlimited++
				}
			}
			if unlimited > 0 && attempt < 3 {
				t.Logf("attempt %d: %d requests passed unlimited (Redis answered after the deadline): again", attempt, unlimited)
				continue
			}
			if want := "[200 200 200 200 200 429]"; fmt.Sprint(got) != want {
				t.Errorf("alternating between the instances: got %v (%d unlimited), want %s\n%s\n%s", got, unlimited, want, a.Log(), b.Log())
			}
			return
		}
	})

	t.Run("fail-open when Redis is down", func(t *testing.T) {
		inst := Start(t, bin, "REDIS_URL=redis://127.0.0.1:1/0")
		if got := Statuses(t, burst+1, http.MethodGet, inst.URL+"/"); fmt.Sprint(got) != "[200 200 200 200 200 200]" {
			t.Errorf("got %v, want every request to pass", got)
		}
		// The service's log says what happened, with the cause, without a line per request.
		log := inst.Stop()
		for _, want := range []string{"circuit breaker opened", "kind=unavailable", "let through unlimited (fail-open)"} {
			if !strings.Contains(log, want) {
				t.Errorf("the log has no %q:\n%s", want, log)
			}
		}
		if n := strings.Count(log, "the store failed"); n >= burst+1 {
			t.Errorf("%d lines for %d failed requests; want them rate-limited:\n%s", n, burst+1, log)
		}
	})
}
