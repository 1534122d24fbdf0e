// Package mailer is a small SMTP client shared by the services that send
// e-mail (verify's codes, channel's e-mail events), so that none of them
// imports another. It wraps github.com/wneessen/go-mail.
//
// Each Send opens one connection, delivers one message and closes it: there
// is no pooling, which suits the low volume of codes and notices and keeps a
// dead connection from failing the next message.
package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/deskkit/deskkit/internal/addr"
)

// DefaultTimeout bounds one Send, dial included, when Config.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// TLSMode is how the connection to the server is secured.
type TLSMode string

// The TLS modes.
const (
	// TLSNone sends in clear text: for a relay on the same host or network.
	TLSNone TLSMode = "none"
	// TLSStartTLS upgrades the connection with STARTTLS (usually port 587)
	// and fails when the server does not offer it: an attacker who strips
	// the offer gets no clear-text mail and no password.
	TLSStartTLS TLSMode = "starttls"
	// TLSImplicit speaks TLS from the first byte (usually port 465).
	TLSImplicit TLSMode = "tls"
)

// ParseTLSMode parses "none", "starttls" or "tls", in any case.
func ParseTLSMode(s string) (TLSMode, error) {
	switch m := TLSMode(strings.ToLower(strings.TrimSpace(s))); m {
	case TLSNone, TLSStartTLS, TLSImplicit:
		return m, nil
	}
	return "", fmt.Errorf("mailer: TLS mode %q is not one of none, starttls, tls", s)
}

// Config is how to reach the mail server and whom mail comes from.
type Config struct {
	// Addr is the server's host:port. Required.
	Addr string
	// From is the sender, a valid address that may carry a display name:
	// "Deskkit <noreply@example.com>". Required.
	From string
	// Username and Password authenticate with SMTP AUTH when Username is
	// set, with the strongest mechanism go-mail finds the server to offer
	// (SCRAM, CRAM-MD5, PLAIN or LOGIN). A password is never sent over a
	// connection without TLS: New refuses TLSNone with a Username unless the
	// host is loopback (localhost, 127.0.0.0/8, ::1), where no one can
	// listen in between.
	Username string
	Password string
	// TLS is how the connection is secured; TLSStartTLS if "".
	TLS TLSMode
	// TLSConfig is the TLS client configuration, cloned; its ServerName
	// defaults to Addr's host and its MinVersion to TLS 1.2. Optional: tests
	// use it to trust a test CA through RootCAs.
	TLSConfig *tls.Config
	// Timeout bounds one Send from dial to the server's answer to the
	// message; DefaultTimeout if 0.
	Timeout time.Duration
	// HelloName is the name sent in EHLO; the machine's host name if "".
	HelloName string
}

// withDefaults returns a copy of c with the defaults filled in. New calls
// it, then validate on the copy, as every constructor of the module does.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.TLS == "" {
		out.TLS = TLSStartTLS
	}
	if out.Timeout == 0 {
		out.Timeout = DefaultTimeout
	}
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	host, portText, err := net.SplitHostPort(c.Addr)
	if err != nil || host == "" {
		return fmt.Errorf("mailer: Addr %q must be host:port", c.Addr)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("mailer: Addr %q has no valid port", c.Addr)
	}
	if c.From == "" {
		return errors.New("mailer: From is required")
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return fmt.Errorf("mailer: From %q is not a valid address", c.From)
	}
	switch c.TLS {
	case TLSNone, TLSStartTLS, TLSImplicit:
	default:
		return fmt.Errorf("mailer: TLS %q is not one of none, starttls, tls", c.TLS)
	}
	if c.Timeout < 0 {
		return errors.New("mailer: Timeout must not be negative")
	}
	if c.Username == "" && c.Password != "" {
		return errors.New("mailer: Password is set without a Username")
	}
	if c.Username != "" && c.TLS == TLSNone && !addr.IsLoopbackHost(host) {
		return fmt.Errorf("mailer: refusing to send a password in clear text to %s: use TLS starttls or tls", host)
	}
	if strings.ContainsAny(c.HelloName, " \r\n") {
		return fmt.Errorf("mailer: HelloName %q is not a host name", c.HelloName)
	}
	return nil
}

// Message is one e-mail.
type Message struct {
	// To are the recipients, each a valid address; at least one. All of
	// them appear in the To header: send one Message each to keep
	// recipients from seeing one another.
	To      []string
	Subject string // any text; non-ASCII is encoded (RFC 2047)
	Text    string // the plain-text body
	// HTML, when not "", is sent with Text as multipart/alternative.
	HTML string
	// Headers are extra header fields, e.g. "Auto-Submitted". They may not
	// name a field the Mailer writes itself (From, To, Subject, Date,
	// Content-Type, ...).
	Headers map[string]string
}

// Mailer sends e-mail through one SMTP server. It is safe for concurrent
// use.
type Mailer struct {
	cfg  Config
	host string
	port int
	from *mail.Address
	tls  *tls.Config
}

