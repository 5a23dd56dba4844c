package algorithms

import "github.com/a7d3e0dd/ratelimit/internal/algo"

// TokenBucket holds up to Burst tokens (default Limit), refilled at Limit per Window; a request
// takes cost tokens. A full bucket admits Burst at once, then Limit per Window.
//
// Remaining is the tokens left; ResetAfter is the time until the bucket is full again;
// RetryAfter is the time until it holds cost tokens.
//
// For the same parameters a token bucket admits exactly the requests that [LeakyBucket]
// (policing) and [GCRA] admit: they are one meter, and the engines keep it as GCRA's one
// timestamp — the time the bucket is full again. A changed Limit or Burst keeps that time, as
// GCRA's documentation details: the tokens missing scale with the new rate.
type TokenBucket struct{}

// Name implements [Algorithm].
func (TokenBucket) Name() string { return "token_bucket" }

func (TokenBucket) model() algo.Model { return tokenModel }
