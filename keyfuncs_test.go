package ratelimit_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// newReq returns GET path from 192.0.2.1:1234 with the given header lines, as a Request.
func newReq(path string, header ...string) ratelimit.Request {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = "192.0.2.1:1234"
	for i := 0; i < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return ratelimit.HTTPRequest(r)
}

// static is a key function that always returns key.
func static(key string) ratelimit.KeyFunc {
	return func(ratelimit.Request) (string, error) { return key, nil }
}

// digest is how a key function writes a value too long to keep.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "#" + base64.RawURLEncoding.EncodeToString(sum[:])
}

func failing(err error) ratelimit.KeyFunc {
	return func(ratelimit.Request) (string, error) { return "", err }
}

// keyCase is a key function applied to a request, and the key or error it must give.
type keyCase struct {
	name    string
	fn      ratelimit.KeyFunc
	req     ratelimit.Request
	want    string
	wantErr error  // errors.Is
	errText string // a part of the error
}

func runKeyCases(t *testing.T, cases []keyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.fn(c.req)
			switch {
			case c.wantErr == nil && c.errText == "":
				if err != nil || got != c.want {
					t.Errorf("got %q, %v; want %q", got, err, c.want)
				}
			case err == nil:
				t.Errorf("got %q, want an error", got)
			case c.wantErr != nil && !errors.Is(err, c.wantErr):
				t.Errorf("got error %v, want one wrapping %v", err, c.wantErr)
			case !strings.Contains(err.Error(), c.errText):
				t.Errorf("got error %v, want one containing %q", err, c.errText)
			}
		})
	}
}

func TestKeyByHeader(t *testing.T) {
	long := strings.Repeat("k", 300)
	apiKey := ratelimit.KeyByHeader("X-API-Key")
	runKeyCases(t, []keyCase{
		{name: "present", fn: apiKey, req: newReq("/", "X-Api-Key", "abc"), want: "hdr:x-api-key:abc"},
		{name: "name is case-insensitive", fn: ratelimit.KeyByHeader("x-api-key"), req: newReq("/", "X-API-KEY", "abc"), want: "hdr:x-api-key:abc"},
		{name: "two lines are malformed", fn: apiKey, req: newReq("/", "X-API-Key", "a", "X-API-Key", "b"),
			errText: "header X-Api-Key has a comma: the header is repeated, or its value is not an identity"},
		{name: "an empty first line and another", fn: apiKey, req: newReq("/", "X-API-Key", "", "X-API-Key", "b"), errText: "has a comma"},
		{name: "a comma in one line is malformed", fn: apiKey, req: newReq("/", "X-API-Key", "a,b"), errText: "has a comma"},
		{name: "absent", fn: apiKey, req: newReq("/"), wantErr: ratelimit.ErrNoKey},
		{name: "empty", fn: apiKey, req: newReq("/", "X-API-Key", ""), wantErr: ratelimit.ErrNoKey},
		{name: "long is hashed", fn: apiKey, req: newReq("/", "X-API-Key", long), want: "hdr:x-api-key:" + digest(long)},
		{name: "a value cannot pose as a digest", fn: apiKey, req: newReq("/", "X-API-Key", digest(long)),
			want: "hdr:x-api-key:" + digest(digest(long))},
		{name: "too long", fn: apiKey, req: newReq("/", "X-API-Key", strings.Repeat("k", 1<<20)),
			errText: "header X-Api-Key is 1048576 bytes, more than 4096"},
		{name: "the longest kept", fn: apiKey, req: newReq("/", "X-API-Key", strings.Repeat("k", 4096)), want: "hdr:x-api-key:" + digest(strings.Repeat("k", 4096))},
		{name: "binary", fn: apiKey, req: newReq("/", "X-API-Key", "\x00\xff\x80"), want: "hdr:x-api-key:\x00\xff\x80"},
	})
	for _, req := range []ratelimit.Request{
		newReq("/", "X-API-Key", "s3cret-key", "X-API-Key", "junk1"),
		newReq("/", "X-API-Key", strings.Repeat("s3cret", 1000)),
	} {
		_, err := apiKey(req)
		if err == nil || errors.Is(err, ratelimit.ErrNoKey) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "junk1") {
			t.Errorf("got error %v, want one that is not ErrNoKey and does not tell the value", err)
		}
	}
	a, _ := ratelimit.KeyByHeader("X-A")(newReq("/", "X-A", "v"))
	b, _ := ratelimit.KeyByHeader("X-B")(newReq("/", "X-B", "v"))
	if a == b {
		t.Errorf("two headers with the same value give the same key %q", a)
	}
}

