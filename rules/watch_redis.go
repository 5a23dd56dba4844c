package rules

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Intervals of the Redis watcher.
const (
	defaultRedisPoll = 30 * time.Second
	redisCallTimeout = 5 * time.Second        // of each read of the rules
	retryFirst       = 100 * time.Millisecond // after the subscription fails, then doubling
	retryMax         = 5 * time.Second
)

// WatchRedis keeps the rules in use those stored in Redis at key by [Push] (usually
// [DefaultRedisKey]): the fleet's rules, the same on every instance. It returns nil when ctx
// ends. Run it in a goroutine of its own:
//
//	go e.WatchRedis(ctx, client, rules.DefaultRedisKey)
//
// It subscribes to the channel key, on which Push announces each version, and applies a new
// version as soon as it is announced: within a round trip or two of the push. Each time the
// subscription starts — the first time, and after any disconnection — it reads the stored
// version, so an instance that was cut off while the rules changed catches up as soon as it
// is back. It also reads the version every poll interval ([WithPollInterval], default 30 s),
// in case an announcement is lost. Rules in use that did not come from the stored document —
// the default or last known good rules [OpenRedis] started on — are replaced by it even when
// they bear its version. A document that does not parse here (say, one keyed by "user"
// without [WithUserKey], or one without rules that does not say allow_empty: true), or was
// stored without a version by other means than Push ([ErrNoVersion]), is logged and reported
// once, and the last good rules stay. A document without rules that says allow_empty: true
// is applied, logged at warning level, and recorded in the fleet ([Instance].Empty).
func (e *Engine) WatchRedis(ctx context.Context, client redis.UniversalClient, key string) error {
	if err := checkRedisArgs("WatchRedis", client, key); err != nil {
		return err
	}
	w := &redisWatch{e: e, client: client, key: key, source: "redis " + key, name: e.opts.instance, heartbeat: e.opts.heartbeat}
	if w.name == "" {
		w.name = defaultInstanceName()
	}
	if w.heartbeat <= 0 {
		w.heartbeat = DefaultHeartbeat
	}
	ps := client.Subscribe(ctx, key)
	defer ps.Close()
	// A Receive waiting for a message does not see ctx end (go-redis reads until a deadline,
	// and ctx has none): closing the subscription ends it.
	defer context.AfterFunc(ctx, func() { ps.Close() })()

	poll := e.opts.poll
	if poll <= 0 {
		poll = defaultRedisPoll
	}
	go w.poll(ctx, poll)
	go w.beat(ctx)

	retry := retryFirst
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			w.lost(err)
			select { // go-redis dials and subscribes again at the next Receive
			case <-ctx.Done():
				return nil
			case <-time.After(retry):
			}
			retry = min(2*retry, retryMax)
			continue
		}
		retry = retryFirst
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" { // subscribed, maybe again: catch up, and say so
				w.sync(ctx, "")
				w.mu.Lock()
				w.report(ctx) // in the fleet now, not a heartbeat later
				w.mu.Unlock()
				if e.opts.started != nil {
					e.opts.started()
				}
			}
		case *redis.Message:
			w.sync(ctx, m.Payload)
		}
	}
}

// redisWatch is the state of one WatchRedis.
type redisWatch struct {
	e      *Engine
	client redis.UniversalClient
	key    string
	source string

	mu       sync.Mutex // serializes sync
	rejected string     // the version last refused, so that it is reported once
	reason   string     // why
	// failing is what went wrong reading Redis last time ("" when it worked): each kind of
	// failure is reported once until reading works again, or another kind comes.
	failing failure
	// current is the version of the rules in use when they are known to be the stored
	// document of that version, read by this watcher: rules of the same version from elsewhere
	// (the default rules, a last known good file of an earlier Redis) may say otherwise.
	current string

	name      string        // the instance's, in the fleet hash
	heartbeat time.Duration // how often it records its state
	recordErr string        // why recording failed last time, "" when it worked (see report)
}

// beat records the instance's state every heartbeat until ctx ends.
func (w *redisWatch) beat(ctx context.Context) {
	t := time.NewTicker(w.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.mu.Lock()
			w.report(ctx)
			w.mu.Unlock()
		}
	}
}

// report records the instance's state in the fleet hash: what it runs, what it refused. A
// failure that reading the rules does not show (the fleet hash of another type, an ACL that
// refuses it) is logged when it begins, and when recording works again: the instance is
// missing from the fleet meanwhile, and a push waits for it in vain. The caller holds w.mu.
func (w *redisWatch) report(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, redisCallTimeout)
	defer cancel()
	set := w.e.Set()
	in := Instance{Name: w.name, Running: set.Version(), Stored: set.Version() == w.current, Digest: set.digest, Empty: len(set.rules) == 0}
	if w.rejected != "" {
		in.Refused, in.Reason = w.rejected, clipReason(w.reason)
	}
	err := record(ctx, w.client, w.key, in, w.heartbeat)
	switch {
	case err != nil && w.recordErr == "" && ctx.Err() == nil:
		w.recordErr = err.Error()
		w.e.opts.logger.Warn("ratelimit rules: this instance cannot record itself in the fleet: `ratelimit status` and push do not see it",
			"instance", w.name, "fleet", FleetKey(w.key), "error", err)
	case err == nil && w.recordErr != "":
		w.recordErr = ""
		w.e.opts.logger.Info("ratelimit rules: this instance records itself in the fleet again", "instance", w.name)
	}
}

