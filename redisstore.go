package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/rediscall"
	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
	"github.com/a7d3e0dd/ratelimit/observe"
)

var (
	// adjustScript refunds and renews; checkScript, the same function, checks, and its
	// concurrent calls may be merged into one (see package internal/rediscall).
	adjustScript = rediscall.NewScript(redisscripts.Check()).WithFunction(redisscripts.Function())
	checkScript  = adjustScript.WithMerged(redisscripts.Merged())
	resetScript  = rediscall.NewScript(redisscripts.Reset())
)

// redisStore keeps rate-limit state in Redis. See [NewRedisStore].
type redisStore struct {
	client redis.Scripter
	calls  *rediscall.Caller
	prefix string
	// compact is set by WithCompactState: the keys are compact (see StorageKey), and
	// the scripts may keep a TAT in a key's expiry.
	compact bool
	// hash is set by WithHashState: every policy whose state is integers keeps it in a field
	// of one hash per identity (see hashKeyIn).
	hash bool
	// compactChecked is set once the servers' versions were checked for compact state (see
	// checkCompactServers).
	compactChecked atomic.Bool
	// forgets is the channel of the announcements of refunds and resets (see forgets.go), as
	// an argument of the scripts, which compact keys need.
	forgets any
	clock   Clock // nil: the Redis server's TIME
	// direct reports that the client gives up at its context's deadline (go-redis with
	// ContextTimeoutEnabled), so a call needs no goroutine to keep its deadline.
	direct bool
	// timeout bounds every call (WithCallTimeout); ticks gives the calls whose context cannot
	// end their bound, shared per grain (see deadline.go).
	timeout time.Duration
	ticks   *timeouts
	log     logs
	dials   *dialWatch // nil: the client takes no hooks
	// observer is the store's, for what only the store knows (its servers' eviction policy).
	observer *Observer
	// degraded is what the store reported running without, reported back by Close.
	degraded *degradations
	eviction evictionCheck
	// persistence is what the store knows of its servers' persistence (redispersist.go).
	persistence persistenceCheck
	// desc describes the store's calls: FCALL of the function, or EVALSHA once the server
	// refused Functions.
	desc atomic.Pointer[observe.StoreInfo]
	// pingEvery is how long the subscription of the denial cache stays quiet before it checks
	// its connection (see forgets.go).
	pingEvery time.Duration
	// listening is set while the subscription's goroutine runs (see forgets.go).
	listening atomic.Bool
	// bg runs the store's goroutines, and sub is its subscription: Close ends both (see
	// redisclose.go).
	bg  *background
	sub subscription
}

var _ Store = (*redisStore)(nil)

// logger declares the store's logger (see [WithLogger]).
func (s *redisStore) logger() logs { return s.log }

// info declares what the store is (see [observe.StoreInfo]).
func (s *redisStore) info() *observe.StoreInfo { return s.desc.Load() }

// describeRedis describes a Redis store over client: its calls, and the server's address
// where the client has one.
func describeRedis(client redis.Scripter) *observe.StoreInfo {
	info := &observe.StoreInfo{System: "redis", Operation: "FCALL", Procedure: checkScript.Function()}
	if c, ok := client.(*redis.Client); ok {
		if host, port, err := net.SplitHostPort(c.Options().Addr); err == nil {
			info.ServerAddress = host
			info.ServerPort, _ = strconv.Atoi(port)
		}
	}
	return info
}

