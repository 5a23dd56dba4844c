package observe

// keyFallbackReasons are the reasons of KeyFallbackReasons, in its order.
var keyFallbackReasons = [...]string{"no_header", "no_user", "no_route", "no_key"}

// KeyFallbackReasons returns the reasons an Observer is told a request was limited by its
// client IP instead of its key (ratelimit.Observer.KeyFellBack): "no_header" (KeyByHeader
// found no header), "no_user" (KeyByUser found no user), "no_route" (KeyByRoute found no route
// yet), "no_key" (a key function of yours returned ErrNoKey). A metrics module creates its
// series from them.
func KeyFallbackReasons() []string { return append([]string(nil), keyFallbackReasons[:]...) }
