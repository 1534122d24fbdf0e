package channel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestNewRefusesBadConfig: New answers each bad setting with the error
// that names it; hosts (the reference server's flags among them) show
// these messages as they are.
func TestNewRefusesBadConfig(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := channel.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		secret []byte
		cfg    *channel.Config
		want   string
	}{
		{"short secret", []byte("short"), nil, "channel: secret must be at least 32 bytes"},
		{"short previous secret", sendSecret, &channel.Config{PreviousSecret: []byte("x")}, "channel: PreviousSecret must be at least 32 bytes"},
		{"empty schedule", sendSecret, &channel.Config{RetrySchedule: []time.Duration{}},
			"channel: Config.RetrySchedule: the retry schedule must have 1 to 50 delays"},
		{"negative delay", sendSecret, &channel.Config{RetrySchedule: []time.Duration{0, -time.Second}},
			"channel: Config.RetrySchedule: the retry schedule's delay 2 is negative"},
		{"negative disable after", sendSecret, &channel.Config{DisableAfter: -time.Hour}, "channel: Config.DisableAfter must not be negative"},
		{"negative disable failures", sendSecret, &channel.Config{DisableMinFailures: -1}, "channel: Config.DisableMinFailures must not be negative"},
		{"negative log retention", sendSecret, &channel.Config{LogRetention: -time.Hour}, "channel: Config.LogRetention must not be negative"},
		{"negative concurrency", sendSecret, &channel.Config{Concurrency: -1}, fmt.Sprintf("channel: Config.Concurrency must be between 1 and %d", channel.MaxConcurrency)},
		{"concurrency over the bound", sendSecret, &channel.Config{Concurrency: channel.MaxConcurrency + 1}, fmt.Sprintf("channel: Config.Concurrency must be between 1 and %d", channel.MaxConcurrency)},
		{"batch over the bound", sendSecret, &channel.Config{BatchSize: channel.MaxConcurrency + 1}, fmt.Sprintf("channel: Config.BatchSize must be between 1 and %d", channel.MaxConcurrency)},
		{"negative in flight", sendSecret, &channel.Config{MaxInFlightPerChannel: -1}, "channel: Config.MaxInFlightPerChannel must not be negative"},
		{"negative tenant concurrency", sendSecret, &channel.Config{TenantConcurrency: -1}, "channel: Config.TenantConcurrency must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := channel.New(db, c.secret, nil, c.cfg)
			if err == nil {
				t.Fatal("New succeeded")
			}
			if d := cmp.Diff(c.want, err.Error()); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
	if _, err := channel.New(db, sendSecret, nil, nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
