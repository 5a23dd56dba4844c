package rls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The bounds of a request; one beyond them is refused with InvalidArgument.
const (
	MaxDescriptors = 256  // descriptors in one request
	MaxEntries     = 64   // entries in one descriptor
	MaxEntryBytes  = 4096 // bytes of one entry's key, and of its value
)

// DefaultTimeout bounds the store's part of every ShouldRateLimit unless [WithTimeout] says
// otherwise: well inside Envoy's default of 20 ms for the whole call, so that with the store
// hung an answer (as the fail mode says) still reaches Envoy before it gives up.
const DefaultTimeout = 10 * time.Millisecond

// Option configures a [Server]. Each is given at most once (NewServer refuses one given
// again, which would silently replace the first); WithDomainFailMode once per domain.
type Option interface {
	apply(*Server) error
	// sets names what the option sets, by which NewServer finds one given twice.
	sets() []string
}

// option is an Option of a function and the names of what it sets.
type option struct {
	names []string
	set   func(*Server) error
}

func (o option) apply(s *Server) error { return o.set(s) }
func (o option) sets() []string        { return o.names }

// named returns the option of set, which sets what names says.
func named(set func(*Server) error, names ...string) Option { return option{names, set} }

// WithTimeout bounds the store's part of each call (DefaultTimeout by default). The call's own
// deadline, Envoy's, ends it first when it is earlier.
func WithTimeout(d time.Duration) Option {
	return named(func(s *Server) error {
		if d <= 0 {
			return fmt.Errorf("rls: WithTimeout(%v): the bound must be positive", d)
		}
		s.timeout = d
		return nil
	}, "WithTimeout")
}

// WithLogger sets where the server logs (slog.Default() by default).
func WithLogger(l *slog.Logger) Option {
	return named(func(s *Server) error {
		if l == nil {
			return errors.New("rls: WithLogger(nil)")
		}
		s.log = l
		return nil
	}, "WithLogger")
}

// WithClock sets the clock of the resets the server computes itself, those of a limit of 0
// requests per unit (the store's clock decides every other); the system clock by default.
func WithClock(c ratelimit.Clock) Option {
	return named(func(s *Server) error {
		if c == nil {
			return errors.New("rls: WithClock(nil)")
		}
		s.clock = c
		return nil
	}, "WithClock")
}

// WithGlobalShadowMode answers every call OK, whatever its statuses say (envoyproxy/ratelimit's
// SHADOW_MODE): each descriptor is still counted and its status still says OVER_LIMIT.
func WithGlobalShadowMode() Option {
	return named(func(s *Server) error { s.globalShadow = true; return nil }, "WithGlobalShadowMode")
}

// Default names of the response headers ([WithResponseHeaders]), envoyproxy/ratelimit's.
const (
	DefaultLimitHeader     = "RateLimit-Limit"
	DefaultRemainingHeader = "RateLimit-Remaining"
	DefaultResetHeader     = "RateLimit-Reset"
)

// WithResponseHeaders has every response carry three headers for Envoy to add to the
// client's response, as envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED does: the limit,
// the remaining count and the seconds until the reset of the descriptor closest to its limit
// (the last one over its limit, when one is). An empty name is the default one
// (DefaultLimitHeader, DefaultRemainingHeader, DefaultResetHeader).
func WithResponseHeaders(limit, remaining, reset string) Option {
	return named(func(s *Server) error {
		names := [3]string{limit, remaining, reset}
		for i, d := range [3]string{DefaultLimitHeader, DefaultRemainingHeader, DefaultResetHeader} {
			if names[i] == "" {
				names[i] = d
			}
		}
		s.headers = &names
		return nil
	}, "WithResponseHeaders")
}