// New checks cfg and returns a Mailer. It does not connect.
func New(cfg Config) (*Mailer, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	// validate parsed both.
	host, portText, _ := net.SplitHostPort(c.Addr)
	port, _ := strconv.Atoi(portText)
	from, _ := mail.ParseAddress(c.From)
	tc := &tls.Config{}
	if c.TLSConfig != nil {
		tc = c.TLSConfig.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	if tc.MinVersion == 0 {
		tc.MinVersion = tls.VersionTLS12
	}
	c.TLSConfig = nil // m.tls is the one in use
	return &Mailer{cfg: *c, host: host, port: port, from: from, tls: tc}, nil
}

// reserved are the header fields the Mailer writes itself.
var reserved = map[string]bool{
	"From": true, "To": true, "Cc": true, "Bcc": true, "Sender": true, "Reply-To": true,
	"Subject": true, "Date": true, "Message-Id": true, "Mime-Version": true,
	"Content-Type": true, "Content-Transfer-Encoding": true, "Content-Disposition": true,
}

// Send delivers msg: it returns nil once the server has accepted it, and an
// error otherwise — a bad message, a server that cannot be reached, refuses
// STARTTLS, the credentials, the sender or a recipient, or ctx or the
// Timeout ending first (the error then wraps ctx's error, or
// context.DeadlineExceeded for the Timeout).
func (m *Mailer) Send(ctx context.Context, msg Message) error {
	gm, err := m.build(msg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, m.cfg.Timeout,
		fmt.Errorf("mailer: no answer from %s within %v: %w", m.cfg.Addr, m.cfg.Timeout, context.DeadlineExceeded))
	defer cancel()

	d := &dialer{ctx: ctx, tls: m.tls, implicit: m.cfg.TLS == TLSImplicit}
	defer d.close()
	client, err := gomail.NewClient(m.host, m.options(d)...)
	if err != nil {
		return fmt.Errorf("mailer: %w", err)
	}
	sc, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return m.fail(ctx, "connect", err)
	}
	if err := client.SendWithSMTPClient(sc, gm); err != nil {
		return m.fail(ctx, "send", err)
	}
	// The server has the message; a failing QUIT does not undo that.
	_ = client.CloseWithSMTPClient(sc)
	return nil
}

// fail describes err, wrapping ctx's cause when ctx ended: go-mail only
// sees the closed connection.
func (m *Mailer) fail(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("mailer: %s via %s: %w: %w", step, m.cfg.Addr, context.Cause(ctx), err)
	}
	return fmt.Errorf("mailer: %s via %s: %w", step, m.cfg.Addr, err)
}

func (m *Mailer) options(d *dialer) []gomail.Option {
	opts := []gomail.Option{
		gomail.WithPort(m.port),
		// go-mail's per-command deadline: later than Send's, which
		// covers it all, so that a timeout always wraps Send's cause.
		gomail.WithTimeout(m.cfg.Timeout + time.Second),
		gomail.WithTLSConfig(m.tls),
		gomail.WithDialContextFunc(d.dial),
	}
	if m.cfg.HelloName != "" {
		opts = append(opts, gomail.WithHELO(m.cfg.HelloName))
	}
	switch m.cfg.TLS {
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSImplicit:
		// The dialer does the TLS handshake. go-mail's own implicit TLS
		// (WithSSL) would bypass the dialer, and with the policy
		// NoTLS it would take the connection as unencrypted and refuse
		// PLAIN and LOGIN; opportunistic sees no STARTTLS offer on a TLS
		// connection and finds the connection encrypted.
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if m.cfg.Username != "" {
		opts = append(opts, gomail.WithUsername(m.cfg.Username), gomail.WithPassword(m.cfg.Password))
		if m.cfg.TLS == TLSNone {
			// Loopback only (New checked): go-mail's discovery leaves
			// PLAIN and LOGIN out without TLS, so name them.
			opts = append(opts, gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlainNoEnc, gomail.SMTPAuthLoginNoEnc))
		} else {
			opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover))
		}
	}
	return opts
}

func (m *Mailer) build(msg Message) (*gomail.Msg, error) {
	if len(msg.To) == 0 {
		return nil, errors.New("mailer: the message has no recipient")
	}
	gm := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	gm.FromMailAddress(m.from)
	for _, to := range msg.To {
		if err := gm.AddTo(to); err != nil {
			return nil, fmt.Errorf("mailer: recipient %q is not a valid address", to)
		}
	}
	gm.Subject(msg.Subject)
	for name, value := range msg.Headers {
		if !validFieldName(name) {
			return nil, fmt.Errorf("mailer: %q is not a header field name", name)
		}
		if reserved[textproto.CanonicalMIMEHeaderKey(name)] {
			return nil, fmt.Errorf("mailer: header %s is written by the mailer", name)
		}
		gm.SetGenHeader(gomail.Header(name), value)
	}
	gm.SetBodyString(gomail.TypeTextPlain, msg.Text)
	if msg.HTML != "" {
		gm.AddAlternativeString(gomail.TypeTextHTML, msg.HTML)
	}
	return gm, nil
}

// validFieldName reports whether s is an RFC 5322 field name: printable
// ASCII but colon.
func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 33 || s[i] > 126 || s[i] == ':' {
			return false
		}
	}
	return true
}

// dialer opens Send's connection so that ctx governs all of it: go-mail
// honours ctx only while dialing and then relies on its per-command
// timeout, so the dialer closes the connection when ctx ends.
type dialer struct {
	ctx      context.Context
	tls      *tls.Config
	implicit bool

	raw  net.Conn
	stop func() bool
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	raw, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.close() // go-mail dials once a Send; be safe if it ever dials again
	d.raw = raw
	d.stop = context.AfterFunc(d.ctx, func() { _ = raw.Close() })
	if !d.implicit {
		return raw, nil
	}
	tc := tls.Client(raw, d.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return tc, nil
}

// close releases the connection, which go-mail leaves open when a step
// after the dial fails.
func (d *dialer) close() {
	if d.stop != nil {
		d.stop()
	}
	if d.raw != nil {
		_ = d.raw.Close()
	}
}
