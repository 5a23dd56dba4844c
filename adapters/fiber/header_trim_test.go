package fiberlimit_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiber"
)

// rawStatus sends one raw HTTP/1.1 request to addr and returns the response status.
// rawStatus sends a request written by hand (net/http would trim the value itself) and
// returns the status of its answer.
func rawStatus(t *testing.T, addr, apiKey string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("GET /items/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + apiKey + "\r\nConnection: close\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdv5FiberTrailingTabIsANewKey: the same bytes on the wire get different keys from
// net/http (which trims spaces and tabs around a field value, RFC 9110 §5.5) and from the
// Fiber adapter (fasthttp trims spaces only): with KeyByHeader, a client of the Fiber app
// gets a new quota for every tab it appends to its key ("k", "k\t", "k\t\t", ...).
// Spaces and tabs around a header's value are no part of it, as in net/http (RFC 9110 5.5):
// fasthttp before v1.69 trims spaces alone, so under KeyByHeader the keys "k", "k\t" and
// "\tk" were three quotas here and one in net/http.
func TestHeaderTabsAreTrimmedAsInNetHTTP(t *testing.T) {
	policy := ratelimit.Policy{Name: "p", Limit: 1, Window: time.Minute}
	opt := ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key"))

	std := httptest.NewServer(ratelimit.Middleware(mustNew(ratelimit.NewMemoryStore(), policy), opt)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer std.Close()

	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(fiberlimit.New(mustNew(ratelimit.NewMemoryStore(), policy), opt))
	app.Get("/items/:id", func(c *fiber.Ctx) error { return nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	defer app.Shutdown()

	for _, s := range []struct{ name, addr string }{{"net/http", std.Listener.Addr().String()}, {"fiber", ln.Addr().String()}} {
		var got []int
		for _, k := range []string{"k", "k\t", "k\t\t", "\tk"} {
			got = append(got, rawStatus(t, s.addr, k))
		}
		t.Logf("%s: %v", s.name, got)
		for i, code := range got[1:] {
			if code != 429 {
				t.Errorf("%s: request %d (the key with tabs around it) got %d, want 429 as net/http answers: the same key", s.name, i+2, code)
			}
		}
	}
}
