package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/verify/smtp"
)

// Environment variables of the channel service.
const (
	envChannelAllowPrivate   = "DESKKIT_CHANNEL_ALLOW_PRIVATE_NETWORKS"
	envChannelTestsPerMin    = "DESKKIT_CHANNEL_TESTS_PER_MINUTE"
	envChannelResendsPerMin  = "DESKKIT_CHANNEL_RESENDS_PER_MINUTE"
	envChannelTimeout        = "DESKKIT_CHANNEL_TIMEOUT"
	envEventRetrySchedule    = "DESKKIT_EVENT_RETRY_SCHEDULE"
	envEventDisableAfter     = "DESKKIT_EVENT_DISABLE_AFTER"
	envEventDisableMinFailed = "DESKKIT_EVENT_DISABLE_MIN_FAILURES"
	envEventFailingAfter     = "DESKKIT_EVENT_FAILING_AFTER"
	envEventLogRetention     = "DESKKIT_EVENT_LOG_RETENTION"
	envEventConcurrency      = "DESKKIT_EVENT_CONCURRENCY"
	envEventBatchSize        = "DESKKIT_EVENT_BATCH_SIZE"
	envEventChannelInFlight  = "DESKKIT_EVENT_CHANNEL_IN_FLIGHT"
	envEventChannelCeiling   = "DESKKIT_EVENT_CHANNEL_IN_FLIGHT_MAX"
	envEventChannelRate      = "DESKKIT_EVENT_CHANNEL_RATE_LIMIT"
	envEventTenantConc       = "DESKKIT_EVENT_TENANT_CONCURRENCY"
	envEventLanguageTTL      = "DESKKIT_EVENT_LANGUAGE_TTL"
)

// channelConfig is how the server's channels reach the outside, and how
// their events are delivered.
type channelConfig struct {
	// allowPrivate lets channels reach loopback and private networks:
	// development and tests only (a webhook sink on localhost).
	allowPrivate   bool
	testsPerMinute int
	// resendsPerMinute throttles resends and recovers, together, per
	// tenant.
	resendsPerMinute int
	timeout          time.Duration
	// The delivery of events; the registry's defaults where zero.
	retrySchedule      []time.Duration
	disableAfter       time.Duration
	failingAfter       time.Duration
	disableMinFailures int
	logRetention       time.Duration
	// How many attempts run at once, how many deliveries a claim takes,
	// how many one channel (its floor and ceiling) and one tenant may have
	// in flight, and a channel's default rate (messages a second).
	concurrency       int
	batchSize         int
	channelInFlight   int
	channelCeiling    int
	channelRate       float64
	tenantConcurrency int
	// languageTTL is how long a tenant's locale is kept for its events.
	languageTTL time.Duration
}

