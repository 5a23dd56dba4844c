package rules

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the fleet says: every instance watching the rules in Redis (Engine.WatchRedis) records,
// in the hash FleetKey(key), the version it runs and the version it refused, with why, and
// does so again every heartbeat. A record not renewed within three heartbeats is an instance
// gone: readers ignore it and delete it, unless it was renewed since they read it. The times
// are the Redis server's, so the instances' clocks do not matter.

// DefaultHeartbeat is how often a watching instance records its state unless
// [WithHeartbeat] says otherwise.
const DefaultHeartbeat = 10 * time.Second

// FleetKey returns the key of the hash in which the instances watching the rules at key
// record their state.
func FleetKey(key string) string { return key + ":fleet" }

// Instance is what one instance watching the rules recorded (see [Fleet]).
type Instance struct {
	// Name is the instance's name (see [WithInstanceName]).
	Name string `json:"name"`
	// Running is the version of the rules it runs.
	Running string `json:"running"`
	// Stored reports that the rules it runs are the stored document of that version, read by
	// its Engine.WatchRedis: the instance never reads that version again (rules of the
	// version's name from elsewhere, the default rules it started on, are replaced by the
	// stored ones). Digest is a hash of what those rules say: two documents of one digest
	// limit alike. Both are unset in the records of instances before they were recorded.
	Stored bool   `json:"stored,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Refused is the version it last refused, and Reason why; "" when it refused none newer
	// than the one it runs.
	Refused string `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Empty reports that the rules it runs are none, from a document that says allow_empty:
	// true: it limits no request.
	Empty bool `json:"empty,omitempty"`
	// Kind is "" for an Engine watching the rules, which runs the stored versions. An
	// instance of another kind records its state with [RecordInstance] ("rls": the rate
	// limit service of module rls, Running the digest of its own configuration files), and
	// does not run the stored rules: `ratelimit status` and `ratelimit push` list it apart
	// and do not wait for it.
	Kind string `json:"kind,omitempty"`
	// Loaded is when the instance put in force the configuration it runs, on its own clock;
	// zero when it did not say (an Engine does not).
	Loaded time.Time `json:"loaded,omitzero"`
	// Health is what the instance said of its health ("serving", "not_serving"); "" when it
	// did not say (an Engine does not).
	Health string `json:"health,omitempty"`
	// Seen is when it last recorded its state, on the Redis server's clock.
	Seen time.Time `json:"-"`
	// Age is how long before [Fleet] read the records that was, on the same clock: what to
	// show as "seen ago" (the reader's own clock may differ from the server's).
	Age time.Duration `json:"-"`
}

// IgnoresPushOf reports whether the instance would keep rules other than s's were s pushed
// (force: a forced push): it runs s's version as read from the stored document, so it never
// reads that version again, and what it runs does not say what s says. An instance of an
// earlier release, whose record says neither where its rules came from nor their digest, is
// taken to ignore a forced push of the version it runs, as it always was; a push that is not
// forced it may read (its rules may be its defaults). An instance of another kind (Kind not
// "") does not run the stored rules, and ignores no push.
func (in Instance) IgnoresPushOf(s *Set, force bool) bool {
	if in.Kind != "" || in.Running != s.Version() {
		return false
	}
	if in.Digest == "" { // an earlier release's record
		return force
	}
	return in.Stored && in.Digest != s.digest
}

//go:embed fleet.lua
var fleetLua string

var fleetScript = redis.NewScript(fleetLua)

//go:embed fleet_gone.lua
var fleetGoneLua string

var fleetGoneScript = redis.NewScript(fleetGoneLua)

// WithInstanceName sets the name an Engine records its state under in Redis (default: the
// host name, the process id and a random suffix). Names must be unique within a fleet. Any
// name may be given: one that holds '%' or ends in ":seen" is escaped in the fleet hash, so
// the status of versions before that escape shows it escaped (b%25 for b%).
func WithInstanceName(name string) Option {
	return engineOption(func(o *options) { o.once("WithInstanceName"); o.instance = name })
}

// WithHeartbeat sets how often an Engine watching Redis records its state there (default
// [DefaultHeartbeat]); a record not renewed within three heartbeats is an instance gone.
func WithHeartbeat(d time.Duration) Option {
	return engineOption(func(o *options) { o.once("WithHeartbeat"); o.heartbeat = d })
}

// defaultInstanceName is the host name, the process id and a random suffix.
func defaultInstanceName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.IntN(1<<16))
}