// clipReason bounds what an instance records of an error.
func clipReason(s string) string {
	if len(s) > 1000 {
		return s[:1000] + "..."
	}
	return s
}

// poll syncs every interval until ctx ends.
func (w *redisWatch) poll(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.sync(ctx, "")
		}
	}
}

// sync applies the stored rules when they are not the ones in use: when their version is not
// the one in use, or is and the rules in use were not read from the stored document (the
// engine started on its default rules, say, which bear the version of the fleet's first
// push). announced is the version a message announced ("" when unknown): the stored one is
// read when it differs.
func (w *redisWatch) sync(ctx context.Context, announced string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, redisCallTimeout)
	defer cancel()
	version := announced
	if version == "" {
		v, err := StoredVersion(ctx, w.client, w.key)
		if err != nil {
			w.failed(ctx, err)
			return
		}
		version = v
	}
	if version == w.e.Version() && version == w.current || version == w.rejected {
		if w.failing != "" || announced != "" {
			w.report(ctx) // back, or told again: say where this instance stands
		}
		w.failing = ""
		return
	}
	s, err := Fetch(ctx, w.client, w.key, asOptions(w.e.opts))
	if err != nil {
		if errors.Is(err, ErrNoRules) || unreachable(ctx, err) {
			w.failed(ctx, err)
			return
		}
		// The document itself: reading it again will not help. Each version refused is
		// logged and reported, whatever failed before it (a version refused a moment ago, an
		// outage): sync reads a version again only when it is not the one refused.
		w.failing = ""
		w.rejected, w.reason = version, err.Error()
		_ = w.e.rejected(w.source, err, "refused", version)
		w.report(ctx)
		return
	}
	w.failing = ""
	running := w.e.Version()
	if s.Forced && s.Version != running {
		w.e.opts.logger.Warn("ratelimit rules: the stored rules were pushed with force; applying them whatever their version",
			"source", w.source, "version", s.Version, "running", running, "replaced_in_redis", s.Previous)
	}
	if err := w.e.applyChanged(s.Set, w.source); err != nil {
		w.rejected, w.reason = s.Version, err.Error()
	} else {
		w.rejected, w.reason = "", "" // what is stored now is in use
		w.current = s.Version
		w.e.keepLastGood(s.Document)
	}
	w.report(ctx)
}

// failed reports an error reading the rules, once until reading works again. The end of the
// watch is no failure.
func (w *redisWatch) failed(ctx context.Context, err error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return
	}
	kind := failedOther
	switch {
	case errors.Is(err, ErrNoRules):
		kind = failedNoRules
	case unreachable(ctx, err):
		kind = failedUnreachable
	}
	if w.failing == kind {
		return
	}
	w.failing = kind
	if kind == failedNoRules {
		// Nothing was refused: the key is empty (nothing pushed yet, or it was deleted), and
		// the rules in use stay. Not counted as a rejected document, whose alert would fire
		// on every new deployment.
		w.e.opts.logger.Warn("ratelimit rules: Redis holds no rules at the key; the rules in use stay until a version is pushed",
			"source", w.source, "version", w.e.Version(), "error", err)
		return
	}
	if kind == failedUnreachable {
		// Nothing was refused either: Redis does not answer (its own outage, which the
		// store's metrics show), and the stored version is read again when it does.
		w.e.opts.logger.Warn("ratelimit rules: cannot read the rules from Redis; the rules in use stay, and the stored version is read again when Redis answers",
			"source", w.source, "version", w.e.Version(), "error", err)
		return
	}
	_ = w.e.rejected(w.source, err)
}

// lost logs a subscription that failed; the watch subscribes again.
func (w *redisWatch) lost(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failing == failedUnreachable {
		return
	}
	w.failing = failedUnreachable
	w.e.opts.logger.Warn("ratelimit rules: the subscription to Redis failed; subscribing again, then catching up",
		"source", w.source, "version", w.e.Version(), "error", err)
}

// failure is a kind of failure to read the rules from Redis (see redisWatch.failing).
type failure string

const (
	failedNoRules     failure = "no rules"    // the key holds no rules: nothing pushed, or lost
	failedUnreachable failure = "unreachable" // Redis does not answer, or does not serve yet
	failedOther       failure = "other"       // any other error reading Redis
)

// unreachable reports whether err is a failure to reach Redis or to be served by it (loading
// its dataset after a restart, a Cluster or a Sentinel group failing over, a script holding
// it), after which the same version is read again, rather than a document that cannot be
// applied.
func unreachable(ctx context.Context, err error) bool {
	var ne net.Error
	if ctx.Err() != nil || errors.As(err, &ne) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	for _, prefix := range notServing {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

// notServing are the prefixes of the errors of a Redis that is there but not serving now.
var notServing = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY"}