// Server answers envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit from a
// [Config] over a store of this library. It is safe for concurrent use; [Server.SetConfig]
// replaces the configuration while calls go on.
type Server struct {
	rlsv3.UnimplementedRateLimitServiceServer

	store        ratelimit.Store
	local        bool // the store answers without I/O: no deadline, no goroutines
	failModes    FailModes
	metrics      *Metrics     // WithMetrics; nil: none
	health       *StoreHealth // WithStoreHealth; nil: the store is taken to be always available
	fallback     bool         // WithLocalFallback: the store decides locally while unavailable
	probe        *ratelimit.Limiter
	timeout      time.Duration
	globalShadow bool
	headers      *[3]string  // WithResponseHeaders; nil: none
	ietf         int         // WithIETFHeaders: the draft, 10 or 11; 0: none
	refs         *refCounter // WithReferenceKeys; nil: every count in the store
	clock        ratelimit.Clock
	log          *slog.Logger

	current atomic.Pointer[compiled]
	// lastFailLog is when the server last logged a store failure (Unix nanoseconds): at most
	// one line every failLogEvery, with the count of failures since the last.
	lastFailLog atomic.Int64
	failures    atomic.Int64

	checkers checkers // the goroutines of a call's checks but its last

	overridesMu sync.Mutex
	overrides   map[overrideKey]*ratelimit.Limiter

	// configured is signalled (never blocking) when SetConfig puts a configuration in force,
	// or a Reloader refuses one, for ReportFleet to record it at once.
	configured chan struct{}
	// refused is the configuration a Reloader last refused, newer than the one in force; nil
	// when none (ReportFleet records it).
	refused atomic.Pointer[refusal]
}

// refusal is a configuration refused: its version (the digest of its files) and why.
type refusal struct{ version, reason string }

// compiled is a configuration with a limiter for each of its rules.
type compiled struct {
	cfg      *Config
	limiters map[*rule]*ratelimit.Limiter
	loaded   time.Time // when SetConfig put it in force, on the server's clock
}

type overrideKey struct {
	perUnit uint32
	unit    rlsv3.RateLimitResponse_RateLimit_Unit
}

// maxOverrides bounds the limiters kept for request-supplied limits; a limit beyond them gets
// one made for its call.
const maxOverrides = 1024

