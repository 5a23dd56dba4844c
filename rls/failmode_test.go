package rls

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"google.golang.org/grpc/status"
)

func TestParseFailModes(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: FailModes.String(), or "error: " and a part of the error
	}{
		{"error", "error"},
		{"allow", "allow"},
		{"DENY", "deny"},
		{"allow,edge=deny,internal=error", "allow,edge=deny,internal=error"},
		{" allow , internal = error ,edge=deny", "allow,edge=deny,internal=error"},
		{"edge=deny", "error,edge=deny"},
		{"edge=allow,internal=deny", "error,edge=allow,internal=deny"},
		{"", `error: fail mode ""`},
		{"maybe", `error: fail mode "maybe"`},
		{"allow,deny", `error: "deny": only the first element is a mode alone`},
		{"allow,=deny", `error: "=deny" names no domain`},
		{"allow,edge=maybe", `error: domain "edge"`},
		{"allow,edge=deny,edge=allow", `error: domain "edge" is given twice`},
	} {
		fm, err := ParseFailModes(tc.in)
		got := fm.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if err != nil && len(tc.want) > 7 && tc.want[:7] == "error: " {
			if !strings.Contains(got, tc.want[7:]) {
				t.Errorf("ParseFailModes(%q): %s, want an error with %s", tc.in, got, tc.want[7:])
			}
			continue
		}
		if got != tc.want {
			t.Errorf("ParseFailModes(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestDomainFailModes answers each domain as its own fail mode says, and the others as the
// default does, over a store that cannot decide.
func TestDomainFailModes(t *testing.T) {
	var files []File
	for _, d := range []string{"edge", "internal", "other"} {
		files = append(files, File{Name: d + ".yaml", Data: []byte("domain: " + d + "\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 3}\n")})
	}
	cfg, err := ParseConfig(files...)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := ParseFailModes("allow,edge=deny,internal=error")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(failingStore{errors.New("down")}, cfg, WithFailModes(fm),
		WithClock(fakeclock.New(fakeclock.T0)), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	for domain, want := range map[string]string{
		"edge":     "OVER_LIMIT: OVER_LIMIT 0/3/SECOND 1s",
		"internal": "Unavailable",
		"other":    "OK: OK 0/-",
		"unknown":  "OK: OK 0/-", // no rule: no store call, whatever the mode
	} {
		resp, err := srv.ShouldRateLimit(context.Background(), request(domain, desc("ip", "1")))
		got := status.Code(err).String()
		if err == nil {
			got = summary(resp)
		}
		if got != want {
			t.Errorf("%s: got %s, want %s", domain, got, want)
		}
	}
	// WithDomainFailMode over WithFailMode, in either order.
	srv, err = NewServer(failingStore{errors.New("down")}, cfg, WithDomainFailMode("other", FailDeny), WithFailMode(FailAllow),
		WithClock(fakeclock.New(fakeclock.T0)), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.failModes.String(); got != "allow,other=deny" {
		t.Errorf("fail modes %s, want allow,other=deny", got)
	}
	for _, bad := range []Option{WithDomainFailMode("", FailDeny), WithDomainFailMode("edge", 9), WithFailModes(FailModes{Default: 9})} {
		if _, err := NewServer(failingStore{}, cfg, bad); err == nil {
			t.Error("NewServer accepted a bad fail mode")
		}
	}
}

// An option given twice would replace the first silently: NewServer refuses it, naming it;
// a domain's fail mode is one option per domain, and WithFailModes sets the default and its
// domains' (so it cannot be given beside WithFailMode either).
func TestOptionsGivenTwice(t *testing.T) {
	cfg, err := ParseConfig()
	if err != nil {
		t.Fatal(err)
	}
	store := ratelimit.NewMemoryStore()
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithTimeout(time.Millisecond), WithTimeout(time.Second)}, "WithTimeout is given twice"},
		{[]Option{WithIETFHeaders(11), WithIETFHeaders(10)}, "WithIETFHeaders is given twice"},
		{[]Option{WithFailMode(FailAllow), WithFailModes(FailModes{Default: FailDeny})}, "the default fail mode is given twice"},
		{[]Option{WithDomainFailMode("edge", FailAllow), WithFailModes(FailModes{Domains: map[string]FailMode{"edge": FailDeny}})}, `the fail mode of domain "edge" is given twice`},
	} {
		if _, err := NewServer(store, cfg, c.opts...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewServer with %d options: %v; want an error with %q", len(c.opts), err, c.want)
		}
	}
	if _, err := NewServer(store, cfg, WithFailMode(FailAllow), WithDomainFailMode("edge", FailDeny), WithDomainFailMode("internal", FailError)); err != nil {
		t.Errorf("a default and two domains' fail modes: %v", err)
	}
}
