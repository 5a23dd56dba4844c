package ratelimit

// Hooks for the external tests of the middleware.

// WithWait replaces the guard's shaping wait, so tests drive it without sleeping.
var WithWait = withWait

// Sleep is the guard's default shaping wait.
var Sleep = sleep

// ParseForwarded parses a Forwarded header; each element is {for, by, host, proto}.
func ParseForwarded(v string) ([][4]string, error) {
	elems, err := parseForwarded(v)
	if err != nil || len(elems) == 0 {
		return nil, err
	}
	out := make([][4]string, len(elems))
	for i, e := range elems {
		out[i] = [4]string{e.For, e.By, e.Host, e.Proto}
	}
	return out, nil
}

// ParseForwardedNode parses the node of a for= parameter.
var ParseForwardedNode = parseForwardedNode