// NewRedisStore returns a store that keeps rate-limit state in Redis, shared by every instance
// of a service. client may be any go-redis v9 client: *redis.Client, the failover (Sentinel)
// client, *redis.ClusterClient or *redis.Ring. Its options are the [StoreOption]s and the
// [RedisOption]s (the call timeout, the breaker, the denial cache, the fallback);
// NewRedisStore panics if one is invalid.
//
// A check of any number of policies is one call of a Redis Function (FCALL; on servers before
// Redis 7, a script: EVALSHA), atomic and all or nothing. Under load, the checks that queue
// while others are on the wire leave together: on one server as one call that runs each in
// turn, on a Cluster or a Ring as a pipeline per node. The store loads the function or the
// script itself, and again whenever a server lost it (FUNCTION FLUSH, SCRIPT FLUSH, a restart,
// a failover): callers never see the loss. Every key it writes expires when its state stops
// mattering. By default the script reads the Redis server's TIME, so application servers with
// skewed clocks still agree.
//
// Every call returns by its context's deadline, or by the store's own bound when that comes
// first ([WithCallTimeout], 1 s by default), whatever the client's timeouts. A go-redis client
// gives up at the deadline only with ContextTimeoutEnabled; with any other client the store
// runs each call in a goroutine of its own and abandons it at the deadline (its result is
// dropped when it ends). Set ContextTimeoutEnabled for the lowest latency.
//
// The store keeps a goroutine and a Pub/Sub connection of client while it lives: close a store
// you stop using (see [RedisStore]). It never closes client.
func NewRedisStore(client redis.Scripter, opts ...RedisOption) RedisStore {
	c := newStoreConfig(false)
	for _, o := range opts {
		if o == nil {
			panic("ratelimit: NewRedisStore: an option is nil")
		}
		o.applyRedis(c)
	}
	if slices.Contains(c.errs.given, "WithMaxKeys") && c.res.share == 0 {
		c.errorf("WithMaxKeys(%d) bounds the keys of the Redis store's local fallback, and it has none: give WithFallback too, or bound Redis with its maxmemory", c.maxKeys)
	}
	c.done("NewRedisStore")
	if client == nil {
		panic("ratelimit: NewRedisStore(nil): give it a go-redis client")
	}
	calls := rediscall.NewCaller(client)
	log := logs{c.logger}
	deg := &degradations{observer: c.res.observer}
	var tryAgain rareLog
	calls.OnTryAgainExhausted(func(err error) {
		tryAgain.warn(log, "ratelimit: a Cluster node answered TRYAGAIN until the call's deadline (its slot moving, the call's keys split between two nodes); the call failed, of kind unavailable", err)
	})
	calls.OnMergeRefused(func(err error) {
		log.get().Warn("ratelimit: Redis refused a merged call of concurrent checks (a server in cluster mode behind one address, or an ACL that allows "+
			checkScript.Function()+" but not "+redisscripts.Merged()+"): checks go one call each from now on, which costs Redis more per check", "error", err)
		deg.set(degradedMergedChecks, true)
	})
	if c.compact {
		prefix := c.prefix
		c.stored = func(id string) string {
			var b [compactTagChars]byte
			return string(appendCompactIdentity(b[:0], prefix, id))
		}
	}
	s := &redisStore{client: client, calls: calls, prefix: c.prefix, compact: c.compact, hash: c.hash, forgets: forgetChannel(c.prefix), clock: c.clock, direct: honoursDeadlines(client),
		timeout: c.res.callTimeout, ticks: newTimeouts(c.res.callTimeout), log: log, dials: watchDials(client),
		observer: c.res.observer, degraded: deg, pingEvery: pingEvery, bg: newBackground()}
	s.desc.Store(describeRedis(client))
	calls.OnFunctionsRefused(func(err error) {
		log.get().Warn("ratelimit: Redis refused FCALL (a server before Redis 7.0, or an ACL without FCALL or FUNCTION): checks run as scripts (EVALSHA) from now on, "+
			"defining the library on every call, which costs Redis about twice the time per check", "error", err)
		scripts := *s.desc.Load() // the calls as the observer's attributes name them
		scripts.Operation, scripts.Procedure = "EVALSHA", ""
		s.desc.Store(&scripts)
		deg.set(degradedFunctions, true)
	})
	s.startEviction()
	r := resilient(s, c)
	if rs, ok := r.(*resilientStore); ok && rs.breaker != nil && s.dials != nil {
		trip, epoch := rs.breaker.trip, rs.breaker.closings.Load // a failed dial opens the breaker before its call returns
		s.dials.epoch.Store(&epoch)
		s.dials.onFail.Store(&trip)
	}
	l := leasing(r, c, s.bg, deg)
	l.closeBelow = func() {
		s.close()
		if rs, ok := r.(*resilientStore); ok {
			rs.close()
		}
		deg.close() // a closed store runs without nothing
	}
	if rs, ok := r.(*resilientStore); ok && rs.denials != nil {
		if s.listenForForgets(rs.denials, l) {
			l.heard = rs.denials.live.Load
		} else {
			s.log.get().Warn("ratelimit: no denial cache: this client cannot hear the refunds and resets of every server (a Ring, or a client without Subscribe), so every denial asks Redis; WithDenialCache(0) says you know")
			deg.set(degradedDenialCache, true)
		}
	}
	return l
}

// rareLog logs a warning of something that should be rare at most once a second, with the
// number of times it was not logged since.
type rareLog struct {
	last    atomic.Int64 // Unix second of the last line
	dropped atomic.Int64
}

