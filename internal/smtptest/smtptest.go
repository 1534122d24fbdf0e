// Package smtptest runs a real SMTP server on loopback for tests, over
// github.com/emersion/go-smtp: it speaks the protocol as a mail relay does
// and records what it accepts, so that a test sees the exact message a
// sender wrote.
package smtptest

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	Data []byte // as received, headers and body
}

// Header parses the message's header.
func (m Message) Header() (mail.Header, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return nil, err
	}
	return msg.Header, nil
}

// Subject is the decoded Subject header.
func (m Message) Subject() string {
	h, err := m.Header()
	if err != nil {
		return ""
	}
	s, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil {
		return h.Get("Subject")
	}
	return s
}

// Parts returns the bodies by media type ("text/plain", "text/html"):
// the message's own body, or the parts of a multipart one.
func (m Message) Parts() (map[string]string, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return nil, err
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if !strings.HasPrefix(mt, "multipart/") {
		b, err := decode(msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
		out[mt] = b
		return out, err
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		// multipart.Reader undoes quoted-printable itself.
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		out[pt] = string(b)
	}
}

func decode(cte string, r io.Reader) (string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	if strings.EqualFold(cte, "quoted-printable") {
		b, err = io.ReadAll(quotedprintable.NewReader(bytes.NewReader(b)))
	}
	return string(b), err
}

// Server is a running SMTP server.
type Server struct {
	Addr string // host:port on 127.0.0.1

	mu       sync.Mutex
	messages []Message
	reject   *smtp.SMTPError
}

// Start starts a server on 127.0.0.1, closed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String()}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.AllowInsecureAuth = true
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
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

// Messages returns what the server accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// To returns the messages to address, oldest first.
func (s *Server) To(address string) []Message {
	var out []Message
	for _, m := range s.Messages() {
		for _, to := range m.To {
			if to == address {
				out = append(out, m)
			}
		}
	}
	return out
}

// NewSession implements smtp.Backend.
func (s *Server) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &session{s: s}, nil
}

type session struct {
	s   *Server
	msg Message
}

func (ss *session) Reset()        { ss.msg = Message{} }
func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	ss.msg.From = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	if ss.s.reject != nil {
		return ss.s.reject
	}
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.msg.Data = b
	ss.s.mu.Lock()
	ss.s.messages = append(ss.s.messages, ss.msg)
	ss.s.mu.Unlock()
	return nil
}
