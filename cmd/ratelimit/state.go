package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// What one identity has used under one rule: inspect shows it, reset forgets it.

// defaultPrefix is the storage prefix of the core's stores when the application sets none.
const defaultPrefix = "rl:"

// stateSynopsis is the synopsis of inspect and reset.
const stateSynopsis = redisSynopsis + " [-prefix " + defaultPrefix + "] [-compact] [-hash] ([-file FILE] -rule NAME | -policy SPEC... [-keyed-by KEY]) (IDENTITY | -ip ADDR -route PATTERN ...)"

// stateFlags address one identity under one rule: the rules (in Redis, or a file), the rule,
// the store's prefix and the identity.
type stateFlags struct {
	redis   *redisFlags
	prefix  string
	compact bool
	hash    bool
	file    string
	rule    string
	parts   *partFlags
	limits  policyFlags // -policy: a middleware's limits
}

// addStateFlags defines the flags of inspect and reset on fs.
func addStateFlags(fs *flags) *stateFlags {
	s := &stateFlags{redis: addRedisFlags(fs.FlagSet)}
	fs.StringVar(&s.prefix, "prefix", defaultPrefix, "the storage `prefix` of the application's store (ratelimit.WithPrefix)")
	fs.BoolVar(&s.compact, "compact", false, "the application's store keeps compact state (ratelimit.WithCompactState), whose keys are digests: without it, the command reads other keys and finds every policy whole")
	fs.BoolVar(&s.hash, "hash", false, "the application's store keeps hash state (ratelimit.WithHashState), one hash per identity: without it, the command reads other keys and finds every policy whole")
	fs.StringVar(&s.file, "file", "", "take the rule from this rules `file`, not from the rules in Redis (-key)")
	fs.StringVar(&s.rule, "rule", "", "the `name` of the rule (or -policy)")
	fs.Var(&s.limits, "policy", "a policy of a middleware limit, `name=api,rate=100/min,algorithm=gcra` (or limit= and window=; burst= and shadow=true too; the name and algorithm as the application's Policy has them, GCRA when it names none); repeat it for each window of a list; instead of -rule")
	fs.StringVar(&s.limits.keyedBy, "keyed-by", "ip", "the `key` of the middleware limit (with -policy), as a rules file writes a key: ip, api_key, user, route, method, header:<Name>, or [ip, route]")
	s.parts = addPartFlags(fs.FlagSet)
	return s
}

// state is one identity under one rule, with a limiter of the rule's policies over the Redis
// store the application uses.
type state struct {
	rule     rules.Rule
	source   string // where the rule comes from
	identity string
	prefix   string
	compact  bool // -compact
	hash     bool // -hash
	limiter  *ratelimit.Limiter
	client   redis.UniversalClient // of -redis: inspect reads the holds keys
	at       time.Time             // when the command read the state: the calendar policies' periods hold it
	// limits is what the rule's guard does with the identity: an override's policies, or
	// none at all (the access lists), and why (rules.Set.ClientLimits).
	limits rules.ClientLimits
}

// key returns the storage key of the identity under p, as the application's store names it.
// With hash state, a policy whose state is a field of the identity's hash (all but the
// sliding log and in-flight limits, see ratelimit.WithHashState) is named as the hash's key
// and the field, the tag that ends the policy's own key; a compact hash's key, a digest, by
// its hash tag, which SCAN finds it by.
func (st *state) key(p ratelimit.Policy) string {
	own := ratelimit.StorageKey(st.prefix, st.identity, p, false)
	if st.compact {
		own = ratelimit.StorageKey(st.prefix, st.identity, p, true)
	}
	switch p.Algorithm.(type) {
	case algorithms.SlidingLog, algorithms.InFlight: // a sorted set under a key of its own
		return own
	}
	if p.Period != nil { // a calendar policy's count has a key of its own, one per period
		return own
	}
	if !st.hash {
		return own
	}
	readable := ratelimit.StorageKey(st.prefix, st.identity, p, false)
	end := strings.LastIndex(readable, "}:")
	field := readable[end+2:]
	if st.compact {
		return "the hash " + own[:6] + "… field " + field
	}
	return readable[:end+1] + " field " + field
}