// warn logs msg with err, unless a line was logged this second.
func (r *rareLog) warn(log logs, msg string, err error) {
	now, last := time.Now().Unix(), r.last.Load()
	if now == last || !r.last.CompareAndSwap(last, now) {
		r.dropped.Add(1)
		return
	}
	log.get().Warn(msg, "error", err, "not_logged_since", r.dropped.Swap(0))
}

// readsWithoutDeadline reports whether client sets no read deadline (ReadTimeout -1 or -2),
// with which go-redis takes a context's deadline for one that has passed.
func readsWithoutDeadline(client redis.Scripter) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ReadTimeout < 0
	case *redis.ClusterClient:
		return c.Options().ReadTimeout < 0
	}
	return false
}

// honoursDeadlines reports whether client gives up at its context's deadline.
func honoursDeadlines(client redis.Scripter) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Clock declares the store's clock (see [Store]): the injected one, or the system clock for
// waiting while the script reads the server's TIME.
func (s *redisStore) Clock() Clock {
	if s.clock == nil {
		return defaultClock
	}
	return s.clock
}

// run runs a script once (see package internal/rediscall) with the arguments of a [scriptCall], keeping
// ctx's deadline whether or not the client does.
func (s *redisStore) run(ctx context.Context, script *rediscall.Script, args []any) (any, error) {
	r := s.call(ctx, script, args, false)
	return r.v, r.err
}

// runInts is run for check.lua, whose reply is an array of integers: script is checkScript
// for a check, adjustScript for a refund or a renewal.
func (s *redisStore) runInts(ctx context.Context, script *rediscall.Script, args []any) ([]int64, error) {
	r := s.call(ctx, script, args, true)
	if r.err != nil && badReply(r.err) {
		r.err = fmt.Errorf("%w: %w", errBadReply, r.err)
	}
	return r.ints, r.err
}

// reply is what a call of a script returned: v, or ints for a call of runInts.
type reply struct {
	v    any
	ints []int64
	err  error
}

// call is run and runInts: it explains a timeout (see [dialWatch]), and sends a call again
// that reached no server because the client's pool answered a cached dial error, once the
// pool has dialled again with success (see redisredial.go).
func (s *redisStore) call(ctx context.Context, script *rediscall.Script, args []any, ints bool) reply {
	ctx, cancel, own := s.bound(ctx)
	defer cancel()
	mark := s.dials.mark()
	r := s.callOnce(ctx, script, args, ints)
	for range maxRedials {
		if r.err == nil || !s.dials.redial(ctx, r.err, mark) {
			break
		}
		mark = s.dials.mark()
		r = s.callOnce(ctx, script, args, ints)
	}
	if r.err != nil {
		r.err = s.dials.explain(r.err, mark)
		if own && kindOf(r.err) == kindTimeout && passed(ctx) {
			r.err = fmt.Errorf("%w (no reply within the Redis store's call timeout, %v: WithCallTimeout)", r.err, s.timeout)
		}
	}
	return r
}

// passed reports whether ctx's deadline has come: a client that gives up at the deadline
// (ContextTimeoutEnabled) may do so as its connection's deadline passes, before ctx's timer
// has ended ctx.
func passed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || ok && !time.Now().Before(d)
}