// overridePolicy names the counts of request-supplied limits: one count per descriptor (its
// entries) and unit whatever the limit, as in envoyproxy/ratelimit, and apart from the rules'.
const overridePolicy = "rls-override"

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// NewServer returns a server of cfg's rules over store, such as ratelimit.NewMemoryStore() or
// ratelimit.NewRedisStore(client).
func NewServer(store ratelimit.Store, cfg *Config, opts ...Option) (*Server, error) {
	if store == nil {
		return nil, errors.New("rls: NewServer needs a store, e.g. ratelimit.NewMemoryStore()")
	}
	if cfg == nil {
		return nil, errors.New("rls: NewServer needs a configuration (ParseConfig() with no file is an empty one)")
	}
	s := &Server{store: store, timeout: DefaultTimeout, clock: systemClock{}, log: slog.Default(),
		overrides: map[overrideKey]*ratelimit.Limiter{}, configured: make(chan struct{}, 1), checkers: newCheckers()}
	if l, ok := store.(interface{ Local() bool }); ok {
		s.local = l.Local()
	}
	given := map[string]bool{}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("rls: NewServer: an option is nil")
		}
		for _, name := range o.sets() {
			if given[name] {
				return nil, fmt.Errorf("rls: NewServer: %s is given twice; give each option once", name)
			}
			given[name] = true
		}
		if err := o.apply(s); err != nil {
			return nil, err
		}
	}
	probe, err := newProbe(store)
	if err != nil {
		return nil, err
	}
	s.probe = probe
	if s.metrics != nil && !s.metrics.server.CompareAndSwap(nil, s) {
		return nil, errors.New("rls: NewServer: WithMetrics: these metrics already count another server's calls; give each server its own")
	}
	if err := s.SetConfig(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// Register registers the server on g.
func (s *Server) Register(g *grpc.Server) { rlsv3.RegisterRateLimitServiceServer(g, s) }

// Config returns the configuration in force.
func (s *Server) Config() *Config { return s.current.Load().cfg }

// Loaded returns when the configuration in force was put in force (by NewServer or
// SetConfig), on the server's clock (WithClock).
func (s *Server) Loaded() time.Time { return s.current.Load().loaded }

// SetConfig puts cfg in force for the calls that start after it returns. The counts of a rule
// whose path and unit stay the same carry over, even if its limit changes.
func (s *Server) SetConfig(cfg *Config) error {
	if cfg == nil {
		return errors.New("rls: SetConfig(nil)")
	}
	c := &compiled{cfg: cfg, limiters: map[*rule]*ratelimit.Limiter{}, loaded: s.clock.Now()}
	for _, r := range cfg.rules() {
		if r.unlimited || r.perUnit == 0 {
			continue
		}
		l, err := s.ruleLimiter(r)
		if err != nil {
			return fmt.Errorf("rls: %s:%d: %w", r.file, r.line, err)
		}
		c.limiters[r] = l
	}
	s.current.Store(c)
	s.refused.Store(nil)
	if s.metrics != nil {
		s.metrics.configLoaded(true)
	}
	s.notifyConfigured()
	return nil
}

// setRefused records that a reload refused the configuration of version for err, and has
// ReportFleet record it at once.
func (s *Server) setRefused(version string, err error) {
	// One line, for a table: the first problem, and how many more (errors.Join's lines).
	reason, rest, more := strings.Cut(err.Error(), "\n")
	if more {
		reason += fmt.Sprintf(" (and %d more)", strings.Count(rest, "\n")+1)
	}
	s.refused.Store(&refusal{version: version, reason: reason})
	s.notifyConfigured()
}

// notifyConfigured signals configured, never blocking.
func (s *Server) notifyConfigured() {
	select {
	case s.configured <- struct{}{}:
	default:
	}
}

func (s *Server) limiter(name string, perUnit uint32, unit rlsv3.RateLimitResponse_RateLimit_Unit) (*ratelimit.Limiter, error) {
	w, ok := unitWindow(unit)
	if !ok {
		return nil, fmt.Errorf("unknown unit %v", unit)
	}
	return ratelimit.New(s.store, ratelimit.Policy{Name: name, Limit: int64(perUnit), Window: w, Algorithm: algorithms.FixedWindow{}})
}

// ruleLimiter returns the limiter of a rule's windows: one store call checks them all.
func (s *Server) ruleLimiter(r *rule) (*ratelimit.Limiter, error) {
	ps, err := policiesOf(r.policyName, r.windows())
	if err != nil {
		return nil, err
	}
	return ratelimit.New(s.store, ps...)
}

// overrideLimiter returns the limiter of a request-supplied limit.
func (s *Server) overrideLimiter(perUnit uint32, unit rlsv3.RateLimitResponse_RateLimit_Unit) (*ratelimit.Limiter, error) {
	k := overrideKey{perUnit, unit}
	s.overridesMu.Lock()
	l := s.overrides[k]
	s.overridesMu.Unlock()
	if l != nil {
		return l, nil
	}
	l, err := s.limiter(overridePolicy, perUnit, unit)
	if err != nil {
		return nil, err
	}
	s.overridesMu.Lock()
	if len(s.overrides) < maxOverrides {
		s.overrides[k] = l
	}
	s.overridesMu.Unlock()
	return l, nil
}

// check is what one descriptor of a call asks of the store.
type check struct {
	limit     *rlsv3.RateLimitResponse_RateLimit // nil: no limit
	limiter   *ratelimit.Limiter                 // nil: no store call (no limit, unlimited, a limit of 0)
	unlimited bool
	shadow    bool
	quota     bool
	name      string
	replaces  []string
	hits      uint64
	key       string
	statKey   string   // the key of the reference's statistics; "" when the server has no metrics
	windows   []window // the rule's, when it has several or an algorithm (windows.go); nil: limit's alone
	ref       bool     // counted on the reference's keys (WithReferenceKeys), not by limiter
	refKey    string   // that key without its window's start
	rulePath  string   // the rule's path in the file; "": a request-supplied limit

	d   decided
	err error
}

// decided is what the server reads of a check's decision: a ratelimit.Decision holds its
// policies and results too, several hundred bytes that each descriptor of every call would
// allocate and clear.
type decided struct {
	allowed         bool
	binding         int // the window that bound it, of a rule with several (bindingWindow)
	remaining       int64
	resetAfter      time.Duration
	effectiveWindow time.Duration
}

// decidedOf is what the server reads of d, a decision of a check with windows (nil: its
// limit's alone).
func decidedOf(d *ratelimit.Decision, windows []window) decided {
	r := decided{allowed: d.Allowed, remaining: d.Remaining, resetAfter: d.ResetAfter, effectiveWindow: d.EffectiveWindow}
	if windows != nil {
		r.binding = bindingWindow(d)
	}
	return r
}

// ShouldRateLimit implements the RateLimitService: see the package README for its semantics.
func (s *Server) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if s.metrics == nil {
		resp, _, _, err := s.shouldRateLimit(ctx, req)
		return resp, err
	}
	start := time.Now()
	resp, checks, shadowed, err := s.shouldRateLimit(ctx, req)
	s.metrics.counted(s.failModes, req.GetDomain(), checks, resp, shadowed, err, time.Since(start))
	return resp, err
}