// stateCmd runs the command name on one identity under one rule: it parses args, finds the rule
// and the identity, builds the limiter, reads what each policy holds for the identity now,
// and calls f with them. It returns the exit code: 2 after a usage error, 1 when anything
// fails.
func stateCmd(name, about string, args []string, stdout, stderr io.Writer, f func(ctx context.Context, st *state, now ratelimit.Decision) error) int {
	fs := newFlags(name, stateSynopsis, about+"\n"+middlewareHelp+"\n"+identityHelp, stdout, stderr)
	s := addStateFlags(fs)
	others, code, ok := fs.parse(args, "IDENTITY", 0, 1)
	if !ok {
		return code
	}
	switch err := s.redis.check(); {
	case err != nil:
		return fs.usageError("%v", err)
	case s.rule == "" && len(s.limits.policies) == 0:
		return fs.usageError("-rule is required: the name of the rule (or -policy, for a middleware's limits)")
	case s.rule != "" && len(s.limits.policies) > 0:
		return fs.usageError("give -rule or -policy, not both")
	case s.file != "" && len(s.limits.policies) > 0:
		return fs.usageError("-file goes with -rule (a rule of the file); -policy names a middleware's limits without one")
	case s.rule != "" && fs.given("keyed-by"):
		return fs.usageError("-keyed-by goes with -policy: a rule is keyed as the rules say")
	case len(s.limits.policies) > 0 && s.limitsInvalid() != nil:
		return fs.usageError("%v", s.limitsInvalid())
	case strings.ContainsAny(s.prefix, "{}"):
		return fs.usageError("-prefix %q holds '{' or '}', which no store's prefix can", s.prefix)
	case len(others) == 1 && s.parts.given():
		return fs.usageError("give the IDENTITY or the parts of the rule's key, not both")
	case len(others) == 0 && !s.parts.given():
		return fs.usageError("%v", errNoIdentity)
	case len(others) == 1 && others[0] == "":
		return fs.usageError("the IDENTITY is empty: give it as the limiter sees it (hdr:x-api-key:abc, ip:192.0.2.1), or the parts of the rule's key")
	}
	client, ctx, cancel := s.redis.client()
	defer cancel()
	defer client.Close()

	set, source, err := s.rules(ctx, client)
	if err != nil {
		return fs.fail(s.redis.failed(err))
	}
	st := &state{source: source, prefix: s.prefix, compact: s.compact, hash: s.hash, client: client}
	if st.rule, err = find(set, s.rule); err != nil {
		return fs.fail(err)
	}
	if len(others) == 1 {
		st.identity = others[0]
	} else if st.identity, err = s.parts.identity(&st.rule); err != nil {
		return fs.usageError("%v", err)
	}
	// The store logs nothing: the command reports the error its call ends with, once (its
	// check of maxmemory-policy is the application's concern). No circuit breaker: a command
	// makes a call or two, and each must report what Redis said; the store's eviction check,
	// dialling first, could otherwise open it, and a refused connection would read "circuit
	// breaker open". Its calls have -timeout, the command's own bound, not the store's 1 s.
	opts := []ratelimit.RedisOption{ratelimit.WithPrefix(s.prefix), ratelimit.WithLogger(slog.New(slog.DiscardHandler)),
		ratelimit.WithBreaker(0, 0), ratelimit.WithCallTimeout(s.redis.timeout)}
	if s.compact {
		opts = append(opts, ratelimit.WithCompactState())
	}
	if s.hash {
		opts = append(opts, ratelimit.WithHashState())
	}
	store := ratelimit.NewRedisStore(client, opts...)
	st.limits = set.ClientLimits(&st.rule, st.identity)
	policies := st.limits.Policies
	if len(policies) == 0 { // denied or unlimited: the rule's own policies hold what it used
		policies = st.rule.Policies
	}
	if st.limiter, err = ratelimit.New(store, policies...); err != nil {
		return fs.fail(err)
	}
	// A check of cost 0 charges nothing: it reads the state as it is (Peek reports the state
	// after the request it asks about). The limiter puts each calendar policy in the period
	// of the check, on this host's clock, as the application's limiter does on its own: the
	// results hold the policy in that period, whose storage key names it.
	st.at = time.Now()
	now, err := st.limiter.AllowN(ctx, st.identity, 0)
	if err == nil {
		err = f(ctx, st, now)
	}
	if err != nil {
		return fs.fail(s.redis.failed(err))
	}
	return 0
}

// holdsNothing reports whether d, a check of cost 0, found every policy whole.
func holdsNothing(d ratelimit.Decision) bool {
	for _, r := range d.Results() {
		if r.Remaining < capacity(r.Policy) {
			return false
		}
	}
	return true
}