// bound returns ctx bounded by the store's call timeout, the function that releases what it
// holds, and whether the bound is the store's own: not when ctx ends first anyway. A context
// that cannot end (context.Background(), a Fiber request's) shares its bound with the calls of
// the same grain (see deadline.go): context.Background() itself costs nothing, another such
// context one object.
func (s *redisStore) bound(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	// A deadline shared per grain (a guard's, see deadline.go) is rounded up by at most
	// maxGrain: one so rounded from the bound itself is the bound.
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= s.timeout+maxGrain {
		return ctx, noCancel, false
	}
	if ctx == context.Background() {
		return s.ticks.tick().ctx, noCancel, true
	}
	if ctx.Done() == nil {
		c, cancel := s.ticks.bound(ctx)
		return c, cancel, true
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	return c, cancel, true
}

// callOnce is call, without explaining a timeout, on a ctx that call has bounded. A client that
// gives up at ctx's deadline is called directly (and so would be any client on a ctx that
// can neither end nor be canceled, which call never passes). Otherwise the call runs in a
// goroutine of its own, abandoned when ctx ends (its reply is dropped when it comes).
func (s *redisStore) callOnce(ctx context.Context, script *rediscall.Script, args []any, ints bool) reply {
	if s.direct || ctx.Done() == nil {
		return s.send(ctx, script, args, ints)
	}
	h := handoffs.Get().(*handoff)
	h.s, h.ctx, h.script, h.args, h.ints = s, ctx, script, args, ints
	go h.run()
	select {
	case <-h.done:
	case <-ctx.Done():
		if h.state.CompareAndSwap(calling, left) {
			return reply{err: ctx.Err()} // the goroutine recycles h
		}
		<-h.done // the reply came meanwhile
	}
	r := h.r
	h.recycle()
	return r
}

// handoff is a call that runs in a goroutine of its own (see callOnce), reused: a call costs
// the goroutine alone.
type handoff struct {
	s      *redisStore
	ctx    context.Context
	script *rediscall.Script
	args   []any
	ints   bool
	r      reply
	state  atomic.Int32  // calling, left or answered
	done   chan struct{} // buffered: answered
}

// A handoff's states: the goroutine answers, or the caller leaves at ctx's end, whichever
// comes first.
const (
	calling int32 = iota
	left
	answered
)

var handoffs = sync.Pool{New: func() any { return &handoff{done: make(chan struct{}, 1)} }}

// run makes the call, and hands over its reply, or recycles h when its caller left. It touches
// h no more once it has told the caller.
func (h *handoff) run() {
	h.r = h.s.send(h.ctx, h.script, h.args, h.ints)
	if h.state.CompareAndSwap(calling, answered) {
		h.done <- struct{}{}
		return
	}
	h.recycle()
}

// recycle puts h back in the pool, holding nothing of its call.
func (h *handoff) recycle() {
	*h = handoff{done: h.done}
	handoffs.Put(h)
}

// send makes the call (see package internal/rediscall).
func (s *redisStore) send(ctx context.Context, script *rediscall.Script, args []any, ints bool) reply {
	if ints {
		n, err := s.calls.RunInts(ctx, script, args)
		return reply{ints: n, err: err}
	}
	v, err := s.calls.Run(ctx, script, args)
	return reply{v: v, err: err}
}

// badReply reports an error of go-redis reading a reply of another shape than check.lua's.
func badReply(err error) bool {
	var reply redis.Error
	return !errors.As(err, &reply) && strings.HasPrefix(err.Error(), "redis: can't parse")
}

// Check implements [Store].
func (s *redisStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	mode := 0
	if charge {
		mode = 1
	}
	return s.check(ctx, key, policies, cost, mode, out)
}

// check is Check in check.lua's mode: 0 (evaluate), 1 (charge) or 4 (charge a lease's units,
// see leasecount.go).
func (s *redisStore) check(ctx context.Context, key string, policies []Policy, cost int64, mode int, out []PolicyResult) (time.Time, error) {
	args, err := s.scriptArgs(key, policies, cost, mode, 0)
	if err != nil {
		return time.Time{}, err
	}
	if mode == 4 { // a lease's: its count's keys too (see lease_keys in check.lua)
		args = s.leaseKeys(args, policies)
	}
	s.checkEviction()
	s.checkPersistence(policies)
	reply, err := s.runInts(ctx, checkScript, args)
	if err == nil {
		return decodeCheck(reply, out[:len(policies)])
	}
	return time.Time{}, fmt.Errorf("ratelimit: redis check: %w", err)
}

// maxMicros is the longest duration, in microseconds, that a time.Duration holds.
const maxMicros = math.MaxInt64 / int64(time.Microsecond)

// rowWidth is the number of integers of one policy's row in check.lua's reply.
const rowWidth = 6

// decodeCheck writes the rows of check.lua's reply to out, one per policy, and returns the
// time of the check.
func decodeCheck(reply []int64, out []PolicyResult) (time.Time, error) {
	if len(reply) != rowWidth*len(out)+1 {
		return time.Time{}, fmt.Errorf("%w: redis check: got %d integers, want %d", errBadReply, len(reply), rowWidth*len(out)+1)
	}
	for i := range out {
		row := reply[rowWidth*i : rowWidth*(i+1)]
		if row[0] != 0 && row[0] != 1 {
			return time.Time{}, fmt.Errorf("%w: redis check: bad allowed flag %d", errBadReply, row[0])
		}
		for _, us := range row[2:] { // durations in µs, which a time.Duration must hold
			if us > maxMicros || us < -maxMicros {
				return time.Time{}, fmt.Errorf("%w: redis check: a duration of %d µs", errBadReply, us)
			}
		}
		out[i].setMicros(row[0] == 1, row[1], row[2], row[3], row[4], row[5])
	}
	return time.UnixMicro(reply[len(reply)-1]), nil
}

// Refund implements [Store].
func (s *redisStore) Refund(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) error {
	args, err := s.scriptArgs(key, policies, cost, 2, at.UnixMicro())
	if err == nil {
		_, err = s.runInts(ctx, adjustScript, args)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("ratelimit: redis refund: %w", err)
	}
	return nil
}

// Renew declares that the store holds in-flight slots (see [Store]).
func (s *redisStore) Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error) {
	if err := renewable(policies); err != nil {
		return time.Time{}, err
	}
	args, err := s.scriptArgs(key, policies, cost, 3, at.UnixMicro())
	if err != nil {
		return time.Time{}, err
	}
	reply, err := s.runInts(ctx, adjustScript, args)
	if err == nil && len(reply) != 1 {
		err = fmt.Errorf("%w: got %d integers, want 1", errBadReply, len(reply))
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("ratelimit: redis renew: %w", err)
	}
	return time.UnixMicro(reply[0]), nil
}

