// Package smtptest runs a real SMTP server on loopback for tests, over
// github.com/emersion/go-smtp: it speaks the protocol as a mail relay does
// (STARTTLS, implicit TLS, AUTH PLAIN, refusals) and records what it
// accepts, so that a test sees the exact envelope and message a sender
// wrote. Message.Parse reads a message back as a mail reader would.
//
// CA makes the TLS configurations for both ends, and StartSilent a listener
// that never answers, for tests of deadlines and cancellation.
package smtptest

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Config says how a Server listens and whom it lets in. The zero value is
// a server in clear text that takes mail from anyone.
type Config struct {
	// Users are username -> password. When set, the server offers AUTH
	// PLAIN and refuses MAIL FROM until a user has authenticated.
	Users map[string]string
	// InsecureAuth offers AUTH on a connection without TLS, as a relay on
	// loopback may; without it AUTH waits for TLS.
	InsecureAuth bool
	// StartTLS, when set, is offered with STARTTLS.
	StartTLS *tls.Config
	// ImplicitTLS, when set, makes the server speak TLS from the first
	// byte (as on port 465).
	ImplicitTLS *tls.Config
}

// Server is a running SMTP server. It is safe for concurrent use.
type Server struct {
	Addr string // host:port on 127.0.0.1

	users map[string]string

	mu       sync.Mutex
	messages []Message
	reject   *smtp.SMTPError
	arrived  chan struct{} // closed at the next accepted message; see Await
}

// Start starts a server with the zero Config on 127.0.0.1, closed when t
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartConfig(t, nil)
}

// StartConfig starts a server configured by cfg (nil for the zero Config)
// on 127.0.0.1, closed when t ends.
func StartConfig(t testing.TB, cfg *Config) *Server {
	t.Helper()
	if cfg == nil {
		cfg = &Config{}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ImplicitTLS != nil {
		ln = tls.NewListener(ln, cfg.ImplicitTLS)
	}
	s := &Server{Addr: ln.Addr().String(), users: cfg.Users}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.TLSConfig = cfg.StartTLS
	srv.AllowInsecureAuth = cfg.InsecureAuth
	// Failed handshakes are what some tests are about: not noise.
	srv.ErrorLog = log.New(io.Discard, "", 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ends with Close
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		// A Close that comes before Serve has taken the listener does
		// not stop it: closing the listener does.
		_ = ln.Close()
		<-done
	})
	return s
}

// Reject makes the server refuse every recipient with code and message
// (550, "mailbox unavailable"); Reject(0, "") accepts again.
func (s *Server) Reject(code int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject = nil
	if code != 0 {
		s.reject = &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCodeNotSet, Message: msg}
	}
}

// Messages returns what the server accepted so far, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Await waits until ok holds for the messages accepted so far (it is asked
// again at each new message), or until timeout, and reports whether it
// held. For messages sent in the background, such as from an outbox.
func (s *Server) Await(timeout time.Duration, ok func([]Message) bool) bool {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		if s.arrived == nil {
			s.arrived = make(chan struct{})
		}
		next := s.arrived
		msgs := append([]Message(nil), s.messages...)
		s.mu.Unlock()
		if ok(msgs) {
			return true
		}
		select {
		case <-next:
		case <-deadline:
			return false
		}
	}
}

// To returns the messages to address, oldest first.
func (s *Server) To(address string) []Message {
	var out []Message
	for _, m := range s.Messages() {
		for _, to := range m.To {
			if to == address {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// NewSession implements smtp.Backend. go-smtp calls it after EHLO, again
// after STARTTLS, so the session knows whether the connection is
// encrypted.
func (s *Server) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	return &session{s: s, helo: c.Hostname(), tls: isTLS}, nil
}

type session struct {
	s    *Server
	helo string
	tls  bool
	user string // who authenticated; kept across RSET, as SMTP does
	from string
	to   []string
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	if ss.s.users == nil {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if want, ok := ss.s.users[username]; !ok || want != password {
			return smtp.ErrAuthFailed
		}
		ss.user = username
		return nil
	}), nil
}

func (ss *session) Reset()        { ss.from, ss.to = "", nil }
func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.users != nil && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	if ss.s.reject != nil {
		return ss.s.reject
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := Message{Helo: ss.helo, TLS: ss.tls, User: ss.user, From: ss.from, To: ss.to, Data: b}
	ss.s.mu.Lock()
	ss.s.messages = append(ss.s.messages, m)
	if ss.s.arrived != nil {
		close(ss.s.arrived)
		ss.s.arrived = nil
	}
	ss.s.mu.Unlock()
	return nil
}