// warnIfNothing says on stderr, for the command name, that d (a check of cost 0) found every
// policy of st whole, and so what it did: the state of an identity the application refuses is
// then elsewhere (another prefix, compact keys, hash state, another identity), which inspect
// and reset alike read as a full quota.
func (st *state) warnIfNothing(stderr io.Writer, name string, d ratelimit.Decision, so string) {
	if holdsNothing(d) {
		fmt.Fprintf(stderr, "ratelimit %s: %s has used nothing under these policies at these keys, %s; "+
			"if the application refuses it, its state is elsewhere: check -prefix, -compact, -hash and the identity (inspect and reset read the same keys)\n",
			name, st.identity, so)
	}
}

// rules returns the rules of -file, or else those stored in Redis, and says where they are.
func (s *stateFlags) rules(ctx context.Context, client redis.UniversalClient) (*rules.Set, string, error) {
	if len(s.limits.policies) > 0 {
		s.rule = middlewareRule
		set, err := s.limits.set()
		return set, "the command line's -policy", err
	}
	if s.file != "" {
		_, set, err := readRules(s.file)
		if err != nil {
			return nil, "", err
		}
		return set, fmt.Sprintf("file %s, version %s", s.file, set.Version()), nil
	}
	stored, err := rules.Fetch(ctx, client, s.redis.key, parseOptions...)
	if err != nil {
		return nil, "", noRules(err, s.redis.key)
	}
	return stored.Set, fmt.Sprintf("Redis key %s, version %s", s.redis.key, stored.Version), nil
}

// limitsInvalid reports -policy or -keyed-by flags that make no rule.
func (s *stateFlags) limitsInvalid() error {
	_, err := s.limits.set()
	return err
}

// find returns the rule of set named name.
func find(set *rules.Set, name string) (rules.Rule, error) {
	all := set.Rules()
	names := make([]string, len(all))
	for i, r := range all {
		if r.Name == name {
			return r, nil
		}
		names[i] = r.Name
	}
	return rules.Rule{}, fmt.Errorf("no rule %q in version %s; its rules are %s", name, set.Version(), strings.Join(names, ", "))
}

// header writes what st is about.
func (st *state) header(w io.Writer) {
	fmt.Fprintf(w, "rule      %s (%s)\n", st.rule.Name, st.source)
	fmt.Fprintf(w, "key       %s\n", strings.Join(st.rule.Key, " "))
	fmt.Fprintf(w, "identity  %s\n", st.identity)
	switch l := st.limits; {
	case l.Denied:
		fmt.Fprintf(w, "limits    denied, without a store call: %s\n", l.Why)
	case l.Unlimited:
		fmt.Fprintf(w, "limits    unlimited, without a store call: %s\n", l.Why)
	case l.Why != "": // an override
		fmt.Fprintf(w, "limits    %s\n", l.Why)
	}
}

