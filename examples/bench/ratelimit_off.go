//go:build !ratelimit

package main

import "github.com/deskkit/deskkit/channel"

// setRateLimit would set a channel's rate limit; this build's library has
// none (build with -tags ratelimit once channel.Input.RateLimit exists),
// so the ratelimit scenario is skipped.
func setRateLimit(*channel.Input, float64) error { return errNoRateLimit }

// setDefaultRateLimit would set channel.Config.RateLimit; without the
// field, only 0 (none) can be set.
func setDefaultRateLimit(_ *channel.Config, perSecond float64) error {
	if perSecond != 0 {
		return errNoRateLimit
	}
	return nil
}
