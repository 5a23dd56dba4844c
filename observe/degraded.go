package observe

// degradations are the features of Degradations, in its order.
var degradations = [...]string{"merged_checks", "compact_expiry", "denial_cache", "functions", "quota_leases"}

// Degradations returns the features an Observer is told a store runs without
// (ratelimit.Observer.StoreDegraded), each falling back to a way that decides the same and costs
// Redis more:
//
//   - "merged_checks": the server refused a merged call of concurrent checks (a server in
//     cluster mode behind one address, or an ACL that allows the check function but not the
//     merged one), so checks go one call each, which costs Redis more CPU per check;
//   - "compact_expiry": a store with compact state writes to a server before Redis 7.0, which
//     has no PEXPIRETIME, so TATs stay in values (16 B more per identity);
//   - "denial_cache": the store's client cannot hear the refunds and resets of every server (a
//     Ring, or a client without Subscribe), so the store caches no denial and every request of
//     a denied identity is a Redis call;
//   - "functions": the server refused FCALL (a server before Redis 7.0, or an ACL without
//     FCALL or FUNCTION), so checks run as scripts (EVALSHA), which define the library on every
//     call: about twice the Redis time per check, and no merged checks;
//   - "quota_leases": the quota leases (Policy.Lease) track as many identities as they may
//     (4,096 seen within their lease's time), so new ones go to Redis, a call per request,
//     until some are idle; it ends (degraded false) when none has been turned away for a
//     minute.
//
// A metrics module creates its series from them.
func Degradations() []string { return append([]string(nil), degradations[:]...) }
