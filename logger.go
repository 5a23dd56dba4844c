package ratelimit

import "log/slog"

// WithLogger sets where the store and everything built on it log, by default [slog.Default] at
// the time of each line: the store's layers (the circuit breaker opening and closing, the
// memory store filling up) and every guard over the store (its error log, which
// [WithErrorHandler] replaces, and its warnings). One logger per store covers everything the
// library logs for it.
//
// Every line is rate-limited: at most one a second for repeated errors, with the number not
// logged since.
func WithLogger(l *slog.Logger) StoreOption {
	return storeOption(func(sc *storeConfig) {
		if !sc.once("WithLogger") {
			return
		}
		if l == nil {
			sc.errorf("WithLogger(nil): give it a logger, e.g. slog.Default()")
			return
		}
		sc.logger = l
	})
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
