// Package twilio is a verify.SMSSender over Twilio's Messages API
// (https://www.twilio.com/docs/messaging/api/message-resource).
//
// # Overview
//
// New takes the account's SID and auth token and the sending number or
// Messaging Service SID ("MG..."). Twilio sends the Verifier's text as it
// is. The default client times out after 10 seconds and follows no
// redirect.
//
// # Errors
//
// Any answer but 201 Created is a *sms.Error with Provider
// "twilio" and Twilio's error code (21211 for an invalid To, ...): 20429
// and a 429 are throttled (with the answer's Retry-After), 20500, 20503
// and a 5xx retryable, anything else final. No error holds the message's
// text, nor the number unmasked.
package twilio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit/internal/addr"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/internal/smsprovider"
	"github.com/deskkit/deskkit/verify/sms"
)

// Config is how a Sender reaches Twilio.
type Config struct {
	// AccountSID and AuthToken are the account's credentials. Required.
	AccountSID string
	AuthToken  string
	// From is the sending E.164 number, or a Messaging Service SID
	// ("MG..."). Required.
	From string
	// BaseURL is Twilio's API root; "https://api.twilio.com" if "". It
	// must be https but on a loopback host (tests), since every request
	// carries the AuthToken.
	BaseURL string
	// Client sends the requests; without one, a client with a 10-second
	// timeout that does not follow redirects (a redirect is an error) and
	// keeps Concurrency idle connections to Twilio.
	Client *http.Client
	// Concurrency is how many messages are expected in flight at once,
	// which sizes the default client's pool: sms.DefaultConcurrency if 0.
	Concurrency int
}

// Sender is a verify.SMSSender over Twilio's Messages API. It is safe for
// concurrent use.
type Sender struct {
	endpoint *url.URL
	sid      string
	token    string
	fromKey  string // "From" or "MessagingServiceSid"
	from     string
	client   *http.Client
}

var _ verify.SMSSender = (*Sender)(nil)

// New checks cfg and returns a sender. It does not connect.
func New(cfg Config) (*Sender, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Sender{sid: c.AccountSID, token: c.AuthToken, from: c.From, fromKey: "From", client: c.Client}
	if strings.HasPrefix(c.From, "MG") {
		s.fromKey = "MessagingServiceSid"
	}
	u, _ := url.Parse(c.BaseURL) // validate parsed it
	s.endpoint = u.JoinPath("2010-04-01", "Accounts", c.AccountSID, "Messages.json")
	if s.client == nil {
		s.client = smsprovider.Client(c.Concurrency)
	}
	return s, nil
}

// withDefaults returns a copy of c with the defaults filled in, BaseURL
// without a trailing slash, as the module's constructors all begin.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.BaseURL == "" {
		out.BaseURL = "https://api.twilio.com"
	}
	out.BaseURL = strings.TrimRight(out.BaseURL, "/")
	if out.Concurrency == 0 {
		out.Concurrency = sms.DefaultConcurrency
	}
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	if c.AccountSID == "" || c.AuthToken == "" || c.From == "" {
		return errors.New("twilio: Config needs AccountSID, AuthToken and From")
	}
	if c.Concurrency < 0 {
		return errors.New("twilio: Config.Concurrency must not be negative")
	}
	if strings.ContainsAny(c.AccountSID, "/?#% \t\r\n") {
		return errors.New("twilio: Config.AccountSID is not an account SID")
	}
	if !strings.HasPrefix(c.From, "MG") && !addr.IsE164(c.From) {
		return fmt.Errorf("twilio: Config.From %q is neither an E.164 number nor a Messaging Service SID (MG...)", c.From)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" ||
		(u.Scheme != "https" && !(u.Scheme == "http" && addr.IsLoopbackHost(u.Hostname()))) {
		return errors.New("twilio: Config.BaseURL must be an absolute https URL (http only on a loopback host)")
	}
	return nil
}

// SendSMS asks Twilio to send m. It returns nil when Twilio answers 201
// Created, and an error otherwise: a number that is not E.164, Twilio
// unreachable or ctx ending first (a *sms.Error wrapping the transport's
// error), any other answer (a *sms.Error with Provider "twilio", the
// status, and Twilio's error code and message, e.g. 21211 for an invalid
// To, classified by a table of Twilio's documented codes). No error contains m.Text, which carries
// the code, nor m.To.
func (s *Sender) SendSMS(ctx context.Context, m verify.SMS) error {
	if !addr.IsE164(m.To) {
		return fmt.Errorf("twilio: %q is not an E.164 number", m.To)
	}
	form := url.Values{"To": {m.To}, s.fromKey: {s.from}, "Body": {m.Text}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("twilio: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(s.sid, s.token)
	status, reply, retryAfter, err := smsprovider.Post(s.client, req)
	if err != nil {
		return &sms.Error{Provider: "twilio", Retryable: true, Err: err}
	}
	if status == http.StatusCreated {
		return nil
	}
	var t struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	e := &sms.Error{Provider: "twilio", Status: status, Message: smsprovider.Excerpt(string(reply), m)}
	if json.Unmarshal(reply, &t) == nil && (t.Code != 0 || t.Message != "") {
		e.Message = smsprovider.Excerpt(t.Message, m)
		if t.Code != 0 {
			e.Code = strconv.Itoa(t.Code)
		}
	}
	c, known := codes[e.Code]
	smsprovider.Classify(e, c, known, smsprovider.ParseRetryAfter(retryAfter, time.Now()))
	return e
}

// codes classifies the error codes of Twilio's REST API that call
// for something other than what the HTTP status says
// (https://www.twilio.com/docs/api/errors): 20429, Too Many Requests, is
// throttled (Twilio answers it with a 429 too); 20500 and 20503, its
// internal error and unavailability, may pass later. Every other code is
// taken by the status: a 5xx retryable, a 429 throttled, anything else (an
// invalid number 21211, a refused credential 20003, ...) final.
var codes = map[string]smsprovider.Class{
	"20429": smsprovider.Throttled,
	"20500": smsprovider.Retry,
	"20503": smsprovider.Retry,
}

// smsprovider.Post sends req and returns the status, at most smsReplyLimit bytes
// of the reply, and its Retry-After header. A transport error is