// addChannelFlags declares the channel flags on fs.
func addChannelFlags(fs *flagSet, cfg *channelConfig) {
	fs.BoolVar(&cfg.allowPrivate, "channel-allow-private-networks", false,
		"development only: let channels reach loopback and private networks (cloud metadata addresses stay blocked)")
	fs.fromEnv("channel-allow-private-networks", envChannelAllowPrivate)
	fs.Var(countFlag{&cfg.testsPerMinute}, "channel-tests-per-minute",
		"test messages one tenant may send in a minute; 0 means "+strconv.Itoa(channel.DefaultTestLimit))
	fs.fromEnv("channel-tests-per-minute", envChannelTestsPerMin)
	fs.Var(countFlag{&cfg.resendsPerMinute}, "channel-resends-per-minute",
		"resends and recovers of deliveries one tenant may ask for in a minute, together; 0 means "+strconv.Itoa(channel.DefaultResendLimit))
	fs.fromEnv("channel-resends-per-minute", envChannelResendsPerMin)
	fs.Var(durationFlag{&cfg.timeout}, "channel-timeout", "bound of one channel message, dial to reply; 0 means "+channel.DefaultTimeout.String())
	fs.fromEnv("channel-timeout", envChannelTimeout)
	fs.Var(scheduleFlag{&cfg.retrySchedule}, "event-retry-schedule",
		"delays before each attempt of an event's delivery, comma-separated Go durations; default "+formatSchedule(channel.DefaultRetrySchedule()))
	fs.fromEnv("event-retry-schedule", envEventRetrySchedule)
	fs.Var(durationFlag{&cfg.disableAfter}, "event-disable-after",
		"disable a channel whose deliveries all failed for this long; 0 means "+channel.DefaultDisableAfter.String())
	fs.fromEnv("event-disable-after", envEventDisableAfter)
	fs.Var(durationFlag{&cfg.failingAfter}, "event-failing-after",
		"raise channel.failing, once per episode, to a tenant's other channels when a channel's deliveries all failed for this long; 0 means "+channel.DefaultFailingAfter.String())
	fs.fromEnv("event-failing-after", envEventFailingAfter)
	fs.Var(countFlag{&cfg.disableMinFailures}, "event-disable-min-failures",
		"failed attempts a channel needs, besides -event-disable-after, to be disabled; 0 means "+strconv.Itoa(channel.DefaultDisableMinFailures))
	fs.fromEnv("event-disable-min-failures", envEventDisableMinFailed)
	fs.Var(durationFlag{&cfg.logRetention}, "event-log-retention",
		"keep finished deliveries and attempts this long; 0 means "+channel.DefaultLogRetention.String())
	fs.fromEnv("event-log-retention", envEventLogRetention)
	fs.Var(boundedCount{&cfg.concurrency, channel.MaxConcurrency}, "event-concurrency",
		"delivery attempts this server makes at once; 0 means "+strconv.Itoa(channel.DefaultConcurrency))
	fs.fromEnv("event-concurrency", envEventConcurrency)
	fs.Var(boundedCount{&cfg.batchSize, channel.MaxConcurrency}, "event-batch-size",
		"due deliveries one claim takes at most; 0 means 4 x -event-concurrency (claims start at -event-concurrency and grow with a backlog)")
	fs.fromEnv("event-batch-size", envEventBatchSize)
	fs.Var(countFlag{&cfg.channelInFlight}, "event-channel-in-flight",
		"deliveries one channel may have in flight at once, across every replica, while its endpoint is slow or overloaded (the floor of its adaptive limit); 0 means "+strconv.Itoa(channel.DefaultMaxInFlightPerChannel))
	fs.fromEnv("event-channel-in-flight", envEventChannelInFlight)
	fs.Var(countFlag{&cfg.channelCeiling}, "event-channel-in-flight-max",
		"the most deliveries one channel may have in flight while its endpoint answers quickly (the ceiling of its adaptive limit); 0 means -event-tenant-concurrency times the replicas running")
	fs.fromEnv("event-channel-in-flight-max", envEventChannelCeiling)
	fs.Var(rateFlag{&cfg.channelRate}, "event-channel-rate-limit",
		"messages a second a channel gets at most unless it has a rate limit of its own, sends spaced evenly across every replica (0.5 is one every 2 s); 0 means none, at most "+strconv.Itoa(channel.MaxRateLimit))
	fs.fromEnv("event-channel-rate-limit", envEventChannelRate)
	fs.Var(countFlag{&cfg.tenantConcurrency}, "event-tenant-concurrency",
		"of this server's -event-concurrency attempts, how many one tenant's deliveries may hold; 0 means half")
	fs.fromEnv("event-tenant-concurrency", envEventTenantConc)
	fs.Var(durationFlag{&cfg.languageTTL}, "event-language-ttl",
		"how long the delivery worker keeps a tenant's locale for its event messages, and so how long a change of it may take to show in them; 0 means "+channel.DefaultTenantLanguageTTL.String())
	fs.fromEnv("event-language-ttl", envEventLanguageTTL)
}

// boundedCount is countFlag with an upper bound.
type boundedCount struct {
	n   *int
	max int
}

func (f boundedCount) String() string { return countFlag{f.n}.String() }

func (f boundedCount) Set(s string) error {
	var n int
	if err := (countFlag{&n}).Set(s); err != nil {
		return err
	}
	if n > f.max {
		return fmt.Errorf("must be at most %d", f.max)
	}
	*f.n = n
	return nil
}

// rateFlag is a rate in messages a second: a decimal number from 0 to
// channel.MaxRateLimit.
type rateFlag struct{ r *float64 }

func (f rateFlag) String() string {
	if f.r == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.r, 'f', -1, 64)
}

func (f rateFlag) Set(s string) error {
	r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(r >= 0 && r <= channel.MaxRateLimit) {
		return fmt.Errorf("must be a number of messages a second from 0 (none) to %d", channel.MaxRateLimit)
	}
	*f.r = r
	return nil
}