func TestKeyByHeaderPanicsOnBadName(t *testing.T) {
	for _, name := range []string{"", "X API", "X:Y", "é"} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "not a valid header name") {
					t.Errorf("KeyByHeader(%q): got panic %v, want one about the name", name, r)
				}
			}()
			ratelimit.KeyByHeader(name)
		}()
	}
}

type userKey struct{}

// userID is an application's type of user id.
type userID struct{ n int }

func (u userID) String() string { return "u" + strconv.Itoa(u.n) }

// Named types of ids, as applications declare them.
type (
	namedID       string
	namedNum      int16
	namedUnsigned uint8
)

func TestKeyByUser(t *testing.T) {
	user := ratelimit.KeyByUser(userKey{})
	as := func(id any) ratelimit.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if id != nil {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, id))
		}
		return ratelimit.HTTPRequest(r)
	}
	runKeyCases(t, []keyCase{
		{name: "authenticated", fn: user, req: as("bob"), want: "user:bob"},
		{name: "bytes", fn: user, req: as([]byte("bob")), want: "user:bob"},
		{name: "int", fn: user, req: as(-42), want: "user:-42"},
		{name: "int64", fn: user, req: as(int64(1) << 62), want: "user:4611686018427387904"},
		{name: "int32", fn: user, req: as(int32(7)), want: "user:7"},
		{name: "uint", fn: user, req: as(uint(7)), want: "user:7"},
		{name: "uint64", fn: user, req: as(uint64(1) << 63), want: "user:9223372036854775808"},
		{name: "uint32", fn: user, req: as(uint32(7)), want: "user:7"},
		{name: "Stringer", fn: user, req: as(userID{7}), want: "user:u7"},
		{name: "a named string type", fn: user, req: as(namedID("bob")), want: "user:bob"},
		{name: "a named integer type", fn: user, req: as(namedNum(-7)), want: "user:-7"},
		{name: "a named unsigned type", fn: user, req: as(namedUnsigned(7)), want: "user:7"},
		{name: "the string, not the number", fn: user, req: as("42"), want: "user:42"},
		{name: "anonymous", fn: user, req: as(nil), wantErr: ratelimit.ErrNoKey},
		{name: "empty id", fn: user, req: as(""), wantErr: ratelimit.ErrNoKey},
		{name: "empty bytes", fn: user, req: as([]byte{}), wantErr: ratelimit.ErrNoKey},
		{name: "long id", fn: user, req: as(strings.Repeat("u", 257)), want: "user:" + digest(strings.Repeat("u", 257))},
		{name: "too long", fn: user, req: as(strings.Repeat("u", 4097)), errText: "user id is 4097 bytes, more than 4096"},
		{name: "another type", fn: user, req: as(1.5),
			errText: "ratelimit: KeyByUser: the value under {} is a float64, not a string, integer or fmt.Stringer"},
		{name: "a value under another key", fn: ratelimit.KeyByUser("user"), req: as("bob"), wantErr: ratelimit.ErrNoKey},
	})
	if _, err := user(as(struct{ ID string }{"bob"})); err == nil || errors.Is(err, ratelimit.ErrNoKey) {
		t.Errorf("a struct: got %v, want an error other than ErrNoKey", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("KeyByUser(nil) did not panic")
		}
	}()
	ratelimit.KeyByUser(nil)
}

