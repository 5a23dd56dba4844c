package ratelimit

import "log/slog"

// WithLogger sets where the library logs, by default [slog.Default] at the time of each line.
// Given to a store ([NewMemoryStore], [NewRedisStore]) it is the logger of the store and of its
// layers (the circuit breaker opening and closing, the memory store filling up), and of every
// guard over the store that has no logger of its own. Given to a guard ([Middleware],
// [NewGuard], an adapter's New) it is that guard's logger: its error log ([WithErrorHandler]
// replaces it) and its warnings. So one WithLogger on the store covers everything the library
// logs for it; the rules module's WithLogger reaches the guards of its rules too.
//
// Every line is rate-limited: at most one a second for repeated errors, with the number not
// logged since.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.errorf("WithLogger(nil): give it a logger, e.g. slog.Default()")
			return
		}
		switch {
		case c.store != nil:
			c.store.logger = l
		case c.guard != nil:
			c.guard.logger = l
		}
	}
}

// logs is a logger that may be unset: then the lines go to slog.Default() as it is when they
// are written, so that a program that sets its default logger after making its limiter still
// gets them.
type logs struct{ l *slog.Logger }

// get returns the logger to write to.
func (g logs) get() *slog.Logger {
	if g.l != nil {
		return g.l
	}
	return slog.Default()
}

// loggedStore is the capability of a store that has a logger (see [WithLogger]).
type loggedStore interface{ logger() logs }

// loggerOf returns the logger of s: its own, or the default.
func loggerOf(s Store) logs {
	if ls, ok := capability[loggedStore](s); ok {
		return ls.logger()
	}
	return logs{}
}