// scheduleFlag is a retry schedule: comma-separated Go durations, checked
// as the registry checks them.
type scheduleFlag struct{ s *[]time.Duration }

func (f scheduleFlag) String() string {
	if f.s == nil || *f.s == nil {
		return ""
	}
	return formatSchedule(*f.s)
}

func (f scheduleFlag) Set(v string) error {
	var out []time.Duration
	for i, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		d, err := time.ParseDuration(part)
		if err != nil && part == "0" {
			d, err = 0, nil
		}
		if err != nil {
			return fmt.Errorf("delay %d (%q) must be a Go duration such as 5s, 5m or 2h", i+1, part)
		}
		if d < 0 {
			return fmt.Errorf("delay %d (%q) must not be negative", i+1, part)
		}
		out = append(out, d)
	}
	*f.s = out
	return nil
}

// formatSchedule writes a schedule as the flag takes it.
func formatSchedule(s []time.Duration) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// describe is the log line's view of cfg.
func (cfg channelConfig) describe() []any {
	perMinute := cmp.Or(cfg.testsPerMinute, channel.DefaultTestLimit)
	resends := cmp.Or(cfg.resendsPerMinute, channel.DefaultResendLimit)
	timeout := cmp.Or(cfg.timeout, channel.DefaultTimeout)
	concurrency := cmp.Or(cfg.concurrency, channel.DefaultConcurrency)
	schedule := cfg.retrySchedule
	if schedule == nil {
		schedule = channel.DefaultRetrySchedule()
	}
	return []any{
		slog.Bool("allowPrivateNetworks", cfg.allowPrivate), slog.Int("testsPerMinute", perMinute),
		slog.Int("resendsPerMinute", resends), slog.String("timeout", timeout.String()),
		slog.String("retrySchedule", formatSchedule(schedule)),
		slog.String("disableAfter", cmp.Or(cfg.disableAfter, channel.DefaultDisableAfter).String()),
		slog.String("failingAfter", cmp.Or(cfg.failingAfter, channel.DefaultFailingAfter).String()),
		slog.Int("disableMinFailures", cmp.Or(cfg.disableMinFailures, channel.DefaultDisableMinFailures)),
		slog.String("logRetention", cmp.Or(cfg.logRetention, channel.DefaultLogRetention).String()),
		slog.Int("concurrency", concurrency), slog.Int("batchSize", cmp.Or(cfg.batchSize, 4*concurrency)),
		slog.Int("channelInFlight", cmp.Or(cfg.channelInFlight, channel.DefaultMaxInFlightPerChannel)),
		slog.Int("channelInFlightMax", cfg.channelCeiling), slog.Float64("channelRateLimit", cfg.channelRate),
		slog.Int("tenantConcurrency", cmp.Or(cfg.tenantConcurrency, (concurrency+1)/2)),
		slog.String("languageTTL", cmp.Or(cfg.languageTTL, channel.DefaultTenantLanguageTTL).String()),
	}
}

