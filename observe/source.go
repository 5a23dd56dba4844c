package observe

// Source is what made a decision: the store, or, when the store was not asked, a layer in
// front of it (see ratelimit.WithDenialCache, ratelimit.WithFallback and Policy.Lease).
type Source uint8

const (
	// SourceStore is a decision of the store.
	SourceStore Source = iota
	// SourceDenialCache is a denial answered from the denial cache: the store denied the
	// identity until a time not yet reached.
	SourceDenialCache
	// SourceFallback is a decision of the local fallback, made while the store was
	// unavailable.
	SourceFallback
	// SourceLease is a decision made from a lease of quota this instance holds for a hot
	// identity (ratelimit.Policy.Lease): an admission from the leased units, or a denial the
	// store made, answered until its Retry-After.
	SourceLease

	numSources = iota
)

// String returns "store", "denial_cache", "fallback" or "lease": the label the metrics modules
// use.
func (s Source) String() string {
	switch s {
	case SourceLease:
		return "lease"
	case SourceDenialCache:
		return "denial_cache"
	case SourceFallback:
		return "fallback"
	}
	return "store"
}

// Sources returns every source, in the order of their values.
func Sources() []Source {
	s := make([]Source, numSources)
	for i := range s {
		s[i] = Source(i)
	}
	return s
}

// StoreInfo describes a store, as the OpenTelemetry database conventions name a client's
// calls: the memory store is System "memory"; the Redis store is System "redis", its calls
// Operation "FCALL" of the function Procedure, to Server (host and port, when the client has
// one address: a single server or a Sentinel-managed one has its master's, a Cluster none).
type StoreInfo struct {
	System, Operation, Procedure string
	ServerAddress                string
	ServerPort                   int
}
