package algorithms

import "time"

// Never is the RetryAfter of a request that no algorithm can ever admit: its cost exceeds the
// capacity of a policy (a Limit, or a Burst). A Decision or a PolicyResult says so with
// RetryAfter == algorithms.Never; the Guard answers such a request 429 without a Retry-After,
// since no wait would help.
const Never time.Duration = -1