// inspectCmd shows what an identity has left under a rule's policies.
func inspectCmd(args []string, stdout, stderr io.Writer) int {
	return stateCmd("inspect", `Shows what IDENTITY has left under each policy of the rule -rule, or of the -policy flags,
as the application's limiter sees it: the policies (of the rules in Redis, of -file, or of
-policy) over the Redis store with the application's -prefix. For each policy: its limit,
what remains now, when it is whole again, and whether a next request of cost 1 would be
allowed (Limiter.Peek), with its storage key; for a rule whose requests cost more, whether
one of that cost would be allowed now (for a rule with settle, one that holds its estimate).
A client the access lists deny, or let through unlimited, is decided without a store call,
and its verdicts say so.
Then, if the identity has reservations outstanding (Limiter.Reserve), how many each policy
list holds and their estimates' total. Nothing is charged. For an identity that has used
nothing at those keys it says so on standard error, as reset does (its state, if the
application refuses it, is elsewhere).
`, args, stdout, stderr, func(ctx context.Context, st *state, now ratelimit.Decision) error {
		next, err := st.limiter.Peek(ctx, st.identity)
		if err != nil {
			return err
		}
		if !st.limits.Denied && !st.limits.Unlimited { // the guard asks the store nothing for it
			st.warnIfNothing(stderr, "inspect", now, "so every policy shows whole")
		}
		st.header(stdout)
		cost, what := st.rule.Cost, "cost"
		if st.rule.Settle != "" {
			cost, what = held(st.rule.Estimate, now, st.at), "estimate"
			fmt.Fprintf(stdout, "cost      what each request cost, charged once its response is sent (settle: %s); it holds %d while it runs (estimate: %d)\n",
				st.rule.Settle, cost, st.rule.Estimate)
		} else {
			fmt.Fprintf(stdout, "cost      %d a request\n", cost)
		}
		listed := st.listVerdict()
		switch {
		case listed != "":
			fmt.Fprintf(stdout, "next      %s, without a store call\n", listed)
		default:
			fmt.Fprintf(stdout, "next      %s (a request of cost 1)\n", verdict(next.Allowed, next.RetryAfter))
			if cost > 1 {
				fmt.Fprintf(stdout, "          %s\n", costVerdict(now, cost, what))
			}
		}
		fmt.Fprintln(stdout)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POLICY\tALGORITHM\tLIMIT\tREMAINING\tWHOLE IN\tNEXT\tSTORAGE KEY")
		for i, r := range now.Results() {
			n := next.Results()[i]
			verdict := verdict(n.Allowed, n.RetryAfter)
			if r.Policy.Shadow {
				verdict += " (shadow)"
			}
			if listed != "" {
				verdict = listed
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Policy.Name, r.Policy.Algorithm.Name(), limit(r.Policy),
				r.Remaining, span(r.ResetAfter), verdict, st.key(r.Policy))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if err := st.periods(stdout, now); err != nil {
			return err
		}
		held, err := st.holds(ctx, st.client, now)
		if err != nil {
			return err
		}
		return writeHolds(stdout, held)
	})
}

// resetCmd forgets what an identity has used under a rule's policies.
func resetCmd(args []string, stdout, stderr io.Writer) int {
	return stateCmd("reset", `Forgets what IDENTITY has used under each policy of the rule -rule, or of the -policy
flags (Limiter.Reset): its next request finds every policy whole, less what the
application's quota leases of it hold (Policy.Lease: those units stay counted until each
lease ends, so what a lease hands out after the reset is counted too). It prints, for each
policy, what remained before and the storage key it deleted; for an identity that has used
nothing at those keys it says so on standard error (its state, if the application refuses
it, is elsewhere). The rule comes from the rules in Redis, or -file; the store is Redis with
the application's -prefix.
`, args, stdout, stderr, func(ctx context.Context, st *state, before ratelimit.Decision) error {
		st.warnIfNothing(stderr, "reset", before, "so nothing was reset")
		if err := st.limiter.Reset(ctx, st.identity); err != nil {
			return err
		}
		st.header(stdout)
		fmt.Fprintln(stdout)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RESET POLICY\tREMAINING BEFORE\tSTORAGE KEY")
		for _, r := range before.Results() {
			fmt.Fprintf(tw, "%s\t%d of %d\t%s\n", r.Policy.Name, r.Remaining, capacity(r.Policy), st.key(r.Policy))
		}
		return tw.Flush()
	})
}

// periods writes, for the calendar policies of d (a check of cost 0), the period they count
// in now: its text, its start and end in its zone, and what the identity used of the limit.
func (st *state) periods(w io.Writer, d ratelimit.Decision) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	found := false
	for _, r := range d.Results() {
		p := r.Policy.Period
		if p == nil {
			continue
		}
		if !found {
			fmt.Fprintln(tw, "\nCALENDAR POLICY\tPERIOD\tSTART\tEND\tUSED")
			found = true
		}
		at := st.at
		if !strings.HasSuffix(ratelimit.StorageKey("", "-", r.Policy, false), "_"+p.Tag(at)) {
			at = time.Now() // the check ran in the next period, which began after st.at
		}
		start, end := p.Bounds(at)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d of %d\n", r.Policy.Name, p, start.Format(time.RFC3339), end.Format(time.RFC3339),
			max(0, r.Policy.Limit-r.Remaining), r.Policy.Limit)
	}
	return tw.Flush()
}

// limit describes a policy's limit.
func limit(p ratelimit.Policy) string {
	if p.Period != nil {
		return fmt.Sprintf("%d per %s", p.Limit, p.Period)
	}
	if _, ok := p.Algorithm.(algorithms.InFlight); ok {
		return fmt.Sprintf("%d at once, lease %s", p.Limit, window(p.Window))
	}
	s := fmt.Sprintf("%d per %s", p.Limit, window(p.Window))
	if p.Burst != 0 && p.Burst != p.Limit {
		s += fmt.Sprintf(", burst %d", p.Burst)
	}
	return s
}

// The core's bounds of a hold (holds.go, holdBounds), which held mirrors: a hold lives at
// most holdLife, and holds at least a holdShare-th of what the tightest enforced policy
// admits meanwhile. TestHeldAgreesWithReserve holds held to Reserve.
const (
	holdLife  = 5 * time.Minute
	holdShare = 1024
)

