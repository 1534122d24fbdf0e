package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit/internal/addr"
)

// Limits of what an SMS sender reads of a gateway's reply.
const (
	smsReplyLimit   = 64 << 10 // read at most this much of a reply
	smsReplyExcerpt = 200      // quote at most this much in an error
)

// DefaultSMSConcurrency is how many messages an SMS sender without its own
// client expects to have in flight at once: its client keeps that many idle
// connections to the gateway.
const DefaultSMSConcurrency = 64

// defaultSMSClient is the client of an SMS sender without its own: a
// 10-second timeout and no redirects, since a gateway that redirects is
// misconfigured and following it would hand the message (and the
// credentials of a header) to another URL. Its transport keeps concurrency
// idle connections to the gateway, where Go's default keeps 2: under load
// every send past the second would open a new connection (a TLS handshake
// to the gateway, a socket left in TIME_WAIT).
func defaultSMSClient(concurrency int) *http.Client {
	if concurrency <= 0 {
		concurrency = DefaultSMSConcurrency
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = concurrency
	t.MaxIdleConnsPerHost = concurrency
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// HTTPSMSConfig is how an HTTPSMSSender reaches its gateway.
type HTTPSMSConfig struct {
	// URL is the gateway's absolute http or https URL. Required.
	URL string
	// Client sends the requests; without one, a client with a 10-second
	// timeout that does not follow redirects (a redirect is an error) and
	// keeps Concurrency idle connections to the gateway.
	Client *http.Client
	// Concurrency is how many messages are expected in flight at once
	// (the server's concurrent requests that send codes):
	// DefaultSMSConcurrency if 0. It sizes the default client's pool of
	// idle connections; with Client set it is unused.
	Concurrency int
	// Header holds extra request headers, e.g. an API key; optional.
	Header http.Header
}

// HTTPSMSSender is an SMSSender for a gateway of the host's own: it POSTs
// each message as JSON, {"to": "+8613800138000", "text": "...", "bizKey":
// "SIGNIN"}, and takes any 2xx answer as accepted. Any other answer is an
// *SMSError with Provider "http", classified by its status: a 429 is
// Throttled (RetryAfter from its Retry-After header, else
// DefaultSMSRetryAfter), a 5xx Retryable, anything else final; a gateway
// that cannot be reached is Retryable. It is safe for concurrent use.
type HTTPSMSSender struct {
	url    *url.URL
	client *http.Client
	header http.Header
}

var _ SMSSender = (*HTTPSMSSender)(nil)

// NewHTTPSMSSender checks cfg and returns a sender. It does not connect.
func NewHTTPSMSSender(cfg HTTPSMSConfig) (*HTTPSMSSender, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(c.URL) // validate parsed it
	client := c.Client
	if client == nil {
		client = defaultSMSClient(c.Concurrency)
	}
	return &HTTPSMSSender{url: u, client: client, header: c.Header}, nil
}

// withDefaults returns a copy of c with the defaults filled in and Header
// copied, as the module's constructors all begin.
func (c *HTTPSMSConfig) withDefaults() *HTTPSMSConfig {
	out := *c
	if out.Concurrency == 0 {
		out.Concurrency = DefaultSMSConcurrency
	}
	out.Header = out.Header.Clone()
	return &out
}

// validate checks an HTTPSMSConfig that withDefaults filled in.
func (c *HTTPSMSConfig) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("verify: HTTPSMSConfig.URL must be an absolute http or https URL")
	}
	if c.Concurrency < 0 {
		return errors.New("verify: HTTPSMSConfig.Concurrency must not be negative")
	}
	return nil
}

