package verify_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/verify"
)

// smtpTestMessage is one message as the test server got it.
type smtpTestMessage struct {
	User     string
	TLS      bool
	MailFrom string
	RcptTo   []string
	Data     []byte
}

// smtpTestBackend records what the server receives. With users set it
// offers AUTH PLAIN and wants it before MAIL FROM.
type smtpTestBackend struct {
	users map[string]string

	mu   sync.Mutex
	msgs []smtpTestMessage
}

func (b *smtpTestBackend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	return &smtpTestSession{b: b, tls: isTLS}, nil
}

func (b *smtpTestBackend) received() []smtpTestMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]smtpTestMessage(nil), b.msgs...)
}

type smtpTestSession struct {
	b    *smtpTestBackend
	tls  bool
	user string
	from string
	to   []string
}

var _ smtp.AuthSession = (*smtpTestSession)(nil)

func (s *smtpTestSession) AuthMechanisms() []string {
	if s.b.users == nil {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *smtpTestSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if want, ok := s.b.users[username]; !ok || want != password {
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}

func (s *smtpTestSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.b.users != nil && s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *smtpTestSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *smtpTestSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, smtpTestMessage{User: s.user, TLS: s.tls, MailFrom: s.from, RcptTo: s.to, Data: data})
	s.b.mu.Unlock()
	return nil
}

func (s *smtpTestSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpTestSession) Logout() error { return nil }

// startSMTPTestServer runs an SMTP server on 127.0.0.1, offering STARTTLS
// when startTLS is set, and returns its address.
func startSMTPTestServer(t *testing.T, startTLS *tls.Config, users map[string]string) (string, *smtpTestBackend) {
	t.Helper()
	be := &smtpTestBackend{users: users}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := smtp.NewServer(be)
	s.Domain = "localhost"
	s.TLSConfig = startTLS
	s.ErrorLog = log.New(io.Discard, "", 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(l)
	}()
	t.Cleanup(func() {
		_ = s.Close()
		<-done
	})
	return l.Addr().String(), be
}

// smtpTestCA makes a self-signed certificate for 127.0.0.1: the server's
// TLS config and a client config that trusts it.
func smtpTestCA(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool}
}

// smtpTestParsed is a received message as a mail reader shows it.
type smtpTestParsed struct {
	From, To, Subject, AutoSubmitted string
	Parts                            map[string]string // media type -> decoded body
}

func parseSMTPTestMessage(t *testing.T, data []byte) smtpTestParsed {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("read message: %v\n%s", err, data)
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	p := smtpTestParsed{
		From: msg.Header.Get("From"), To: msg.Header.Get("To"), Subject: subject,
		AutoSubmitted: msg.Header.Get("Auto-Submitted"), Parts: map[string]string{},
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	if mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type %q, want multipart/alternative", mediaType)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart() // decodes quoted-printable
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(part)
		if err != nil {
			t.Fatal(err)
		}
		pt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		p.Parts[pt] = string(body)
	}
	return p
}

func TestSMTPMailerSendMail(t *testing.T) {
	serverTLS, clientTLS := smtpTestCA(t)
	addr, be := startSMTPTestServer(t, serverTLS, map[string]string{"ann": "s3cret"})
	m, err := verify.NewSMTPMailer(verify.SMTPConfig{
		Addr:      addr,
		From:      "Deskkit <noreply@deskkit.test>",
		Username:  "ann",
		Password:  "s3cret",
		TLS:       verify.SMTPTLSStartTLS,
		TLSConfig: clientTLS,
		HelloName: "client.deskkit.test",
	})
	if err != nil {
		t.Fatal(err)
	}
	err = m.SendMail(context.Background(), verify.Mail{
		To:      "bob@example.com",
		Subject: "Bestätigung 验证码",
		Text:    "Code: 482913",
		HTML:    "<p>Code: <b>482913</b></p>",
		BizKey:  verify.BindEmail,
		Code:    "482913",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := be.received()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	envelope := got[0]
	envelope.Data = nil
	if diff := cmp.Diff(smtpTestMessage{User: "ann", TLS: true, MailFrom: "noreply@deskkit.test", RcptTo: []string{"bob@example.com"}}, envelope); diff != "" {
		t.Errorf("envelope (-want +got):\n%s", diff)
	}
	want := smtpTestParsed{
		From:          `"Deskkit" <noreply@deskkit.test>`,
		To:            "<bob@example.com>",
		Subject:       "Bestätigung 验证码",
		AutoSubmitted: "auto-generated",
		Parts:         map[string]string{"text/plain": "Code: 482913", "text/html": "<p>Code: <b>482913</b></p>"},
	}
	if diff := cmp.Diff(want, parseSMTPTestMessage(t, got[0].Data)); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestSMTPMailerErrors(t *testing.T) {
	_, clientTLS := smtpTestCA(t)
	plainAddr, plainBackend := startSMTPTestServer(t, nil, nil)

	t.Run("starttls refused", func(t *testing.T) {
		m, err := verify.NewSMTPMailer(verify.SMTPConfig{Addr: plainAddr, From: "noreply@deskkit.test", TLSConfig: clientTLS})
		if err != nil {
			t.Fatal(err)
		}
		err = m.SendMail(context.Background(), verify.Mail{To: "bob@example.com", Subject: "s", Text: "t"})
		if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
			t.Fatalf("SendMail error = %v, want one about STARTTLS", err)
		}
		if n := len(plainBackend.received()); n != 0 {
			t.Errorf("server received %d messages, want none", n)
		}
	})
	t.Run("ctx deadline", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never greets
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		m, err := verify.NewSMTPMailer(verify.SMTPConfig{Addr: l.Addr().String(), From: "noreply@deskkit.test", TLS: verify.SMTPTLSNone, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err = m.SendMail(ctx, verify.Mail{To: "bob@example.com", Subject: "s", Text: "t"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("SendMail error = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestNewSMTPMailerValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     verify.SMTPConfig
		wantErr string // "" for valid
	}{
		{"starttls", verify.SMTPConfig{Addr: "mail.example.com:587", From: "noreply@example.com", Username: "ann", Password: "pw"}, ""},
		{"implicit", verify.SMTPConfig{Addr: "mail.example.com:465", From: "noreply@example.com", TLS: verify.SMTPTLSImplicit, Username: "ann"}, ""},
		{"clear text to loopback", verify.SMTPConfig{Addr: "127.0.0.1:25", From: "noreply@example.com", TLS: verify.SMTPTLSNone, Username: "ann"}, ""},
		{"password in clear text", verify.SMTPConfig{Addr: "mail.example.com:25", From: "noreply@example.com", TLS: verify.SMTPTLSNone, Username: "ann", Password: "pw"}, "clear text"},
		{"unknown TLS", verify.SMTPConfig{Addr: "mail.example.com:25", From: "noreply@example.com", TLS: "ssl"}, "TLS"},
		{"no From", verify.SMTPConfig{Addr: "mail.example.com:25"}, "From"},
		{"no Addr", verify.SMTPConfig{From: "noreply@example.com"}, "Addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := verify.NewSMTPMailer(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewSMTPMailer error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
