package ratelimit_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// persistWarning starts the store's warning of a Redis that keeps nothing on disk.
const persistWarning = "ratelimit: Redis keeps nothing on disk"

// TestRedisPersistenceWarning: a limiter with a calendar policy, or a window of an hour or
// more, on a Redis without persistence (save "" and appendonly no, as redistest starts its
// servers) is warned of once, naming the server and what to enable; with AOF or RDB snapshots
// it is not (the store says at Info that the counts survive); a server that refuses CONFIG
// gets no warning beyond the eviction check's "could not be read".
func TestRedisPersistenceWarning(t *testing.T) {
	utc := &calendar.Period{Unit: calendar.Day, Zone: time.UTC}
	for _, tc := range []struct {
		name   string
		args   []string
		user   string
		policy ratelimit.Policy
		want   string // a line the log must hold once the read is done
		warned bool
	}{
		{"calendar without persistence", nil, "", ratelimit.Policy{Name: "daily", Limit: 5, Period: utc}, persistWarning, true},
		{"hour window without persistence", nil, "", ratelimit.Policy{Limit: 5, Window: time.Hour}, persistWarning, true},
		{"calendar with AOF", []string{"--appendonly", "yes"}, "", ratelimit.Policy{Name: "daily", Limit: 5, Period: utc}, "Redis persists its data", false},
		{"calendar with RDB snapshots", []string{"--save", "3600 1"}, "", ratelimit.Policy{Name: "daily", Limit: 5, Period: utc}, "Redis persists its data", false},
		{"config refused", []string{"--user", "app", "on", ">s3cret", "~*", "&*", "+@all", "-config"}, "app",
			ratelimit.Policy{Name: "daily", Limit: 5, Period: utc}, "persistence (save, appendonly) could not be read", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := privateClient(t, tc.user, tc.args...)
			var logged syncBuffer
			store := ratelimit.NewRedisStore(client, ratelimit.WithClock(newFakeClock()),
				ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			l := mustNew(t, store, tc.policy)
			allow(t, l, "k", 1)
			waitFor(t, "the persistence read", func() bool { return strings.Contains(logged.String(), tc.want) })
			allow(t, l, "k", 1) // a check after the read reads nothing again
			allow(t, l, "j", 1)
			log := logged.String()
			if n := strings.Count(log, persistWarning); n != map[bool]int{true: 1}[tc.warned] {
				t.Errorf("logged:\n%s\nthe warning %d times; want %v", log, n, map[bool]int{true: 1}[tc.warned])
			}
			if tc.warned && (!strings.Contains(log, "servers="+client.Options().Addr) || !strings.Contains(log, "enable AOF (appendonly yes) or RDB snapshots")) {
				t.Errorf("logged:\n%s\nwant the server %s and the remedy named", log, client.Options().Addr)
			}
			if tc.user != "" && strings.Count(log, "level=WARN") != 1 {
				t.Errorf("logged:\n%s\nwant one warning, the eviction check's", log)
			}
		})
	}
}
