//go:build ratelimit

package main

import "github.com/deskkit/deskkit/channel"

// setRateLimit sets a channel's rate limit, messages per second.
func setRateLimit(in *channel.Input, perSecond float64) error {
	in.RateLimit = perSecond
	return nil
}

// setDefaultRateLimit sets channel.Config.RateLimit, the rate limit of
// channels without one (0: none).
func setDefaultRateLimit(cfg *channel.Config, perSecond float64) error {
	cfg.RateLimit = perSecond
	return nil
}
