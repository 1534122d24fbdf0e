package channel

import "context"

// RunOnce lets the external tests drive the worker one batch at a time,
// under the injected clock.
func RunOnce(ctx context.Context, r *ChannelRegistry) (int, error) { return r.runOnce(ctx) }

// Housekeep lets the external tests run one round of Run's housekeeping.
func Housekeep(ctx context.Context, r *ChannelRegistry) error { return r.housekeep(ctx) }
