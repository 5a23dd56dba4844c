package rules

// withoutNotify makes a file watcher poll only, as on a system without notifications.
func withoutNotify() Option {
	return engineOption(func(o *options) { o.noNotify = true })
}

// whenStarted calls f when a watcher watches its source.
func whenStarted(f func()) Option {
	return engineOption(func(o *options) { o.started = f })
}
