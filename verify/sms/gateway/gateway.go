// Package gateway is a verify.SMSSender for an SMS gateway of the host's
// own: it POSTs each message as JSON to one URL.
//
// # Overview
//
// New takes the gateway's URL and, optionally, extra headers (an API key),
// an *http.Client, and the number of messages expected in flight at once,
// which sizes the default client's pool of idle connections. The default
// client times out after 10 seconds and follows no redirect.
//
// # Errors
//
// A non-2xx answer is a *sms.Error with Provider "http", classified
// by its status: a 429 throttled (its Retry-After, else
// sms.DefaultRetryAfter), a 5xx retryable, anything else final; a
// gateway that cannot be reached is retryable. At most 64 KiB of an
// answer is read, and at most 200 bytes of it quoted; no error holds the
// message's text, nor the number unmasked, nor the URL's query.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/internal/smsprovider"
	"github.com/deskkit/deskkit/verify/sms"
)

// Config is how a Sender reaches its gateway.
type Config struct {
	// URL is the gateway's absolute http or https URL. Required.
	URL string
	// Client sends the requests; without one, a client with a 10-second
	// timeout that does not follow redirects (a redirect is an error) and
	// keeps Concurrency idle connections to the gateway.
	Client *http.Client
	// Concurrency is how many messages are expected in flight at once
	// (the server's concurrent requests that send codes):
	// sms.DefaultConcurrency if 0. It sizes the default client's pool of
	// idle connections; with Client set it is unused.
	Concurrency int
	// Header holds extra request headers, e.g. an API key; optional.
	Header http.Header
}

// Sender is a verify.SMSSender for a gateway of the host's own: it POSTs
// each message as JSON, {"to": "+8613800138000", "text": "...", "bizKey":
// "SIGNIN"}, and takes any 2xx answer as accepted. Any other answer is an
// *sms.Error with Provider "http", classified by its status: a 429 is
// Throttled (RetryAfter from its Retry-After header, else
// sms.DefaultRetryAfter), a 5xx Retryable, anything else final; a gateway
// that cannot be reached is Retryable. It is safe for concurrent use.
type Sender struct {
	url    *url.URL
	client *http.Client
	header http.Header
}

var _ verify.SMSSender = (*Sender)(nil)

// New checks cfg and returns a sender. It does not connect.
func New(cfg Config) (*Sender, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(c.URL) // validate parsed it
	client := c.Client
	if client == nil {
		client = smsprovider.Client(c.Concurrency)
	}
	return &Sender{url: u, client: client, header: c.Header}, nil
}

// withDefaults returns a copy of c with the defaults filled in and Header
// copied, as the module's constructors all begin.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.Concurrency == 0 {
		out.Concurrency = sms.DefaultConcurrency
	}
	out.Header = out.Header.Clone()
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("gateway: Config.URL must be an absolute http or https URL")
	}
	if c.Concurrency < 0 {
		return errors.New("gateway: Config.Concurrency must not be negative")
	}
	return nil
}

// SendSMS posts m to the gateway. It returns nil on a 2xx answer, and an
// error otherwise: a number that is not E.164, a gateway that cannot be
// reached or ctx ending first (a *sms.Error wrapping the transport's
// error), a non-2xx answer (a *sms.Error with the status and the start of
// the reply, classified as Sender says). No error contains m.Text,
// which carries the code, nor m.To.
func (s *Sender) SendSMS(ctx context.Context, m verify.SMS) error {
	if !addr.IsE164(m.To) {
		return fmt.Errorf("gateway: %q is not an E.164 number", m.To)
	}
	body, err := json.Marshal(struct {
		To     string        `json:"to"`
		Text   string        `json:"text"`
		BizKey verify.BizKey `json:"bizKey"`
	}{m.To, m.Text, m.BizKey})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	for name, values := range s.header {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	status, reply, retryAfter, err := smsprovider.Post(s.client, req)
	if err != nil {
		return &sms.Error{Provider: "http", Retryable: true, Err: fmt.Errorf("gateway %s: %w", smsprovider.RedactURL(s.url), err)}
	}
	if status/100 == 2 {
		return nil
	}
	e := &sms.Error{Provider: "http", Status: status, Message: smsprovider.Excerpt(string(reply), m)}
	smsprovider.Classify(e, smsprovider.Final, false, smsprovider.ParseRetryAfter(retryAfter, time.Now()))
	return e
}