// shouldRateLimit answers a call: the response or the error, the checks made, and whether the
// global shadow mode answered OK a call over its limit.
func (s *Server) shouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, []check, bool, error) {
	if err := validate(req); err != nil {
		return nil, nil, false, err
	}
	c := s.current.Load()
	checks := make([]check, len(req.Descriptors))
	replaced := map[string]bool{}
	for i, d := range req.Descriptors {
		ch := &checks[i]
		ch.hits = uint64(max(1, req.HitsAddend))
		if d.HitsAddend != nil {
			ch.hits = d.HitsAddend.Value // 0 checks without counting
		}
		if err := s.resolve(c, req.Domain, d, ch); err != nil {
			return nil, nil, false, status.Errorf(codes.InvalidArgument, "descriptor %d: %v", i, err)
		}
		for _, r := range ch.replaces {
			replaced[r] = true
		}
	}
	for i := range checks {
		if ch := &checks[i]; ch.name != "" && replaced[ch.name] && !ch.unlimited {
			*ch = check{} // replaced by another descriptor's limit: no limit (unlimited stays so, as in the reference)
		}
	}
	s.run(ctx, checks)
	resp, shadowed, err := s.respond(req, checks)
	return resp, checks, shadowed, err
}

// resolve finds the limit of descriptor d of domain.
func (s *Server) resolve(c *compiled, domain string, d *rlcommon.RateLimitDescriptor, ch *check) error {
	if c.cfg.domains[domain] == nil {
		return nil // an unknown domain: no limit, even with a request-supplied one
	}
	entries := make([]entry, len(d.Entries))
	for i, e := range d.Entries {
		entries[i] = entry{e.Key, e.Value}
	}
	if o := d.Limit; o != nil {
		unit := rlsv3.RateLimitResponse_RateLimit_Unit(o.Unit) // the same numbers
		if _, ok := unitWindow(unit); !ok {
			return fmt.Errorf("the limit's unit %v is not one of SECOND, MINUTE, HOUR, DAY, MONTH, YEAR", o.Unit)
		}
		ch.limit = &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: o.RequestsPerUnit, Unit: unit}
		ch.key = identity(domain, entries)
		if s.metrics != nil {
			ch.statKey = overrideStatKey(domain, entries)
		}
		if s.refs != nil {
			s.refs.resolve(ch, domain, entries)
			return nil
		}
		if o.RequestsPerUnit > 0 {
			l, err := s.overrideLimiter(o.RequestsPerUnit, ch.limit.Unit)
			if err != nil {
				return err
			}
			ch.limiter = l
		}
		return nil
	}
	r, entries := c.cfg.match(domain, entries)
	if r == nil {
		return nil
	}
	ch.name, ch.replaces, ch.rulePath = r.name, r.replaces, r.path
	if r.unlimited {
		ch.unlimited = true
		return nil
	}
	ch.limit = &rlsv3.RateLimitResponse_RateLimit{Name: r.name, RequestsPerUnit: r.perUnit, Unit: r.unit}
	ch.shadow, ch.quota = r.shadow, r.quota
	ch.limiter = c.limiters[r]
	ch.key = identity(domain, entries)
	if s.metrics != nil {
		ch.statKey = c.cfg.statKey(domain, entries, r)
	}
	if !r.plain() {
		ch.windows = r.windows()
	} else if s.refs != nil {
		s.refs.resolve(ch, domain, entries)
	}
	return nil
}

// identity is the store's identity of a descriptor: its domain and entries, each escaped so
// that no two descriptors share one. (The store writes a long identity, or one with bytes
// other than letters, digits and ".-_:/@+=|", as a digest.)
func identity(domain string, entries []entry) string {
	var b strings.Builder
	escape(&b, domain)
	for _, e := range entries {
		b.WriteByte('|')
		escape(&b, e.key)
		b.WriteByte('=')
		escape(&b, e.value)
	}
	return b.String()
}