// scriptCall holds the arguments of one call in a single allocation, for lists of up to
// inlinePolicies policies: the command's arguments, and the keys they point to.
type scriptCall struct {
	args [inlineArgs]any
	keys [inlinePolicies]string
	buf  [inlineKeyBytes]byte // the bytes of keys, as far as they fit
}

const (
	inlinePolicies = 3
	inlineKeyBytes = 256
	checkArgs      = 4 // check.lua's ARGV before the policies'
	policyArgs     = 1 // check.lua's ARGV per policy
	inlineArgs     = rediscall.Head + inlinePolicies*(1+policyArgs) + checkArgs
	// keyOverhead bounds what a storage key holds besides its prefix and its identity: the
	// braces, a colon, the tag, and a hashed identity's digest in the place of a short one.
	keyOverhead = 3 + 16 + 25
)

// newCall returns the arguments of a call of key's state under policies, with room for extra
// more; the first rediscall.Head are left for the caller (see package internal/rediscall), and each key is a
// *string.
func (s *redisStore) newCall(key string, policies []Policy, extra int) []any {
	n := len(policies)
	var (
		args []any
		keys []string
		buf  []byte
	)
	if n <= inlinePolicies && rediscall.Head+n+extra <= inlineArgs {
		c := new(scriptCall)
		args, keys, buf = c.args[:rediscall.Head+n], c.keys[:n], c.buf[:0]
	} else {
		args, keys = make([]any, rediscall.Head+n, rediscall.Head+n+extra), make([]string, n)
	}
	args[2] = n
	hashKey := ""
	for i := range policies {
		switch {
		case !s.hash || !policies[i].compiled.hashed:
			keys[i] = s.keyIn(&buf, key, &policies[i])
		case hashKey != "":
			keys[i] = hashKey // every field is in the identity's one hash
		default:
			keys[i] = s.hashKeyIn(&buf, key)
			hashKey = keys[i]
		}
		// A *string, which go-redis writes as the string, fits an interface without being
		// copied to the heap.
		args[rediscall.Head+i] = &keys[i]
	}
	return args
}

// leaseKeys adds to the keys of a call of reset.lua or of a lease's check or end, one per
// policy, the key of each one's leases' count (see reset.lua, lease_keys in check.lua): the key
// followed by ":lease", or for a field of the identity's hash, the hash.
func (s *redisStore) leaseKeys(args []any, policies []Policy) []any {
	n := len(policies)
	out := make([]any, 0, len(args)+n)
	out = append(out, args[:rediscall.Head+n]...)
	for i := range n {
		k := *args[rediscall.Head+i].(*string)
		if !s.hash || !policies[i].compiled.hashed {
			k += ":lease"
		}
		out = append(out, &k)
	}
	out[2] = 2 * n
	return append(out, args[rediscall.Head+n:]...)
}

