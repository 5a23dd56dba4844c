package rlsparity

import (
	"os"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rls"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// The shared table: each case is a sequence of calls, made of the values it is given so that
// each run of it counts apart. It holds the cases the parity table leaves out because the
// servers count them apart by default, and which they count alike in the reference's keys.
var shared = []struct {
	name  string
	calls func(v string) []*rlsv3.RateLimitRequest
}{
	{"a window fills", func(v string) []*rlsv3.RateLimitRequest {
		r := req(0, desc("remote_address", v))
		return []*rlsv3.RateLimitRequest{r, r, r, r, r}
	}},
	{"denied hits count", func(v string) []*rlsv3.RateLimitRequest {
		return []*rlsv3.RateLimitRequest{
			req(3, desc("user", v, "plan", "silver")), req(3, desc("user", v, "plan", "silver")), // 6 of 4: over, and counted
			req(0, desc("user", v, "plan", "silver")), req(0, hits(0, desc("user", v, "plan", "silver"))),
		}
	}},
	{"a supplied limit shares the rule's count", func(v string) []*rlsv3.RateLimitRequest {
		return []*rlsv3.RateLimitRequest{
			req(4, desc("path", "/api/"+v)), req(0, override(6, typev3.RateLimitUnit_HOUR, desc("path", "/api/"+v))),
			req(0, desc("path", "/api/"+v)), req(2, override(6, typev3.RateLimitUnit_HOUR, desc("path", "/api/"+v))),
		}
	}},
	{"share_threshold", func(v string) []*rlsv3.RateLimitRequest {
		return []*rlsv3.RateLimitRequest{
			req(0, desc("team", v, "file", "filesA")), req(2, desc("team", v, "file", "filesB")), req(0, desc("team", v, "file", "filesC")),
		}
	}},
	{"several descriptors, nested", func(v string) []*rlsv3.RateLimitRequest {
		r := req(0, desc("remote_address", v), desc("user", v, "plan", "free"), desc("cookie", v))
		return []*rlsv3.RateLimitRequest{r, r, r, r}
	}},
}

// TestSharedCounts runs each case of the shared table three times on one Redis, ours in the
// reference's keys (rls.WithReferenceKeys): on the reference alone, on ours alone, and
// alternating between the two, call by call. The three must answer alike: the two servers
// share one count.
func TestSharedCounts(t *testing.T) {
	if os.Getenv("RLSPARITY") != "1" {
		t.Skip("RLSPARITY=1 runs the parity test (it builds envoyproxy/ratelimit)")
	}
	redisAddr := redistest.Addr(t)
	ref := client(t, reference(t, redisAddr))
	our := client(t, ours(t, redisAddr, rls.WithReferenceKeys(redistest.Standalone(t), "")))
	started(t, ref)
	alternate := []rlsv3.RateLimitServiceClient{ref, our}
	for i, tc := range shared {
		t.Run(tc.name, func(t *testing.T) {
			tag := "shared" + string(rune('a'+i))
			inOneMinute(3 * len(tc.calls(tag)))
			var want []string
			var wantResets [][]time.Duration
			for _, call := range tc.calls(tag + "-ref") {
				a, r := ask(t, ref, call)
				want, wantResets = append(want, a), append(wantResets, r)
			}
			for _, run := range []struct {
				name    string
				servers []rlsv3.RateLimitServiceClient
			}{{"ours", []rlsv3.RateLimitServiceClient{our}}, {"alternating", alternate}} {
				for j, call := range tc.calls(tag + "-" + run.name) {
					got, resets := ask(t, run.servers[j%len(run.servers)], call)
					if got != want[j] {
						t.Errorf("%s, call %d:\n got       %s\n reference %s", run.name, j, got, want[j])
					}
					for k := range resets {
						if d := resets[k] - wantResets[j][k]; d < -time.Second || d > time.Second {
							t.Errorf("%s, call %d, descriptor %d: reset %v, the reference's %v", run.name, j, k, resets[k], wantResets[j][k])
						}
					}
				}
			}
		})
	}
}
