// Package rules reads rate limits from a rules document, a file in YAML or JSON, instead of Go
// code. [Parse] reads and validates the whole document into a [Set]; [Set.Match] picks the
// [Rule] of a request, whose Policies, [Rule.KeyFunc], Cost (or Estimate and
// [Rule.SettleFunc]) and FailClosed configure a ratelimit limiter and guard.
//
// It is a module of its own, so that only its users download its YAML parser
// (go.yaml.in/yaml/v3, the maintained successor of gopkg.in/yaml.v3); JSON is read with the
// standard library.
//
// # The document
//
//	version: "2026-11-23.1"          # optional for a file, required to push: see Versions
//	allow_empty: false               # optional: true lets rules be an empty list, which limits nothing
//	rules:                           # required: a list of rules, empty only with allow_empty: true
//	  - name: search-free            # required, unique: a lower-case token like a policy's name
//	    match:                       # optional; absent: every request
//	      pattern: "GET /search/{q}" # a net/http ServeMux pattern: [METHOD ][HOST]/PATH
//	    key: [api_key]               # required: one part, or a list of parts joined
//	    tier: free                   # optional: only for requests of this tier
//	    cost: 1                      # optional: what each request costs, 0 or more (default 1)
//	    estimate: 500                # with settle, in place of cost: what each request holds while it runs, 0 or more
//	    settle: reported             # with estimate: what a request is charged once its response is sent:
//	                                 # reported (cost.Reported: what the handler reported with cost.Report,
//	                                 # the estimate if nothing) or written (cost.Written: the body's bytes)
//	    fail: open                   # optional: open (default) or closed
//	    policies:                    # required: 1 to 32
//	      - name: per-second         # optional: ratelimit.New names it from its parameters
//	        algorithm: gcra          # optional (default gcra; fixed_window for a period), see below
//	        limit: 10                # required, unless rate says it
//	        window: 1s               # required, unless rate says it: a duration, such as 1s, 1m30s, 1d (whole days may lead: 1d12h)
//	      - rate: 100/min            # the limit and the window in one: 10/s, 5000/h, 20/10s, 1000/day
//	        burst: 20                # optional: 0 or absent means limit
//	        shadow: false            # optional: evaluate and report, never enforce
//	      - rate: 1000/day@America/New_York # a calendar quota: per day, week, month or year in a zone
//	      - limit: 50000             # the long form of a calendar quota: limit and period
//	        period: month@UTC~2026-01-31 # as calendar.ParsePeriod reads it; not beside window
//	access:                          # optional: clients never limited, or refused outright
//	  allow: [10.0.0.0/8, "2001:db8:aa::/48"] # networks (CIDR or address): never limited, no store call
//	  deny: [203.0.113.0/24]         # networks refused on every route, no store call
//	  deny_clients: [{api_key: k1}]  # clients refused by the rules keyed by that part alone
//	  deny_status: 403               # optional: the refusal's status (default 403)
//	  deny_body: "..."               # optional: its text
//	overrides:                       # optional: other limits for one client
//	  - client: {api_key: acme}      # a key part (api_key, user, header:<Name>) and its value
//	    rule: search-free            # optional: on this rule only; absent: every rule keyed by that part alone
//	    policies: [{rate: 600/min}]  # its policies, or
//	    unlimited: true              # never limited
//
// A rule with estimate and settle is for requests whose cost is known only once they ran (the
// tokens of a completion, the bytes of a download; see the core's docs/costs.md): its guard
// admits each request against the estimate (ratelimit.WithCost) and holds it while the request
// runs, then charges what settle says in its place (ratelimit.ChargeAfter with
// [Rule.SettleFunc]): less gives the difference back, more is an overdraft that the next
// requests wait for. The handler reports with cost.Report(r.Context(), n). Such a rule's
// policies, and those of the overrides that apply to it, must be able to hold an estimate: an
// in_flight or a leaky_bucket_shaping policy cannot, which Parse refuses with the core's
// message at the rule's settle. Shadow policies are held and settled like the others.
//
// The access lists and the overrides are ratelimit.WithAccess and the policies of each client
// on the guard of every rule. The networks are matched against the client IP the guard
// derives (through the trusted proxies of WithGuardOptions' TrustProxies), so a request that
// no rule matches is refused when its network is denied, too. Deny wins: a client denied is
// refused whatever allows it. Of the overrides of a client, the one naming the rule wins over
// the one for every rule; their order in the file does not matter. An override keeps the
// counts of its client when its policies have the rule's names, algorithms and windows, as a
// changed limit does. Parse refuses a network that is not one, a network, override or denied
// client given twice, an override or a denied client that applies to no rule, a client value
// the rule's key function refuses (a header's with a comma), and an override whose policies
// can never admit the rule's cost: what an engine would refuse, so that validate and push
// refuse it too. [Set.Warnings] names what is valid but does nothing (an entry inside a wider
// one, an allowed network inside a denied one).
//
// An engine that OpenRedis starts on a document it cannot apply (a rule with a tier, and no
// WithTier) starts on its last known good or default rules instead, as when Redis holds none.
//
// A calendar quota (a period: "@" and a zone after the unit) counts from each period's start
// to its end, by the calendar (a day of 23 or 25 hours where the clock changes, a month of 28
// to 31 days): its algorithm is fixed_window, the default for it, and no other is accepted;
// burst is refused. "1000/day" without a zone is a window of 24 hours. See ratelimit.ParsePolicy
// and package calendar for what a period may say (week(monday), 2weeks, a billing cycle's
// ~anchor).
//
// The same document in JSON has the same fields: {"rules": [{"name": "search-free", ...}]}.
//
// The algorithms are named as the core names them (algorithms.Algorithm's Name):
// fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket,
// leaky_bucket_shaping (algorithms.LeakyBucket{Shaping: true}), gcra, and in_flight (the
// in-flight limit, algorithms.InFlight: limit is the cap on requests at once, window the
// lease). The list is read from the core, so an algorithm added there is known here.
//
// A key is made of one to eight parts, each one of the core's key functions; several parts
// are joined with ratelimit.KeyJoin, in the order written, and one part is the function itself:
//
//	ip             ratelimit.KeyByIP(): the client's address, behind the guard's trusted proxies
//	route          ratelimit.KeyByRoute(): the route pattern of the application's router
//	method         ratelimit.KeyByMethod()
//	api_key        ratelimit.KeyByHeader("X-API-Key")
//	header:X-Name  ratelimit.KeyByHeader("X-Name")
//	user           ratelimit.KeyByUser(key), with the key given to Parse by [WithUserKey]; a
//	               file cannot name a Go value, so without that option "user" is an error
//
// # Validation
//
// Parse reports every problem of a file at once, as [Errors], each with the file's name, its
// line and the path of the field:
//
//	limits.yaml:12: rules[1].policies[0].window: "1x" is not a duration (e.g. 1s, 1m30s, 1d)
//
// It refuses syntax errors, unknown fields at any level, fields given twice, missing required
// fields, values of the wrong type, values out of their range, and integers written with a
// leading zero, such as 010, which YAML's parser reads as octal (8). Each policy is validated by
// ratelimit.New itself, and the policies of a rule together, so a limit the core refuses is
// refused here with the core's own message, at the field it names; so is a cost above what an
// enforced policy can ever admit. Estimate and settle go together, and not beside cost; settle
// is reported or written, an estimate 0 or more. Rules must have names apart, the policies of a rule too (the
// names New makes up included), and no two rules may share a pattern and a tier. Patterns are
// registered on an http.ServeMux, which refuses what is not a pattern and two patterns of which
// neither is more specific (such as "/a/{x}" and "/{y}/b"). A pattern that matches no
// request a client sends, whose rule would silently limit nothing, is refused too: a standard
// method not in upper case ("post /login": methods are case-sensitive), a host with a port
// ("example.com:8443/x": hosts are matched without their port), a path with an empty, "."
// or ".." segment ("/a/../b": paths are matched cleaned), a host in Unicode ("bücher.example/":
// clients send its ASCII form, xn--…), a '?' or '#' in the path ("/x?y=1": a pattern matches
// the path, never the query); and so is a host with capitals
// ("API.example.com/"), which ServeMux compares as the request spells it, while clients send
// hosts in lower case (browsers always do): write it in lower case. A host with a trailing
// dot ("example.com./") is another host, which clients send when the dot is written: it
// matches those requests only, not those of example.com.
//
// Policies of different rules that share a name, an algorithm and a window share their quota
// for one key, whatever their limits, as with ratelimit.WithPolicies: name them apart, or key
// them apart, to keep them separate. So a rule whose limit changes keeps its count, as the
// core documents for each algorithm, when its policy is named: the name New makes up for a
// policy without one, such as gcra-100-per-1m, holds the limit, so such a policy starts from
// nothing when its limit changes ([Diff] shows it removed and another added).
//
// # Versions
//
// A document's version is its version field: any text of at most 128 bytes, such as
// 2026-11-23.1, 7 or v12. A document without one has for its version a hash of its rules
// ([Set.Versioned] is false), which tells two documents apart and is enough for a file that
// [Open] and [Engine.WatchFile] read; but a hash has no order, so [Push] refuses a document
// without a version ([ErrNoVersion]), forced or not, and [Fetch] and the Redis watcher refuse
// one stored without a version by other means. Pushed versions are ordered by
// [CompareVersions]: segments between dots, left to right, and in each its runs of digits by
// their numbers, its other runs byte by byte, so 10 follows 9, v10 follows v9 and 2026-11-10
// follows 2026-11-9. A push of a version that is not newer than the stored one is refused
// ([ErrNotNewer]) unless forced (a rollback, [PushOptions].Force).
//
// # No rules
//
// A document whose rules are an empty list stops limiting every request of every instance
// that applies it. Parse refuses it ([ErrEmptyRules], so do Open, Push, validate and both
// watchers) unless it says so with allow_empty: true; and allow_empty: true beside rules is
// refused too, so that it is not left in a file to let a later accident through. Such a
// document, applied, is logged at warning level, and an instance that runs it records so
// in the fleet ([Instance].Empty, shown by ratelimit status).
//
// # Bounds
//
// A file may hold at most [MaxFileSize] bytes (1 MiB) and [MaxRules] rules (10,000), each with
// at most 32 policies and 8 key parts; a version or a tier is at most 128 bytes; a JSON document
// nests at most 64 levels. Parse reports the first 100 problems and how many more there are.
//
// # Matching
//
// [Set.Match] finds the pattern of a request as http.ServeMux does: the most specific pattern
// that matches the method, host and path. Among the rules of that pattern it picks the one of
// the request's tier, else the one without a tier. When there is neither, the rules without a
// pattern apply, in the same way, and not the rules of a less specific pattern: ServeMux names
// one pattern. Give a pattern a rule without a tier when every tier should be limited there.
//
// An [Engine] learns the tier of a request from [WithTier]. Without it no request has a tier,
// so it refuses a document in which a rule has one, as it refuses an invalid document: such a
// rule would never apply. With it, a request of a tier that no rule has gets the rules
// without a tier, and the tier is logged as a warning, once per version applied.
//
// # Applying rules
//
// An [Engine] applies a Set to requests, and replaces it while they run: [Open] reads a file,
// [OpenRedis] the fleet's rules, [NewEngine] takes a Set; [Engine.WatchFile] and
// [Engine.WatchRedis] keep it current. Its [Engine.Guard] is a ratelimit guard for net/http
// (ratelimit.FromGuard) and every adapter (FromGuard):
//
//	e, err := rules.Open(store, "limits.yaml", rules.WithTier(planOf))
//	if err != nil {
//		return nil, err // every error of the file, each with its line and field
//	}
//	go e.WatchFile(ctx, "limits.yaml")
//	handler := ratelimit.FromGuard(e.Guard())(mux)
//
// Each rule becomes a guard with the rule's key, cost (or estimate and settle: WithCost and
// ChargeAfter), fail mode (503 when closed) and
// policies, the options of [WithGuardOptions], which may not set them (WithKey, WithCost,
// WithPolicies, WithResponse, and WithResolver, are refused), and the Response of
// [WithResponse] with the rule's fail mode as its FailClosed. A request is matched once against
// one version, so a swap is atomic; a request no rule matches is not limited. A new document
// that does not parse, or whose rules cannot make a guard, never replaces the rules in use: it
// is logged ([WithLogger]) and told to the [Reporter] ([WithReporter]), as is every version
// applied.
//
// # Rules in Redis
//
// The rules of a whole fleet live in Redis under one key, [DefaultRedisKey] ("rl:rules")
// unless a deployment picks another: a hash that [Push] replaces and [Fetch] reads, with the
// fields
//
//	version    the document's version (Set.Version)
//	name       the file name it was pushed under, which picks its format and names its errors
//	document   the document, byte for byte
//	pushed_at  when it was pushed: Unix milliseconds of the Redis server's TIME
//	forced     "1" when the push was forced past the version check, else "0"
//	previous   the version this push replaced, "" for the first
//
// Push validates the document first and writes nothing when it is invalid; then one script
// call replaces the hash whole and publishes the new version on the channel named as the key.
// [StoredVersion] reads the version alone, to poll cheaply. One key lives in one slot, so it
// all works on a Redis Cluster too, where a PUBLISH reaches the subscribers of every node.
// The ratelimit command (module github.com/a7d3e0dd/ratelimit/cmd/ratelimit) pushes, shows
// and validates rules from the shell.
package rules
