package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/verify"
)

// Environment variables of the channel service.
const (
	envChannelAllowPrivate = "DESKKIT_CHANNEL_ALLOW_PRIVATE_NETWORKS"
	envChannelTestsPerMin  = "DESKKIT_CHANNEL_TESTS_PER_MINUTE"
	envChannelTimeout      = "DESKKIT_CHANNEL_TIMEOUT"
)

// channelConfig is how the server's channels reach the outside.
type channelConfig struct {
	// allowPrivate lets channels reach loopback and private networks:
	// development and tests only (a webhook sink on localhost).
	allowPrivate   bool
	testsPerMinute int
	timeout        time.Duration
}

// addChannelFlags declares the channel flags on fs.
func addChannelFlags(fs *flagSet, cfg *channelConfig) {
	fs.BoolVar(&cfg.allowPrivate, "channel-allow-private-networks", false,
		"development only: let channels reach loopback and private networks (cloud metadata addresses stay blocked)")
	fs.fromEnv("channel-allow-private-networks", envChannelAllowPrivate)
	fs.Var(countFlag{&cfg.testsPerMinute}, "channel-tests-per-minute",
		"test messages one tenant may send in a minute; 0 means "+strconv.Itoa(channel.DefaultTestLimit))
	fs.fromEnv("channel-tests-per-minute", envChannelTestsPerMin)
	fs.Var(durationFlag{&cfg.timeout}, "channel-timeout", "bound of one channel message, dial to reply; 0 means "+channel.DefaultTimeout.String())
	fs.fromEnv("channel-timeout", envChannelTimeout)
}

// describe is the log line's view of cfg.
func (cfg channelConfig) describe() []any {
	perMinute := cfg.testsPerMinute
	if perMinute == 0 {
		perMinute = channel.DefaultTestLimit
	}
	timeout := cfg.timeout
	if timeout == 0 {
		timeout = channel.DefaultTimeout
	}
	return []any{slog.Bool("allowPrivateNetworks", cfg.allowPrivate), slog.Int("testsPerMinute", perMinute), slog.String("timeout", timeout.String())}
}

// newChannels builds the channel registry of the app. EMAIL channels send
// through the verification service's SMTP server: one mail server for the
// whole server, verify.SMTPMailer being a deskkit.Mailer as both services
// take it. Without an SMTP server EMAIL channels can be stored, and their
// tests say that no mail server is configured: logging a message is no
// delivery.
func newChannels(db *bun.DB, secret []byte, cfg appConfig) (*channel.ChannelRegistry, error) {
	var mail deskkit.Mailer
	if cfg.Verify.smtp.Addr != "" {
		m, err := verify.NewSMTPMailer(cfg.Verify.smtp)
		if err != nil {
			return nil, fmt.Errorf("SMTP (%s...): %w", envSMTPAddr, err)
		}
		mail = m
	}
	return channel.New(db, secret, mail, &channel.Config{
		PreviousSecret:       cfg.Verify.previous,
		TestsPerMinute:       cfg.Channel.testsPerMinute,
		AllowPrivateNetworks: cfg.Channel.allowPrivate,
		Timeout:              cfg.Channel.timeout,
		Logger:               cfg.Logger,
		Now:                  cfg.Now,
	})
}

// deliverRequest is the body of the demo host's POST /demo/event/deliver.
type deliverRequest struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Text       string          `json:"text"`
	Data       json.RawMessage `json:"data"`
	ChannelIDs []int64         `json:"channelIds"`
}

// delivery is what became of one channel.
type delivery struct {
	ChannelID   int64        `json:"channelId"`
	ChannelType channel.Type `json:"channelType,omitempty"`
	Name        string       `json:"name,omitempty"`
	Delivered   bool         `json:"delivered"`
	Error       string       `json:"error,omitempty"`
	Retryable   bool         `json:"retryable,omitempty"`
}

// mountDeliver adds the demo host's use of ChannelRegistry.Deliver: a real
// host delivers its own events (a task trashed, a sprint restored) from
// its code or a job; the demo lets an admin send one by hand, to the
// tenant's channels named by channelIds, or to all of them.
func mountDeliver(api *httpapi.Server, reg *channel.ChannelRegistry, logger *slog.Logger) {
	api.Handle(http.MethodPost, "/demo/event/deliver", func(r *http.Request, p deskkit.Principal) (any, error) {
		if !p.Admin {
			return nil, deskkit.NewError(deskkit.ErrForbidden, "demo: deliver needs an admin", "only an admin may deliver events by hand")
		}
		var req deliverRequest
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			return nil, err
		}
		ev := channel.Event{ID: req.ID, Type: req.Type, Title: req.Title, Text: req.Text}
		if len(req.Data) > 0 && string(req.Data) != "null" {
			ev.Data = req.Data
		}
		results, err := reg.Deliver(r.Context(), p.TenantID, ev, req.ChannelIDs)
		if err != nil {
			return nil, err
		}
		out := make([]delivery, len(results))
		for i, res := range results {
			out[i] = delivery{ChannelID: res.ChannelID, ChannelType: res.Type, Name: res.Name, Delivered: res.Err == nil}
			var de *channel.DeliveryError
			switch {
			case res.Err == nil:
			case errors.As(res.Err, &de):
				out[i].Error, out[i].Retryable = de.ClientMessage(), de.Retryable
			case errors.Is(res.Err, channel.ErrNotFound):
				out[i].Error = "no such channel"
			default:
				out[i].Error = "not delivered"
				logger.ErrorContext(r.Context(), "demo: deliver", slog.Int64("channel", res.ChannelID), slog.Any("error", res.Err))
			}
		}
		return out, nil
	})
}
