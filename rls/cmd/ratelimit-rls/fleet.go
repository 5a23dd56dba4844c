package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// parseFleet checks -fleet-key, -instance and -heartbeat: none (or "") reports to no fleet,
// and without -redis there is none to report to (the memory store's instance is alone).
func (s *settings) parseFleet(heartbeat string) error {
	if s.fleetKey == "none" || s.redisURL == "" {
		s.fleetKey = ""
	}
	var err error
	if s.heartbeat, err = time.ParseDuration(heartbeat); err != nil || s.heartbeat < time.Millisecond {
		return fmt.Errorf("-heartbeat %q: a duration such as 10s, at least 1ms", heartbeat)
	}
	if s.instance == "" {
		s.instance = defaultInstanceName()
	}
	return nil
}

// defaultInstanceName is the host name, the process id and a random suffix, as the rules
// engines name themselves.
func defaultInstanceName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.IntN(1<<16))
}