// newChannels builds the channel registry of the app. EMAIL channels send
// through the verification service's SMTP server: one mail server for the
// whole server, smtp.Mailer being a deskkit.Mailer as both services
// take it. Without an SMTP server EMAIL channels can be stored, and their
// tests say that no mail server is configured: logging a message is no
// delivery.
//
// A tenant's channels get deskkit's event messages in the tenant's locale
// (the directory's), else in the server's default language. The registry
// keeps each tenant's for -event-language-ttl, so that the directory's
// SELECT runs once per tenant and TTL, off the claim loop, not once per
// tenant of every claimed batch on it.
func newChannels(db *bun.DB, secret []byte, dir *directory.Directory, cfg appConfig) (*channel.ChannelRegistry, error) {
	var mail deskkit.Mailer
	if cfg.Verify.smtp.Addr != "" {
		m, err := smtp.New(cfg.Verify.smtp)
		if err != nil {
			return nil, fmt.Errorf("SMTP (%s...): %w", envSMTPAddr, err)
		}
		mail = m
	}
	return channel.New(db, secret, mail, &channel.Config{
		PreviousSecret:        cfg.Verify.previous,
		TestsPerMinute:        cfg.Channel.testsPerMinute,
		ResendsPerMinute:      cfg.Channel.resendsPerMinute,
		AllowPrivateNetworks:  cfg.Channel.allowPrivate,
		Timeout:               cfg.Channel.timeout,
		RetrySchedule:         cfg.Channel.retrySchedule,
		DisableAfter:          cfg.Channel.disableAfter,
		DisableMinFailures:    cfg.Channel.disableMinFailures,
		FailingAfter:          cfg.Channel.failingAfter,
		Users:                 channelUsers{dir},
		LogRetention:          cfg.Channel.logRetention,
		Concurrency:           cfg.Channel.concurrency,
		BatchSize:             cfg.Channel.batchSize,
		MaxInFlightPerChannel: cfg.Channel.channelInFlight,
		InFlightCeiling:       cfg.Channel.channelCeiling,
		RateLimit:             cfg.Channel.channelRate,
		TenantConcurrency:     cfg.Channel.tenantConcurrency,
		TenantLanguageTTL:     cfg.Channel.languageTTL,
		Logger:                cfg.Logger,
		Now:                   cfg.Now,
		PlainStatements:       cfg.PlainStatements,
		ListenDB:              cfg.ListenDB,
		ReadDB:                cfg.ReadDB,
		ReadMaxLag:            cfg.ReadMaxLag,
		TenantLanguage: func(ctx context.Context, tenantID int64) (string, error) {
			locale, err := dir.TenantLocale(ctx, tenantID)
			if locale == "" && err == nil {
				locale = cfg.DefaultLanguage
			}
			return locale, err
		},
	})
}

// eventDemoHello is the demo host's own event type, which an admin
// publishes by hand.
const eventDemoHello = "demo.hello"

// demoEventTypes returns the demo host's own event types, which newApp
// registers beside the services' when the server starts: a new slice each
// time.
func demoEventTypes() []deskkit.EventType {
	return []deskkit.EventType{{
		Name:  eventDemoHello,
		About: deskkit.Textf("A test event an admin sent by hand from the demo, to try the channels. Its data is whatever the admin entered."),
		// Its data is any object: the schema says so, as a host writes
		// one for data whose Go type (a map) says nothing.
		Example: map[string]any{"n": 1},
		Schema: json.RawMessage(`{"type": "object", "description": "Whatever the admin entered, and the tenant's id.", ` +
			`"properties": {"tenantId": {"type": "integer", "description": "The tenant's id."}}, "required": ["tenantId"]}`),
	}}
}

// publishRequest is the body of the demo host's POST /demo/event/publish.
type publishRequest struct {
	ID    string          `json:"id"`
	Type  string          `json:"type"`
	Title string          `json:"title"`
	Text  string          `json:"text"`
	Data  json.RawMessage `json:"data"`
}

// published is the answer to a publish.
type published struct {
	EventID string `json:"eventId"`
}

// mountPublish adds the demo host's use of ChannelRegistry.Publish: a real
// host publishes its own events (an invoice paid, a build broken) in the
// transaction of the change; the demo lets an admin publish one by hand.
// It is queued as any other event: Run delivers it to every enabled
// channel of the tenant whose subscription matches, with retries. Its type
// must be registered: demo.hello (demoEventTypes), or a service's type. The
// catalogue is the server's code, registered when it starts, the same for
// every tenant and every replica; a publish registers nothing, and
// Publish answers an unknown type 400, listing the registered ones.
func mountPublish(api *httpapi.Server, db bun.IDB, reg *channel.ChannelRegistry) {
	api.Handle(http.MethodPost, "/demo/event/publish", func(r *http.Request, p deskkit.Principal) (any, error) {
		if !p.Admin {
			return nil, deskkit.NewError(deskkit.ErrForbidden, "demo: publish needs an admin", "only an admin may publish events by hand")
		}
		var req publishRequest
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			return nil, err
		}
		ev := deskkit.Event{ID: req.ID, Type: req.Type, Title: req.Title, Text: req.Text}
		if ev.ID == "" {
			ev.ID = deskkit.NewEventID()
		}
		if len(req.Data) > 0 && string(req.Data) != "null" {
			ev.Data = req.Data
		}
		if err := reg.Publish(r.Context(), db, p.TenantID, ev); err != nil {
			return nil, err
		}
		return published{EventID: ev.ID}, nil
	})
}
