package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// calendarYAML has a rule of calendar quotas beside a window.
const calendarYAML = `version: c1
rules:
  - name: api
    key: api_key
    policies:
      - {name: daily, rate: 5/day@America/New_York}
      - {name: monthly, limit: 100, period: month@UTC}
      - {name: per-hour, rate: 50/h}
`

// calendarApp is the application of calendarYAML's rule over the Redis store with prefix,
// and the rule.
func calendarApp(t *testing.T, client redis.UniversalClient, prefix string, opts ...ratelimit.RedisOption) (http.Handler, rules.Rule) {
	t.Helper()
	set, err := rules.Parse("limits.yaml", []byte(calendarYAML))
	if err != nil {
		t.Fatal(err)
	}
	rule := set.Rules()[0]
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithPrefix(prefix)}, opts...)...), rule.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return ratelimit.Middleware(l, ratelimit.WithKey(rule.KeyFunc()), ratelimit.WithTimeout(time.Minute))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), rule
}

// periodKey is the key the core gives identity under a calendar policy p in the period that
// holds at: the policy's key, "_" and the period's tag (cwXXXXXX_m202603). StorageKey names
// the period of now; the period's tag, after the last "_", is replaced by at's.
func periodKey(prefix, identity string, p ratelimit.Policy, at time.Time) string {
	k := ratelimit.StorageKey(prefix, identity, p, false)
	return k[:strings.LastIndexByte(k, '_')] + "_" + p.Period.Tag(at)
}

// periodLine is inspect's line of calendar policy p in the period that holds at, less what
// was used.
func periodLine(p ratelimit.Policy, at time.Time) string {
	start, end := p.Period.Bounds(at)
	return p.Name + " " + p.Period.String() + " " + start.Format(time.RFC3339) + " " + end.Format(time.RFC3339) + " "
}

// TestInspectResetCalendar: after 3 requests through the application's middleware, inspect
// shows each calendar policy's limit per its period, what is left, its key (the one the
// application wrote, of the current period) and the period itself: its text, its start and end
// in its zone, and 3 used of the limit; reset deletes the period's keys, and the application
// has its whole quota again.
func TestInspectResetCalendar(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		prefix := redistest.Prefix(t)
		file := write(t, "limits.yaml", calendarYAML)[0]
		h, rule := calendarApp(t, client, prefix)
		const id = "hdr:x-api-key:abc"
		before := time.Now()
		if code := send(h, 3, apiRequest); code != http.StatusOK {
			t.Fatalf("3 requests: status %d; want 200", code)
		}
		flags := []string{"-redis", addr, "-prefix", prefix, "-file", file, "-rule", "api", "-api-key", "abc"}
		out := cli(t, append([]string{"inspect"}, flags...)...)
		after := time.Now()
		out.want(t, 0, "identity  "+id+"\n", "")
		row(t, out.stdout, "daily", "5 per day@America/New_York", "2", "allowed")
		row(t, out.stdout, "monthly", "100 per month@UTC", "97", "allowed")
		row(t, out.stdout, "per-hour", "50 per 1h", "47", "allowed")
		text := blanks.ReplaceAllString(out.stdout, " ")
		for _, p := range rule.Policies[:2] {
			// The period of the command's check: the one of before or of after (a test that
			// runs across midnight in New York, or the turn of a month, sees either).
			at := before
			if !strings.Contains(text, periodLine(p, at)) {
				at = after
			}
			if want := periodLine(p, at) + "3 of " + strconv.FormatInt(p.Limit, 10); !strings.Contains(text, want) {
				t.Errorf("inspect printed\n%s\nwant the line %q", out.stdout, want)
			}
			key := periodKey(prefix, id, p, at)
			if !strings.Contains(out.stdout, key) {
				t.Errorf("inspect printed\n%s\nwant the key %s", out.stdout, key)
			}
			if n, err := client.Exists(t.Context(), key).Result(); err != nil || n != 1 {
				t.Errorf("the application's key %s: EXISTS %d, %v; want it there", key, n, err)
			}
		}
		if _, table, ok := strings.Cut(out.stdout, "CALENDAR POLICY"); !ok || strings.Contains(table, "per-hour") {
			t.Errorf("inspect printed\n%s\nwant a table of the calendar policies alone", out.stdout)
		}

		reset := cli(t, append([]string{"reset"}, flags...)...)
		reset.want(t, 0, "identity  "+id+"\n", "")
		at := time.Now()
		for i, want := range []string{"daily 2 of 5 ", "monthly 97 of 100 "} {
			key := periodKey(prefix, id, rule.Policies[i], at)
			if !strings.Contains(timeless(reset.stdout), want+key+"\n") {
				t.Errorf("reset printed\n%s\nwant the line %q", reset.stdout, want+key)
			}
			if n, err := client.Exists(t.Context(), key).Result(); err != nil || n != 0 {
				t.Errorf("after reset, %s: EXISTS %d, %v; want it gone", key, n, err)
			}
		}
		if code := send(h, 5, apiRequest); code != http.StatusOK {
			t.Errorf("5 requests after the reset: status %d; want 200, a whole day's quota", code)
		}
		row(t, cli(t, append([]string{"inspect"}, flags...)...).stdout, "daily", "5 per day@America/New_York", "0", "denied, retry in")
	})
}