func escape(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '|', '=', '%':
			fmt.Fprintf(b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
}

// run asks the store for every check that needs it: at once when there are several and the
// store is remote, each bounded by the server's timeout; and counts the checks in the
// reference's keys (WithReferenceKeys) in one pipeline, beside them, under the same bound.
func (s *Server) run(ctx context.Context, checks []check) {
	n, refs := 0, 0
	for i := range checks {
		switch {
		case checks[i].ref:
			refs++
		case checks[i].limiter != nil:
			n++
		}
	}
	if n == 0 && refs == 0 {
		return
	}
	if !s.local || refs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	if refs > 0 { // one pipeline for them all, beside the store's checks
		if n == 0 {
			s.refs.run(ctx, checks, s.clock.Now())
			return
		}
		done := make(chan struct{})
		go func() { defer close(done); s.refs.run(ctx, checks, s.clock.Now()) }()
		defer func() { <-done }()
	}
	if n == 1 || s.local {
		for i := range checks {
			if ch := &checks[i]; ch.limiter != nil && !ch.ref {
				allow(ctx, ch)
			}
		}
		return
	}
	// The last check runs on this goroutine, the others on the server's checkers.
	var (
		wg   sync.WaitGroup
		last *check
	)
	for i := range checks {
		ch := &checks[i]
		if ch.limiter == nil || ch.ref {
			continue
		}
		if last != nil {
			wg.Add(1)
			prev := last
			s.checkers.do(func() {
				defer wg.Done()
				allow(ctx, prev)
			})
		}
		last = ch
	}
	allow(ctx, last)
	wg.Wait()
}

// allow asks the store for ch, and records its decision or its error in ch.
func allow(ctx context.Context, ch *check) {
	d, err := ch.limiter.AllowN(ctx, ch.key, int64(min(ch.hits, math.MaxInt64)))
	if err != nil {
		ch.err = err
		return
	}
	ch.d = decidedOf(&d, ch.windows)
}

// respond builds the response of the checks, in the request's order, and reports whether the
// global shadow mode answered OK a call over its limit.
func (s *Server) respond(req *rlsv3.RateLimitRequest, checks []check) (*rlsv3.RateLimitResponse, bool, error) {
	resp := &rlsv3.RateLimitResponse{Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(checks))}
	failed, quotas, failedQuotas := 0, 0, 0
	mode := s.failModes.For(req.Domain)

	for i := range checks {
		ch := &checks[i]
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		resp.Statuses[i] = st
		switch {
		case ch.unlimited:
			st.LimitRemaining = math.MaxUint32
			continue
		case ch.limit == nil:
			continue // no limit: OK, nothing else
		}
		var period *calendar.Period // the reported window's, when it is a calendar quota
		if ch.windows != nil {
			w := ch.windows[0] // the store could not decide: the rule's own window
			if ch.err == nil {
				w = ch.windows[ch.d.binding] // the window closest to its limit
				ch.limit = &rlsv3.RateLimitResponse_RateLimit{Name: ch.limit.Name, RequestsPerUnit: w.perUnit, Unit: w.unit}
			}
			period = w.period
		}
		st.CurrentLimit = ch.limit
		window, _ := unitWindow(ch.limit.Unit)
		over := false
		switch {
		case ch.limiter == nil && !ch.ref: // a limit of 0 requests: nothing is ever admitted
			over = ch.hits > 0 // but a check of nothing (hits_addend 0) is not over it
			st.DurationUntilReset = s.resetOf(period, window)
		case ch.err != nil:
			s.storeFailed(req.Domain, mode, ch.err)
			switch mode {
			case FailError:
				return nil, false, status.Errorf(codes.Unavailable, "rls: the store could not decide: %v", ch.err)
			case FailAllow:
				st.CurrentLimit = nil
				continue
			case FailDeny:
				over = true
				st.DurationUntilReset = s.resetOf(period, window)
			}
		default:
			over = !ch.d.allowed
			st.LimitRemaining = uint32(min(max(ch.d.remaining, 0), math.MaxUint32))
			st.DurationUntilReset = durationpb.New(ceilSecond(ch.d.effectiveWindow))
			if ch.d.effectiveWindow <= 0 {
				st.DurationUntilReset = s.resetOf(period, window)
			}
		}
		if ch.quota {
			quotas++
		}
		if !over {
			continue
		}
		switch {
		case ch.shadow: // counted, reported, never denying
		case ch.quota:
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			failedQuotas++
		default:
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			failed++
		}
	}
	if s.headers != nil {
		resp.ResponseHeadersToAdd = s.responseHeaders(resp.Statuses, checks)
	}
	if s.ietf != 0 {
		resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, s.ietfHeaders(resp.Statuses, checks)...)
	}
	resp.OverallCode = rlsv3.RateLimitResponse_OK
	over := failed > 0 || quotas > 0 && quotas == failedQuotas
	if over && !s.globalShadow {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	return resp, over && s.globalShadow, nil
}