func TestKeyByRoute(t *testing.T) {
	route := func(method, pattern string) ratelimit.Request {
		r := httptest.NewRequest(method, "/anything", nil)
		r.Pattern = pattern
		return ratelimit.HTTPRequest(r)
	}
	runKeyCases(t, []keyCase{
		{name: "pattern", fn: ratelimit.KeyByRoute(), req: route("GET", "/items/{id}"), want: "route:/items/{id}"},
		{name: "any method, one route", fn: ratelimit.KeyByRoute(), req: route("DELETE", "/items/{id}"), want: "route:/items/{id}"},
		{name: "the pattern's method left out", fn: ratelimit.KeyByRoute(), req: route("HEAD", "GET /items/{id}"), want: "route:/items/{id}"},
		{name: "pattern with a host", fn: ratelimit.KeyByRoute(), req: route("POST", "example.com/x"), want: "route:example.com/x"},
		{name: "method and host", fn: ratelimit.KeyByRoute(), req: route("POST", "POST example.com/x"), want: "route:example.com/x"},
		{name: "no route", fn: ratelimit.KeyByRoute(), req: route("GET", ""), wantErr: ratelimit.ErrNoKey},
		{name: "method", fn: ratelimit.KeyByMethod(), req: route("PATCH", "/x"), want: "method:PATCH"},
		{name: "unknown methods are one", fn: ratelimit.KeyByMethod(), req: route("BREW", "/pot"), want: "method:OTHER"},
	})
}

func TestKeyJoin(t *testing.T) {
	boom := errors.New("boom")
	routed := func(pattern string) ratelimit.Request {
		r := httptest.NewRequest(http.MethodGet, "/x", nil)
		r.RemoteAddr, r.Pattern = "192.0.2.1:1234", pattern
		return ratelimit.HTTPRequest(r)
	}
	runKeyCases(t, []keyCase{
		{name: "parts", fn: ratelimit.KeyJoin(static("a:b"), static("c")), req: newReq("/"), want: "3:a:b|1:c"},
		{name: "other split", fn: ratelimit.KeyJoin(static("a"), static("b:c")), req: newReq("/"), want: "1:a|3:b:c"},
		{name: "separator in a part", fn: ratelimit.KeyJoin(static("a|1:b"), static("")), req: newReq("/"), want: "5:a|1:b|0:"},
		// KeyJoin's doc shows this key: it showed one KeyByRoute never makes (the method in it).
		{name: "ip and route", fn: ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute()), req: routed("GET /x"), want: "12:ip:192.0.2.1|8:route:/x"},
		{name: "a missing part", fn: ratelimit.KeyJoin(static("a"), failing(ratelimit.ErrNoKey)), req: newReq("/"), wantErr: ratelimit.ErrNoKey},
		{name: "an error", fn: ratelimit.KeyJoin(failing(boom), static("a")), req: newReq("/"), wantErr: boom},
	})
	seen := map[string]bool{}
	for _, parts := range [][]string{{"a:b", "c"}, {"a", "b:c"}, {"a", "b", "c"}, {"abc"}, {"a|b", "c"}, {"a", "b|c"}, {"", "abc"}, {"abc", ""}} {
		fns := make([]ratelimit.KeyFunc, len(parts))
		for i, p := range parts {
			fns[i] = static(p)
		}
		k, err := ratelimit.KeyJoin(fns...)(newReq("/"))
		if err != nil || seen[k] {
			t.Errorf("KeyJoin%q = %q, %v: not unique", parts, k, err)
		}
		seen[k] = true
	}
}

