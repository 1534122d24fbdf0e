//go:build ratelimit

package main

import "github.com/deskkit/deskkit/channel"

// setRateLimit sets a channel's rate limit, messages per second.
func setRateLimit(in *channel.Input, perSecond float64) error {
	in.RateLimit = perSecond
	return nil
}