// TestInspectCalendarCompact: with -compact the command prints and reads the compact key of
// the period, the application's.
func TestInspectCalendarCompact(t *testing.T) {
	client, addr := redistest.Standalone(t), redistest.Addr(t)
	prefix := redistest.Prefix(t)
	file := write(t, "limits.yaml", calendarYAML)[0]
	h, rule := calendarApp(t, client, prefix, ratelimit.WithCompactState())
	send(h, 2, apiRequest)
	out := cli(t, "inspect", "-compact", "-redis", addr, "-prefix", prefix, "-file", file, "-rule", "api", "-api-key", "abc")
	row(t, out.stdout, "daily", "5 per day@America/New_York", "3", "allowed")
	// The compact key of the period: a digest, which only the core computes, from the
	// policy in its period, as a check's results hold it.
	l, err := ratelimit.New(ratelimit.NewMemoryStore(), rule.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.AllowN(t.Context(), "hdr:x-api-key:abc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if key := ratelimit.StorageKey(prefix, "hdr:x-api-key:abc", d.Results()[0].Policy, true); !strings.Contains(out.stdout, key) {
		t.Errorf("inspect -compact printed\n%s\nwant the key %s", out.stdout, key)
	}
}

// TestPolicyFlagsCalendar: -policy takes a calendar rate and the long form, limit= and
// period=, as the application's Policy has them; an algorithm that cannot count periods, and a
// period beside a window, are usage errors naming the flag and the field.
func TestPolicyFlagsCalendar(t *testing.T) {
	client, addr := redistest.Standalone(t), redistest.Addr(t)
	prefix := redistest.Prefix(t)
	p, err := ratelimit.ParsePolicy("4/day@Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	p.Name = "daily"
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), p, ratelimit.Policy{Name: "monthly", Limit: 50, Period: p.Period})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if d, err := l.Allow(t.Context(), "192.0.2.7"); err != nil || !d.Allowed {
			t.Fatalf("Allow: %+v, %v", d, err)
		}
	}
	out := cli(t, "inspect", "-redis", addr, "-prefix", prefix, "-policy", "name=daily,rate=4/day@Europe/Berlin",
		"-policy", "name=monthly,limit=50,period=day@Europe/Berlin", "192.0.2.7")
	row(t, out.stdout, "daily", "4 per day@Europe/Berlin", "1", "allowed")
	row(t, out.stdout, "monthly", "50 per day@Europe/Berlin", "47", "allowed")
	for _, tc := range []struct{ spec, want string }{
		{"rate=4/day@Europe/Berlin,algorithm=gcra", `-policy "rate=4/day@Europe/Berlin,algorithm=gcra": algorithm: gcra cannot count calendar periods`},
		{"limit=4,period=day@UTC,window=1d", `-policy "limit=4,period=day@UTC,window=1d": period: give window or period, not both`},
		{"limit=4,period=day@Mars/Olympus", `-policy "limit=4,period=day@Mars/Olympus": period: zone "Mars/Olympus": unknown time zone`},
	} {
		cli(t, "inspect", "-redis", addr, "-policy", tc.spec, "192.0.2.7").want(t, 2, "", tc.want)
	}
}

// TestInspectCalendarHash: with hash state a calendar count keeps a key of its own (it is
// never a field of the identity's hash), which inspect -hash reads and names.
func TestInspectCalendarHash(t *testing.T) {
	client, addr := redistest.Standalone(t), redistest.Addr(t)
	prefix := redistest.Prefix(t)
	file := write(t, "limits.yaml", calendarYAML)[0]
	h, rule := calendarApp(t, client, prefix, ratelimit.WithHashState())
	before := time.Now()
	send(h, 2, apiRequest)
	out := cli(t, "inspect", "-hash", "-redis", addr, "-prefix", prefix, "-file", file, "-rule", "api", "-api-key", "abc")
	row(t, out.stdout, "daily", "5 per day@America/New_York", "3", "allowed")
	row(t, out.stdout, "per-hour", "50 per 1h", "48", "allowed")
	key := periodKey(prefix, "hdr:x-api-key:abc", rule.Policies[0], before)
	if !strings.Contains(out.stdout, key) && !strings.Contains(out.stdout, periodKey(prefix, "hdr:x-api-key:abc", rule.Policies[0], time.Now())) {
		t.Errorf("inspect -hash printed\n%s\nwant the key %s", out.stdout, key)
	}
	if !strings.Contains(out.stdout, " field ") {
		t.Errorf("inspect -hash printed\n%s\nwant the window policy as a field of the hash", out.stdout)
	}
}