// keyIn returns the storage key of identity under p, its bytes appended to *buf where they
// fit: the string then points into the call's own allocation, which no one writes again.
func (s *redisStore) keyIn(buf *[]byte, identity string, p *Policy) string {
	b := *buf
	if s.compact {
		if len(b)+compactKeyLen > cap(b) {
			return StorageKey(s.prefix, identity, *p, true)
		}
		start := len(b)
		b = appendCompactKey(b, s.prefix, identity, p.tag())
		*buf = b
		return unsafe.String(&b[start], len(b)-start)
	}
	if len(b)+len(s.prefix)+len(identity)+keyOverhead > cap(b) {
		return StorageKey(s.prefix, identity, *p, false)
	}
	start := len(b)
	b = appendKey(b, s.prefix, identity, p.tag())
	*buf = b
	return unsafe.String(&b[start], len(b)-start)
}

// hashKeyIn returns the key of identity's hash (WithHashState), its bytes appended to *buf
// where they fit, as keyIn does.
func (s *redisStore) hashKeyIn(buf *[]byte, identity string) string {
	b := *buf
	need := len(s.prefix) + len(identity) + keyOverhead
	if s.compact {
		need = compactKeyLen
	}
	if len(b)+need > cap(b) {
		return string(s.appendHashKey(nil, identity))
	}
	start := len(b)
	b = s.appendHashKey(b, identity)
	*buf = b
	return unsafe.String(&b[start], len(b)-start)
}

// appendHashKey appends the key of identity's hash (WithHashState) to b: the storage key of
// its policies without their tags, prefix + "{" + identity + "}", or with compact state
// "{" + 4 characters + "}" + 8, as a compact key of no policy is (see appendCompactKey; no
// policy's key is the same, since a policy's digest has one part more).
func (s *redisStore) appendHashKey(b []byte, identity string) []byte {
	if s.compact {
		b = append(b, '{')
		b = appendCompactIdentity(b, s.prefix, identity)
		b = append(b, '}')
		return appendDigest(b, compactKeyChars, s.prefix, identity)
	}
	b = append(b, s.prefix...)
	b = append(b, '{')
	b = appendStoredIdentity(b, identity)
	return append(b, '}')
}

// scriptArgs returns the arguments of a check.lua call (see newCall); mode is 0 (evaluate),
// 1 (charge), 2 (refund the charge made at at), 3 (renew it), or for a lease (see
// leasecount.go) 4 (charge its units) or 5 (refund them and end it).
func (s *redisStore) scriptArgs(key string, policies []Policy, cost int64, mode int, at int64) ([]any, error) {
	if err := compiledAll(policies); err != nil {
		return nil, err
	}
	args := s.newCall(key, policies, checkArgs+policyArgs*len(policies))
	var now any = int64(0) // the server's clock
	switch {
	case s.clock != nil && s.compact:
		t := s.clock.Now().UnixMicro()
		if t < 1000 {
			// A plain TAT below 1,000 would read as one kept in the key's expiry.
			return nil, fmt.Errorf("ratelimit: redis check: the store's clock reads %d µs after 1970 (compact state needs at least 1,000)", t)
		}
		now = "e" + strconv.FormatInt(t, 10)
	case s.clock != nil:
		now = s.clock.Now().UnixMicro()
	case s.compact:
		now = compactNow
	}
	args = append(args, now, cost, mode, at)
	for i := range policies {
		if s.hash {
			args = append(args, policies[i].compiled.hashArgs...)
		} else {
			args = append(args, policies[i].compiled.redisArgs...)
		}
	}
	if mode == 2 && s.compact {
		args = append(args, s.forgets) // compact keys hold no prefix to name the channel by
	}
	return args, nil
}

// compactNow is check.lua's ARGV[1] for a store with compact state on the server's clock, as an
// argument: a call does not copy it to the heap.
var compactNow any = "e"

// Reset implements [Store].
func (s *redisStore) Reset(ctx context.Context, key string, policies []Policy) error {
	if err := compiledAll(policies); err != nil {
		return err
	}
	args := s.leaseKeys(s.newCall(key, policies, 1+len(policies)), policies)
	args = withHoldsKey(args, 2*len(policies), s.holdsKey(key, policies, holdsTag(policies)), 1+len(policies))
	switch {
	case s.compact:
		args = append(args, s.forgets) // compact keys hold no prefix to name the channel by
	case s.hash:
		args = append(args, "") // reset.lua finds the channel by the key's prefix
	}
	if s.hash {
		for i := range policies { // the field of each policy in the identity's hash, or none
			field := ""
			if p := policies[i].compiled; p.hashed {
				field = p.tag
			}
			args = append(args, field)
		}
	}
	if _, err := s.run(ctx, resetScript, args); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("ratelimit: redis reset: %w", err)
	}
	return nil
}
