package rls

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// FleetKind is the kind of the server's records in the fleet (rules.Instance.Kind).
const FleetKind = "rls"

// The health a record says (rules.Instance.Health), as Serving reports it.
const (
	FleetServing    = "serving"
	FleetNotServing = "not_serving"
)

// ReportFleet records the server's state in the fleet of the rules at key (the hash
// rules.FleetKey(key)), as a rules.Engine watching those rules records its own, so that
// `ratelimit status -key KEY` and rules.Fleet list the server beside the engines: its name
// (unique in the fleet), its kind (FleetKind), the version of its configuration
// ([Config.Version], a digest of its files), when it put it in force ([Server.Loaded]), its
// health ([Server.Serving]), and the version of the files a [Reloader] last refused, with
// why, until one is put in force. It records at once, then every heartbeat and whenever a
// configuration is put in force or refused, until ctx ends; a record lives three heartbeats, so an
// instance gone leaves the fleet then. A record that fails (Redis down) is logged once until
// one succeeds, and made again at the next heartbeat.
//
// It blocks until ctx ends and returns nil then; it returns at once an error for a nil client,
// an empty key or name, or a heartbeat under a millisecond.
func (s *Server) ReportFleet(ctx context.Context, client redis.UniversalClient, key, name string, heartbeat time.Duration) error {
	switch {
	case client == nil:
		return errors.New("rls: ReportFleet needs a go-redis client")
	case key == "":
		return errors.New("rls: ReportFleet needs the key of the rules whose fleet to join, such as rules.DefaultRedisKey")
	case name == "":
		return errors.New("rls: ReportFleet needs the instance's name")
	case heartbeat < time.Millisecond:
		return errors.New("rls: ReportFleet needs a heartbeat of at least 1ms")
	}
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	failing := false
	for {
		c := s.current.Load()
		in := rules.Instance{Name: name, Kind: FleetKind, Running: c.cfg.Version(), Loaded: c.loaded, Health: FleetNotServing}
		if s.Serving() {
			in.Health = FleetServing
		}
		if r := s.refused.Load(); r != nil {
			in.Refused, in.Reason = r.version, r.reason
		}
		rctx, cancel := context.WithTimeout(ctx, heartbeat)
		err := rules.RecordInstance(rctx, client, key, in, heartbeat)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil && !failing:
			failing = true
			s.log.Warn("rls: recording the server's state in the fleet failed; trying again every heartbeat", "key", rules.FleetKey(key), "error", err)
		case err == nil && failing:
			failing = false
			s.log.Info("rls: the server's state is recorded in the fleet again", "key", rules.FleetKey(key))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.configured:
		}
	}
}