// held is what a request of a rule with settle holds while it runs, as Reserve holds it: its
// estimate, raised to at least a holdShare-th of what the enforced policies of now (a check of
// cost 0, at at) admit over a hold's life, and at most half the least capacity of one (at
// least 1). A hold lives holdLife, or to the end of the shortest window or calendar period.
// Where the least would exceed the most (a bucket of small burst that refills many times over
// meanwhile), the core shortens the hold's life and holds the most, as the clamp here does.
func held(estimate int64, now ratelimit.Decision, at time.Time) int64 {
	life, most, enforced := holdLife, int64(0), false
	for _, r := range now.Results() {
		p := r.Policy
		if p.Shadow {
			continue
		}
		w := p.Window
		if p.Period != nil {
			_, end := p.Period.Bounds(at)
			w = end.Sub(at)
		}
		life = min(life, w)
		if !enforced || capacity(p)/2 < most {
			most = capacity(p) / 2
		}
		enforced = true
	}
	if !enforced {
		return 1 // shadow policies alone: nothing is enforced
	}
	life, most = max(life, time.Millisecond), max(most, 1)
	span := math.Inf(1) // what the enforced policies admit over life, at most
	for _, r := range now.Results() {
		if !r.Policy.Shadow {
			span = min(span, admitsOver(r.Policy, life))
		}
	}
	least := max(int64(math.Ceil(span/holdShare)), 1)
	return min(max(estimate, least), most)
}

// admitsOver returns how much p admits over d, as the core counts it for a hold's least: its
// capacity, or for a bucket (token, leaky, GCRA), which refills at its rate meanwhile, that
// refill if it is more.
func admitsOver(p ratelimit.Policy, d time.Duration) float64 {
	s := float64(capacity(p))
	switch p.Algorithm.(type) {
	case algorithms.TokenBucket, algorithms.LeakyBucket, algorithms.GCRA, nil:
		s = max(s, float64(p.Limit)*float64(d.Microseconds())/float64(p.Window.Microseconds()))
	}
	return s
}

// capacity is what a policy admits at once when whole: its burst, else its limit.
func capacity(p ratelimit.Policy) int64 {
	if p.Burst != 0 {
		return p.Burst
	}
	return p.Limit
}

// window writes a duration without its zero units: 1h, 1m, 1h30m, 1.5s.
func window(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// span writes a time to come, to the millisecond.
func span(d time.Duration) string {
	switch {
	case d == algorithms.Never:
		return "never"
	case d <= 0:
		return "now"
	}
	return window(d.Round(time.Millisecond))
}

// costVerdict says whether a request of the rule's cost would be allowed now, from what each
// policy has left (now, a check of cost 0): a policy admits a request of cost c when it has c
// left. When one would not, it names the one with least left (how long until it has enough
// is not known from what it has left).
//
// what is what cost is of the rule's: its "cost", or the "estimate" a request holds.
func costVerdict(now ratelimit.Decision, cost int64, what string) string {
	var least *ratelimit.PolicyResult
	for _, r := range now.Results() {
		if !r.Policy.Shadow && r.Remaining < cost && (least == nil || r.Remaining < least.Remaining) {
			least = &r
		}
	}
	what = fmt.Sprintf("a request of the rule's %s, %d", what, cost)
	switch {
	case least == nil:
		return "allowed (" + what + ")"
	case cost > capacity(least.Policy):
		return fmt.Sprintf("denied for ever (%s: above %s's capacity, %d)", what, least.Policy.Name, capacity(least.Policy))
	}
	return fmt.Sprintf("denied now (%s: %s has %d left)", what, least.Policy.Name, least.Remaining)
}

// listVerdict is the verdict on a client the rules decide without a store call (st.limits):
// denied by the access lists, or unlimited by them or by an override; "" for a client the
// store decides, whose verdicts are Peek's.
func (st *state) listVerdict() string {
	switch l := st.limits; {
	case l.Denied:
		return "denied by the access lists"
	case l.Unlimited && strings.HasPrefix(l.Why, "overrides"):
		return "unlimited by the overrides"
	case l.Unlimited:
		return "unlimited by the access lists"
	}
	return ""
}

// verdict describes whether a request is allowed, and when it would be.
func verdict(allowed bool, retryAfter time.Duration) string {
	switch {
	case allowed:
		return "allowed"
	case retryAfter == algorithms.Never:
		return "denied for ever (the cost is above the capacity)"
	}
	return "denied, retry in " + span(retryAfter)
}