// fleetField returns the field of the fleet hash that holds the state of the instance name;
// the field <field>:seen holds when it was recorded. A name is written as it is, as earlier
// versions wrote it, unless it holds '%' or ends in ":seen": its '%' is written %25 and
// its final ":seen" %3Aseen, so that no name's field is another's <field>:seen (the state of
// an instance "a:seen" was written over the time of instance a, and Fleet deleted both).
func fleetField(name string) string {
	field := strings.ReplaceAll(name, "%", "%25")
	if base, ok := strings.CutSuffix(field, ":seen"); ok {
		field = base + "%3Aseen"
	}
	return field
}

// unescapeField undoes the escapes of fleetField.
var unescapeField = strings.NewReplacer("%25", "%", "%3A", ":")

// instanceName returns the name of the instance whose state field is field (see fleetField).
func instanceName(field string) string {
	if !strings.Contains(field, "%") {
		return field
	}
	return unescapeField.Replace(field)
}

// record writes the instance's state to the fleet hash of key.
func record(ctx context.Context, client redis.UniversalClient, key string, in Instance, heartbeat time.Duration) error {
	doc, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ttl := 3 * heartbeat.Milliseconds()
	if err := fleetScript.Run(ctx, client, []string{FleetKey(key)}, fleetField(in.Name), doc, ttl).Err(); err != nil {
		return fmt.Errorf("rules: recording the state of instance %q at Redis key %q: %w", in.Name, FleetKey(key), err)
	}
	return nil
}

// RecordInstance records the state of an instance that is not an [Engine] in the fleet hash
// of key (FleetKey(key)), as an Engine watching Redis records its own, so that [Fleet] (and
// `ratelimit status`) lists it: call it once every heartbeat, and the record lives for three
// of them (an instance that stops calling it leaves the fleet then). The instance's Name must
// be unique in the fleet; its Kind must not be empty (the records of kind "" are the
// Engines'); Running is the version of what it runs, Loaded and Health are shown as given, and
// Seen and Age are ignored (the record's time is the Redis server's).
func RecordInstance(ctx context.Context, client redis.UniversalClient, key string, in Instance, heartbeat time.Duration) error {
	if err := checkRedisArgs("RecordInstance", client, key); err != nil {
		return err
	}
	switch {
	case in.Name == "":
		return errors.New("rules: RecordInstance needs the instance's Name")
	case in.Kind == "":
		return fmt.Errorf("rules: RecordInstance of %q needs a Kind, such as \"rls\" (the records of no kind are the Engines')", in.Name)
	case heartbeat < time.Millisecond:
		return fmt.Errorf("rules: RecordInstance of %q: heartbeat %v, want at least 1ms", in.Name, heartbeat)
	}
	in.Seen, in.Age = time.Time{}, 0
	return record(ctx, client, key, in, heartbeat)
}

// Fleet returns what every live instance watching the rules at key recorded, by name: the
// version it runs, and the version it refused and why. Records not renewed in time (an
// instance gone) are left out, and deleted, in one script, unless renewed since they were
// read.
func Fleet(ctx context.Context, client redis.UniversalClient, key string) ([]Instance, error) {
	if err := checkRedisArgs("Fleet", client, key); err != nil {
		return nil, err
	}
	fk := FleetKey(key)
	h, err := client.HGetAll(ctx, fk).Result()
	if err != nil {
		return nil, fmt.Errorf("rules: reading Redis key %q: %w", fk, err)
	}
	now, err := client.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("rules: reading the time of Redis: %w", err)
	}
	var (
		live []Instance
		gone []string
	)
	for field, v := range h {
		state, ok := strings.CutSuffix(field, ":seen")
		if !ok {
			continue
		}
		seen, expires, ok := strings.Cut(v, ":")
		seenMs, err1 := strconv.ParseInt(seen, 10, 64)
		expMs, err2 := strconv.ParseInt(expires, 10, 64)
		doc, has := h[state]
		if !ok || err1 != nil || err2 != nil || !has || expMs < now.UnixMilli() {
			gone = append(gone, state, field, v)
			continue
		}
		var in Instance
		if err := json.Unmarshal([]byte(doc), &in); err != nil {
			gone = append(gone, state, field, v)
			continue
		}
		in.Name, in.Seen = instanceName(state), time.UnixMilli(seenMs)
		in.Age = now.Sub(in.Seen)
		live = append(live, in)
	}
	if len(gone) > 0 {
		// Only the records still as read: an instance may have renewed its own meanwhile.
		args := make([]any, len(gone))
		for i, s := range gone {
			args[i] = s
		}
		if err := fleetGoneScript.Run(ctx, client, []string{fk}, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("rules: deleting the records of instances gone at Redis key %q: %w", fk, err)
		}
	}
	slices.SortFunc(live, func(a, b Instance) int { return strings.Compare(a.Name, b.Name) })
	return live, nil
}