func TestKeyOr(t *testing.T) {
	boom := errors.New("boom")
	none := failing(ratelimit.ErrNoKey)
	runKeyCases(t, []keyCase{
		{name: "first", fn: ratelimit.KeyOr(static("a"), static("b")), req: newReq("/"), want: "a"},
		{name: "fallback", fn: ratelimit.KeyOr(none, none, static("c")), req: newReq("/"), want: "c"},
		{name: "api key or ip", fn: ratelimit.KeyOr(ratelimit.KeyByHeader("X-API-Key"), ratelimit.KeyByIP()), req: newReq("/"), want: "ip:192.0.2.1"},
		{name: "an error is not a missing key", fn: ratelimit.KeyOr(failing(boom), static("b")), req: newReq("/"), wantErr: boom},
		{name: "a repeated api key is an error, not a missing key", fn: ratelimit.KeyOr(ratelimit.KeyByHeader("X-API-Key"), ratelimit.KeyByIP()),
			req: newReq("/", "X-API-Key", "a", "X-API-Key", "b"), errText: "has a comma"},
		{name: "none", fn: ratelimit.KeyOr(none, none), req: newReq("/"), wantErr: ratelimit.ErrNoKey},
	})
}

func TestKeyCombinatorsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"KeyJoin()":    func() { ratelimit.KeyJoin() },
		"KeyJoin(nil)": func() { ratelimit.KeyJoin(static("a"), nil) },
		"KeyOr()":      func() { ratelimit.KeyOr() },
		"KeyOr(nil)":   func() { ratelimit.KeyOr(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

var requestSink ratelimit.Request

func TestHTTPRequest(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "https://example.com/a/b?q=1", nil)
	r.RemoteAddr = "[2001:db8::1]:443"
	r.Pattern = "POST /a/{x}"
	r.Header.Add("X-Forwarded-For", "198.51.100.1")
	r.Header.Add("X-Forwarded-For", "203.0.113.7, 10.0.0.1")
	ctx := context.WithValue(r.Context(), userKey{}, "bob")
	r = r.WithContext(ctx)
	req := ratelimit.HTTPRequest(r)
	for _, c := range []struct{ name, got, want string }{
		{"Method", req.Method(), "POST"},
		{"Path", req.Path(), "/a/b"},
		{"Route", req.Route(), "POST /a/{x}"},
		{"RemoteAddr", req.RemoteAddr(), "[2001:db8::1]:443"},
		{"Header joins the lines", req.Header("x-forwarded-for"), "198.51.100.1, 203.0.113.7, 10.0.0.1"},
		{"Header absent", req.Header("X-Real-IP"), ""},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if req.Context() != ctx {
		t.Error("Context is not the request's")
	}
	if v := req.Value(userKey{}); v != "bob" {
		t.Errorf("Value: got %v, want the context's value", v)
	}
	if v := req.Value("user"); v != nil {
		t.Errorf("Value of a key the context lacks: got %v", v)
	}
	if n := testing.AllocsPerRun(100, func() { requestSink = ratelimit.HTTPRequest(r) }); n != 0 {
		t.Errorf("HTTPRequest allocates %v times, want 0", n)
	}
	if got := ratelimit.HTTPRequest(&http.Request{}).Path(); got != "" {
		t.Errorf("Path of a request without URL: got %q", got)
	}
}

// A nil pointer of a fmt.Stringer under KeyByUser's key — what an authentication middleware
// stores for an anonymous request — is anonymous (ErrNoKey): its String made the guard panic.
func TestKeyByUserNilStringerIsAnonymous(t *testing.T) {
	type userKey struct{}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Name: "p", Limit: 10, Window: time.Minute})
	h := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByUser(userKey{})), ratelimit.WithAccess(ratelimit.Access{MissingKey: http.StatusUnauthorized}))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/", nil)
	r = r.WithContext(context.WithValue(r.Context(), userKey{}, (*url.URL)(nil)))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r) // panicked
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a nil *url.URL as the user: %d, want 401 (anonymous: MissingKey)", w.Code)
	}
}
