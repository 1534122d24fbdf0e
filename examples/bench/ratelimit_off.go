//go:build !ratelimit

package main

import "github.com/deskkit/deskkit/channel"

// setRateLimit would set a channel's rate limit; this build's library has
// none (build with -tags ratelimit once channel.Input.RateLimit exists),
// so the ratelimit scenario is skipped.
func setRateLimit(*channel.Input, float64) error { return errNoRateLimit }
