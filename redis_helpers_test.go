package ratelimit_test

import (
	"bufio"
	"os"
	"os/exec"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

func redisZ(score float64) redis.Z { return redis.Z{Score: score, Member: "x"} }

// startChild runs test, of this test binary, as a child process over the shared Redis under a
// prefix of the calling test's (RATELIMIT_CHILD_REDIS, RATELIMIT_CHILD_PREFIX), killed when
// the test ends, and returns it, the lines it prints and the prefix. Its keys must all expire.
func startChild(t *testing.T, test string) (*exec.Cmd, *bufio.Scanner, string) {
	t.Helper()
	addr, prefix := redistest.Addr(t), redistest.Prefix(t)
	t.Cleanup(func() { assertAllKeysExpire(t, redistest.Standalone(t), prefix) })
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), "RATELIMIT_CHILD_REDIS="+addr, "RATELIMIT_CHILD_PREFIX="+prefix, "REDIS_ADDR="+addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out), prefix
}