// SendSMS posts m to the gateway. It returns nil on a 2xx answer, and an
// error otherwise: a number that is not E.164, a gateway that cannot be
// reached or ctx ending first (an *SMSError wrapping the transport's
// error), a non-2xx answer (an *SMSError with the status and the start of
// the reply, classified as HTTPSMSSender says). No error contains m.Text,
// which carries the code, nor m.To.
func (s *HTTPSMSSender) SendSMS(ctx context.Context, m SMS) error {
	if !addr.IsE164(m.To) {
		return fmt.Errorf("verify: SMS: %q is not an E.164 number", m.To)
	}
	body, err := json.Marshal(struct {
		To     string `json:"to"`
		Text   string `json:"text"`
		BizKey BizKey `json:"bizKey"`
	}{m.To, m.Text, m.BizKey})
	if err != nil {
		return fmt.Errorf("verify: SMS: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("verify: SMS: %w", err)
	}
	for name, values := range s.header {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	status, reply, retryAfter, err := smsPost(s.client, req)
	if err != nil {
		return &SMSError{Provider: "http", Retryable: true, Err: fmt.Errorf("gateway %s: %w", redactURL(s.url), err)}
	}
	if status/100 == 2 {
		return nil
	}
	e := &SMSError{Provider: "http", Status: status, Message: providerExcerpt(string(reply), m)}
	e.classify(smsFinal, false, parseRetryAfter(retryAfter, time.Now()))
	return e
}

// TwilioConfig is how a TwilioSMSSender reaches Twilio.
type TwilioConfig struct {
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
	// Concurrency is as in HTTPSMSConfig: DefaultSMSConcurrency if 0.
	Concurrency int
}

// TwilioSMSSender is an SMSSender over Twilio's Messages API. It is safe for
// concurrent use.
type TwilioSMSSender struct {
	endpoint *url.URL
	sid      string
	token    string
	fromKey  string // "From" or "MessagingServiceSid"
	from     string
	client   *http.Client
}

var _ SMSSender = (*TwilioSMSSender)(nil)

// NewTwilioSMSSender checks cfg and returns a sender. It does not connect.
func NewTwilioSMSSender(cfg TwilioConfig) (*TwilioSMSSender, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &TwilioSMSSender{sid: c.AccountSID, token: c.AuthToken, from: c.From, fromKey: "From", client: c.Client}
	if strings.HasPrefix(c.From, "MG") {
		s.fromKey = "MessagingServiceSid"
	}
	u, _ := url.Parse(c.BaseURL) // validate parsed it
	s.endpoint = u.JoinPath("2010-04-01", "Accounts", c.AccountSID, "Messages.json")
	if s.client == nil {
		s.client = defaultSMSClient(c.Concurrency)
	}
	return s, nil
}

// withDefaults returns a copy of c with the defaults filled in, BaseURL
// without a trailing slash, as the module's constructors all begin.
func (c *TwilioConfig) withDefaults() *TwilioConfig {
	out := *c
	if out.BaseURL == "" {
		out.BaseURL = "https://api.twilio.com"
	}
	out.BaseURL = strings.TrimRight(out.BaseURL, "/")
	if out.Concurrency == 0 {
		out.Concurrency = DefaultSMSConcurrency
	}
	return &out
}

// validate checks a TwilioConfig that withDefaults filled in.
func (c *TwilioConfig) validate() error {
	if c.AccountSID == "" || c.AuthToken == "" || c.From == "" {
		return errors.New("verify: TwilioConfig needs AccountSID, AuthToken and From")
	}
	if c.Concurrency < 0 {
		return errors.New("verify: TwilioConfig.Concurrency must not be negative")
	}
	if strings.ContainsAny(c.AccountSID, "/?#% \t\r\n") {
		return errors.New("verify: TwilioConfig.AccountSID is not an account SID")
	}
	if !strings.HasPrefix(c.From, "MG") && !addr.IsE164(c.From) {
		return fmt.Errorf("verify: TwilioConfig.From %q is neither an E.164 number nor a Messaging Service SID (MG...)", c.From)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" ||
		(u.Scheme != "https" && !(u.Scheme == "http" && addr.IsLoopbackHost(u.Hostname()))) {
		return errors.New("verify: TwilioConfig.BaseURL must be an absolute https URL (http only on a loopback host)")
	}
	return nil
}

// SendSMS asks Twilio to send m. It returns nil when Twilio answers 201
// Created, and an error otherwise: a number that is not E.164, Twilio
// unreachable or ctx ending first (an *SMSError wrapping the transport's
// error), any other answer (an *SMSError with Provider "twilio", the
// status, and Twilio's error code and message, e.g. 21211 for an invalid
// To, classified by a table of Twilio's documented codes). No error contains m.Text, which carries
// the code, nor m.To.
func (s *TwilioSMSSender) SendSMS(ctx context.Context, m SMS) error {
	if !addr.IsE164(m.To) {
		return fmt.Errorf("verify: SMS: %q is not an E.164 number", m.To)
	}
	form := url.Values{"To": {m.To}, s.fromKey: {s.from}, "Body": {m.Text}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("verify: Twilio: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(s.sid, s.token)
	status, reply, retryAfter, err := smsPost(s.client, req)
	if err != nil {
		return &SMSError{Provider: "twilio", Retryable: true, Err: err}
	}
	if status == http.StatusCreated {
		return nil
	}
	var t struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	e := &SMSError{Provider: "twilio", Status: status, Message: providerExcerpt(string(reply), m)}
	if json.Unmarshal(reply, &t) == nil && (t.Code != 0 || t.Message != "") {
		e.Message = providerExcerpt(t.Message, m)
		if t.Code != 0 {
			e.Code = strconv.Itoa(t.Code)
		}
	}
	c, known := twilioCodes[e.Code]
	e.classify(c, known, parseRetryAfter(retryAfter, time.Now()))
	return e
}

// twilioCodes classifies the error codes of Twilio's REST API that call
// for something other than what the HTTP status says
// (https://www.twilio.com/docs/api/errors): 20429, Too Many Requests, is
// throttled (Twilio answers it with a 429 too); 20500 and 20503, its
// internal error and unavailability, may pass later. Every other code is
// taken by the status: a 5xx retryable, a 429 throttled, anything else (an
// invalid number 21211, a refused credential 20003, ...) final.
var twilioCodes = map[string]smsClass{
	"20429": smsThrottled,
	"20500": smsRetry,
	"20503": smsRetry,
}

// smsPost sends req and returns the status, at most smsReplyLimit bytes
// of the reply, and its Retry-After header. A transport error is
// unwrapped from its *url.Error, whose text repeats the URL and with it
// any key in the query.
func smsPost(client *http.Client, req *http.Request) (status int, reply []byte, retryAfter string, err error) {
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	// The status decides; a reply cut short by a read error only loses
	// detail for an error's text. Closing without reading the rest may
	// cost the connection, but bounds what a gateway can make us read.
	reply, _ = io.ReadAll(io.LimitReader(resp.Body, smsReplyLimit))
	return resp.StatusCode, reply, resp.Header.Get("Retry-After"), nil
}

// maxSMSRetryAfter bounds the wait a provider's Retry-After header asks
// for: the longest window of a throttle that clears within the notices'
// schedule (an hourly per-number limit).
const maxSMSRetryAfter = time.Hour

// parseRetryAfter reads a Retry-After header, seconds or an HTTP date
// (RFC 9110 section 10.2.3), as a wait from now of at most
// maxSMSRetryAfter; 0 when there is none or it cannot be read.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(n, int64(maxSMSRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxSMSRetryAfter)
}

// excerpt quotes the start of a gateway's reply for an error, with m's
// number masked and its text and code cut out in case the gateway echoes
// them.
func excerpt(reply []byte, m SMS) string {
	s := maskNumber(string(reply), m.To)
	if m.Text != "" {
		s = strings.ReplaceAll(s, m.Text, "[text]")
	}
	if m.Code != "" {
		s = strings.ReplaceAll(s, m.Code, "[code]")
	}
	if len(s) > smsReplyExcerpt {
		s = s[:smsReplyExcerpt] + "..."
	}
	return strconv.Quote(s)
}

// maskNumber masks in s every run of at least 7 digits that ends the
// E.164 number to, as a provider may echo it: "+8613800138000",
// "8613800138000" or the national "13800138000" all become stars and the
// last four digits, as codes become [code]. It runs before the code is
// cut out, which could split the number into runs that no longer end it.
func maskNumber(s, to string) string {
	digits := strings.TrimPrefix(to, "+")
	if len(digits) < 7 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		if j == i {
			b.WriteByte(s[i])
			i++
			continue
		}
		run := s[i:j]
		if len(run) >= 7 && strings.HasSuffix(digits, run) {
			run = strings.Repeat("*", len(run)-4) + run[len(run)-4:]
		}
		b.WriteString(run)
		i = j
	}
	return b.String()
}

func statusText(status int) string {
	return strconv.Itoa(status) + " " + http.StatusText(status)
}

// redactURL is u without its query, which may carry a key.
func redactURL(u *url.URL) string {
	r := *u
	r.User, r.RawQuery, r.ForceQuery, r.Fragment = nil, "", false, ""
	return r.String()
}