// responseHeaders are the headers of the descriptor closest to its limit: the one with the
// least remaining, in order, or the last one over its limit (quota mode aside), as
// envoyproxy/ratelimit chooses it; none when no descriptor has a limit.
func (s *Server) responseHeaders(statuses []*rlsv3.RateLimitResponse_DescriptorStatus, checks []check) []*core.HeaderValue {
	i := closestStatus(statuses, checks, false)
	if i < 0 {
		return nil
	}
	closest := statuses[i]
	return []*core.HeaderValue{
		{Key: s.headers[0], Value: strconv.FormatUint(uint64(closest.CurrentLimit.RequestsPerUnit), 10)},
		{Key: s.headers[1], Value: strconv.FormatUint(uint64(closest.LimitRemaining), 10)},
		{Key: s.headers[2], Value: strconv.FormatInt(closest.DurationUntilReset.GetSeconds(), 10)},
	}
}

// failLogEvery spaces the logs of store failures, which come with every call in an outage.
const failLogEvery = 10 * time.Second

// storeFailed logs a store failure, at most once every failLogEvery.
func (s *Server) storeFailed(domain string, mode FailMode, err error) {
	n := s.failures.Add(1)
	now := time.Now().UnixNano()
	last := s.lastFailLog.Load()
	if now-last < int64(failLogEvery) || !s.lastFailLog.CompareAndSwap(last, now) {
		return
	}
	s.failures.Add(-n)
	s.log.Warn("rls: the store could not decide; the fail mode answers", "fail_mode", mode.String(),
		"domain", domain, "failures", n, "error", err)
}

// ceilSecond rounds d up to whole seconds, as envoyproxy/ratelimit reports a reset.
func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

// resetOf is the time from now to the end of a reported window: its calendar period's when
// period is not nil, else its fixed window's of length w.
func (s *Server) resetOf(period *calendar.Period, w time.Duration) *durationpb.Duration {
	if period != nil {
		return durationpb.New(untilPeriodEnd(period, s.clock.Now()))
	}
	return s.untilReset(w)
}

// untilReset is the time from now to the end of the fixed window of length w, on the server's
// clock, in whole seconds.
func (s *Server) untilReset(w time.Duration) *durationpb.Duration {
	if w <= 0 {
		return durationpb.New(0) // no window of a length (never: every unit but UNKNOWN has one)
	}
	now := s.clock.Now().UnixMicro()
	us := w.Microseconds()
	return durationpb.New(ceilSecond(time.Duration(us-now%us) * time.Microsecond))
}

// validate refuses a request the protocol does not allow, or beyond the server's bounds.
func validate(req *rlsv3.RateLimitRequest) error {
	bad := func(format string, args ...any) error {
		return status.Errorf(codes.InvalidArgument, "rls: "+format, args...)
	}
	switch {
	case req == nil:
		return bad("no request")
	case req.Domain == "":
		return bad("rate limit domain must not be empty")
	case len(req.Descriptors) == 0:
		return bad("rate limit descriptor list must not be empty")
	case len(req.Descriptors) > MaxDescriptors:
		return bad("%d descriptors: at most %d", len(req.Descriptors), MaxDescriptors)
	case len(req.Domain) > MaxEntryBytes:
		return bad("the domain has %d bytes: at most %d", len(req.Domain), MaxEntryBytes)
	}
	for i, d := range req.Descriptors {
		switch {
		case d == nil || len(d.Entries) == 0:
			return bad("descriptor %d has no entries", i)
		case len(d.Entries) > MaxEntries:
			return bad("descriptor %d has %d entries: at most %d", i, len(d.Entries), MaxEntries)
		}
		for j, e := range d.Entries {
			if e == nil {
				return bad("descriptor %d, entry %d is empty", i, j)
			}
			if len(e.Key) > MaxEntryBytes || len(e.Value) > MaxEntryBytes {
				return bad("descriptor %d, entry %d: a key or value of more than %d bytes", i, j, MaxEntryBytes)
			}
		}
	}
	return nil
}
