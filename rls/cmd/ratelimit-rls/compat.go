package main

import (
	"errors"
	"fmt"
	"strconv"
)

// parseCompat checks -key-compat and reads -ietf-headers.
func (s *settings) parseCompat(ietf string) error {
	switch s.keyCompat {
	case "none", "":
		s.keyCompat = "none"
	case "reference":
		if s.redisURL == "" {
			return errors.New("-key-compat reference needs -redis: the counts it shares are in Redis")
		}
	default:
		return fmt.Errorf("-key-compat %q: none or reference", s.keyCompat)
	}
	n, err := strconv.Atoi(ietf)
	if err != nil || n != 0 && n != 10 && n != 11 {
		return fmt.Errorf("-ietf-headers %q: 11 (the latest draft), 10, or 0 for none", ietf)
	}
	s.ietf = n
	return nil
}
