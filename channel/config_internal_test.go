package channel

import (
	"testing"
	"time"
)

// TestConfigWithDefaults: withDefaults fills the defaults into a copy,
// leaving the caller's Config, and its RetrySchedule, as they were.
func TestConfigWithDefaults(t *testing.T) {
	if c := (*Config)(nil).withDefaults(); c.Concurrency != DefaultConcurrency || c.Timeout != DefaultTimeout || len(c.RetrySchedule) != len(DefaultRetrySchedule()) {
		t.Errorf("nil Config: %+v", c)
	}
	schedule := []time.Duration{0, time.Minute}
	in := &Config{RetrySchedule: schedule, AppName: "  "}
	out := in.withDefaults()
	out.RetrySchedule[1] = time.Hour
	if schedule[1] != time.Minute {
		t.Error("the copy shares the caller's RetrySchedule")
	}
	if in.AppName != "  " || in.Concurrency != 0 || out.AppName != "deskkit" {
		t.Errorf("caller's %+v, copy's AppName %q", in, out.AppName)
	}
	if err := out.validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
}
