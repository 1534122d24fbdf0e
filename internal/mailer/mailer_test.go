package mailer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"
)

// received is one message as the test server got it.
type received struct {
	Helo     string
	User     string // "" without AUTH
	TLS      bool
	MailFrom string
	RcptTo   []string
	Data     []byte
}

// backend is a go-smtp backend that records what it receives.
type backend struct {
	users      map[string]string // username -> password; AUTH PLAIN is offered when set
	rejectRcpt bool

	mu   sync.Mutex
	msgs []received
}

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	return &session{b: b, cur: received{Helo: c.Hostname(), TLS: isTLS}}, nil
}

func (b *backend) received() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.msgs...)
}

type session struct {
	b    *backend
	user string
	cur  received
}

var _ smtp.AuthSession = (*session)(nil)

func (s *session) AuthMechanisms() []string {
	if s.b.users == nil {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if want, ok := s.b.users[username]; !ok || want != password {
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.b.users != nil && s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.cur.MailFrom = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.b.rejectRcpt {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"}
	}
	s.cur.RcptTo = append(s.cur.RcptTo, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := s.cur
	m.User = s.user
	m.Data = data
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, m)
	s.b.mu.Unlock()
	return nil
}

func (s *session) Reset() {
	s.cur = received{Helo: s.cur.Helo, TLS: s.cur.TLS}
}

func (s *session) Logout() error { return nil }

// serverOptions say how the test server listens.
type serverOptions struct {
	startTLS   *tls.Config // offer STARTTLS with this config
	implicit   *tls.Config // speak TLS from the first byte
	users      map[string]string
	insecure   bool // allow AUTH without TLS
	rejectRcpt bool
}

// startServer runs an SMTP server on 127.0.0.1 for the test and returns
// its address.
func startServer(t *testing.T, o serverOptions) (string, *backend) {
	t.Helper()
	be := &backend{users: o.users, rejectRcpt: o.rejectRcpt}
	var l net.Listener
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.implicit != nil {
		l = tls.NewListener(l, o.implicit)
	}
	s := smtp.NewServer(be)
	s.Domain = "localhost"
	s.TLSConfig = o.startTLS
	s.AllowInsecureAuth = o.insecure
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

// testCA makes a self-signed certificate for 127.0.0.1 and localhost: the
// server's TLS config, and a client config trusting it.
func testCA(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "deskkit test"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
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
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return server, &tls.Config{RootCAs: pool}
}

func newMailer(t *testing.T, cfg Config) *Mailer {
	t.Helper()
	if cfg.From == "" {
		cfg.From = "Deskkit <noreply@deskkit.test>"
	}
	if cfg.HelloName == "" {
		cfg.HelloName = "client.deskkit.test"
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parsed is a received message, decoded.
type parsed struct {
	From, To, Subject string
	Header            map[string]string // the extra headers asked for
	Parts             []part
}

type part struct {
	ContentType string
	Body        string
}

// parse decodes data with net/mail and mime/multipart, as a mail reader
// would, keeping the headers named in extra.
func parse(t *testing.T, data []byte, extra ...string) parsed {
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
	p := parsed{From: msg.Header.Get("From"), To: msg.Header.Get("To"), Subject: subject}
	for _, name := range extra {
		if p.Header == nil {
			p.Header = map[string]string{}
		}
		p.Header[name] = msg.Header.Get(name)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		body := readBody(t, msg.Body, msg.Header.Get("Content-Transfer-Encoding"))
		body = strings.TrimSuffix(body, "\n") // the line end before DATA's final dot
		p.Parts = []part{{ContentType: mediaType + "; charset=" + params["charset"], Body: body}}
		return p
	}
	p.Parts = append(p.Parts, part{ContentType: mediaType})
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		mp, err := mr.NextPart() // decodes quoted-printable by itself
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, mp, mp.Header.Get("Content-Transfer-Encoding"))
		p.Parts = append(p.Parts, part{ContentType: mp.Header.Get("Content-Type"), Body: body})
	}
	return p
}

func readBody(t *testing.T, r io.Reader, encoding string) string {
	t.Helper()
	if strings.EqualFold(encoding, "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

func TestMailerSendPlain(t *testing.T) {
	addr, be := startServer(t, serverOptions{})
	m := newMailer(t, Config{Addr: addr, TLS: TLSNone})

	err := m.Send(context.Background(), Message{
		To:      []string{"ann@example.com"},
		Subject: "Your code",
		Text:    "Your code is 123456.\nIt expires in 10 minutes.",
		Headers: map[string]string{"Auto-Submitted": "auto-generated"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := be.received()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	envelope := received{Helo: got[0].Helo, TLS: got[0].TLS, MailFrom: got[0].MailFrom, RcptTo: got[0].RcptTo}
	wantEnvelope := received{Helo: "client.deskkit.test", TLS: false, MailFrom: "noreply@deskkit.test", RcptTo: []string{"ann@example.com"}}
	if diff := cmp.Diff(wantEnvelope, envelope); diff != "" {
		t.Errorf("envelope (-want +got):\n%s", diff)
	}
	want := parsed{
		From:    `"Deskkit" <noreply@deskkit.test>`,
		To:      "<ann@example.com>",
		Subject: "Your code",
		Header:  map[string]string{"Auto-Submitted": "auto-generated"},
		Parts:   []part{{ContentType: "text/plain; charset=UTF-8", Body: "Your code is 123456.\nIt expires in 10 minutes."}},
	}
	if diff := cmp.Diff(want, parse(t, got[0].Data, "Auto-Submitted")); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestMailerSendMultipart(t *testing.T) {
	addr, be := startServer(t, serverOptions{})
	m := newMailer(t, Config{Addr: addr, TLS: TLSNone, From: "Bestätigung <noreply@deskkit.test>"})

	err := m.Send(context.Background(), Message{
		To:      []string{"ann@example.com", "bob@example.com"},
		Subject: "Bestätigung 验证码",
		Text:    "Ihr Code: 654321 — 验证码",
		HTML:    "<p>Ihr Code: <b>654321</b> — 验证码</p>",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := be.received()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	if diff := cmp.Diff([]string{"ann@example.com", "bob@example.com"}, got[0].RcptTo); diff != "" {
		t.Errorf("RCPT TO (-want +got):\n%s", diff)
	}
	p := parse(t, got[0].Data)
	from, err := mail.ParseAddress(p.From)
	if err != nil {
		t.Fatalf("From %q: %v", p.From, err)
	}
	if diff := cmp.Diff(&mail.Address{Name: "Bestätigung", Address: "noreply@deskkit.test"}, from); diff != "" {
		t.Errorf("From (-want +got):\n%s", diff)
	}
	p.From = ""
	want := parsed{
		To:      "<ann@example.com>, <bob@example.com>",
		Subject: "Bestätigung 验证码",
		Parts: []part{
			{ContentType: "multipart/alternative"},
			{ContentType: "text/plain; charset=UTF-8", Body: "Ihr Code: 654321 — 验证码"},
			{ContentType: "text/html; charset=UTF-8", Body: "<p>Ihr Code: <b>654321</b> — 验证码</p>"},
		},
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestMailerTLS(t *testing.T) {
	serverTLS, clientTLS := testCA(t)
	tests := []struct {
		name     string
		server   serverOptions
		cfg      Config
		wantErr  string // "" for success
		wantUser string
	}{
		{
			name:   "starttls",
			server: serverOptions{startTLS: serverTLS},
			cfg:    Config{TLS: TLSStartTLS, TLSConfig: clientTLS},
		},
		{
			name:   "starttls is the default",
			server: serverOptions{startTLS: serverTLS},
			cfg:    Config{TLSConfig: clientTLS},
		},
		{
			name:   "implicit TLS",
			server: serverOptions{implicit: serverTLS},
			cfg:    Config{TLS: TLSImplicit, TLSConfig: clientTLS},
		},
		{
			name:     "starttls with AUTH PLAIN",
			server:   serverOptions{startTLS: serverTLS, users: map[string]string{"ann": "s3cret"}},
			cfg:      Config{TLS: TLSStartTLS, TLSConfig: clientTLS, Username: "ann", Password: "s3cret"},
			wantUser: "ann",
		},
		{
			name:     "implicit TLS with AUTH PLAIN",
			server:   serverOptions{implicit: serverTLS, users: map[string]string{"ann": "s3cret"}},
			cfg:      Config{TLS: TLSImplicit, TLSConfig: clientTLS, Username: "ann", Password: "s3cret"},
			wantUser: "ann",
		},
		{
			name:     "AUTH PLAIN without TLS on loopback",
			server:   serverOptions{users: map[string]string{"ann": "s3cret"}, insecure: true},
			cfg:      Config{TLS: TLSNone, Username: "ann", Password: "s3cret"},
			wantUser: "ann",
		},
		{
			name:    "refused credentials",
			server:  serverOptions{startTLS: serverTLS, users: map[string]string{"ann": "s3cret"}},
			cfg:     Config{TLS: TLSStartTLS, TLSConfig: clientTLS, Username: "ann", Password: "wrong"},
			wantErr: "SMTP AUTH failed",
		},
		{
			name:    "starttls against a server without STARTTLS",
			server:  serverOptions{},
			cfg:     Config{TLS: TLSStartTLS, TLSConfig: clientTLS},
			wantErr: "does not support STARTTLS",
		},
		{
			name:    "starttls with an untrusted certificate",
			server:  serverOptions{startTLS: serverTLS},
			cfg:     Config{TLS: TLSStartTLS},
			wantErr: "certificate",
		},
		{
			name:    "implicit TLS with an untrusted certificate",
			server:  serverOptions{implicit: serverTLS},
			cfg:     Config{TLS: TLSImplicit},
			wantErr: "certificate",
		},
		{
			name:    "recipient refused",
			server:  serverOptions{rejectRcpt: true},
			cfg:     Config{TLS: TLSNone},
			wantErr: "550",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, be := startServer(t, tt.server)
			tt.cfg.Addr = addr
			m := newMailer(t, tt.cfg)
			err := m.Send(context.Background(), Message{To: []string{"ann@example.com"}, Subject: "Hi", Text: "code 111222"})
			got := be.received()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Send error = %v, want one containing %q", err, tt.wantErr)
				}
				if len(got) != 0 {
					t.Errorf("server received %d messages, want none", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("server received %d messages, want 1", len(got))
			}
			wantTLS := tt.cfg.TLS != TLSNone
			if got[0].TLS != wantTLS || got[0].User != tt.wantUser {
				t.Errorf("server saw TLS %v, user %q; want TLS %v, user %q", got[0].TLS, got[0].User, wantTLS, tt.wantUser)
			}
			if body := parse(t, got[0].Data).Parts[0].Body; body != "code 111222" {
				t.Errorf("body = %q", body)
			}
		})
	}
}

// silentListener accepts connections and never says a word.
func silentListener(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			ch <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String(), ch
}

func TestMailerContext(t *testing.T) {
	addr, accepted := silentListener(t)
	// Timeout is long: only ctx may end these sends.
	m := newMailer(t, Config{Addr: addr, TLS: TLSNone, Timeout: time.Minute})
	msg := Message{To: []string{"ann@example.com"}, Text: "hi"}

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := m.Send(ctx, msg)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Send error = %v, want context.DeadlineExceeded", err)
		}
		if elapsed := time.Since(start); elapsed > 20*time.Second {
			t.Errorf("Send took %v after a 50ms deadline", elapsed)
		}
	})
	t.Run("cancelled while waiting for the greeting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-accepted
			cancel()
		}()
		err := m.Send(ctx, msg)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Send error = %v, want context.Canceled", err)
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := m.Send(ctx, msg); !errors.Is(err, context.Canceled) {
			t.Fatalf("Send error = %v, want context.Canceled", err)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		m := newMailer(t, Config{Addr: addr, TLS: TLSNone, Timeout: 50 * time.Millisecond})
		err := m.Send(context.Background(), msg)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "within 50ms") {
			t.Fatalf("Send error = %v, want the Timeout's", err)
		}
	})
}

func TestMailerNewValidates(t *testing.T) {
	valid := Config{Addr: "mail.example.com:587", From: "noreply@example.com"}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string // "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"password over starttls", func(c *Config) { c.Username, c.Password = "ann", "pw" }, ""},
		{"password over implicit TLS", func(c *Config) { c.TLS, c.Username, c.Password = TLSImplicit, "ann", "pw" }, ""},
		{"password in clear to loopback", func(c *Config) { c.Addr, c.TLS, c.Username = "127.0.0.1:25", TLSNone, "ann" }, ""},
		{"password in clear to localhost", func(c *Config) { c.Addr, c.TLS, c.Username = "localhost:25", TLSNone, "ann" }, ""},
		{"password in clear to ::1", func(c *Config) { c.Addr, c.TLS, c.Username = "[::1]:25", TLSNone, "ann" }, ""},
		{"password in clear to a remote host", func(c *Config) { c.Addr, c.TLS, c.Username = "mail.example.com:25", TLSNone, "ann" }, "refusing to send a password in clear text"},
		{"no Addr", func(c *Config) { c.Addr = "" }, "Addr"},
		{"Addr without port", func(c *Config) { c.Addr = "mail.example.com" }, "Addr"},
		{"Addr with a bad port", func(c *Config) { c.Addr = "mail.example.com:0" }, "port"},
		{"no From", func(c *Config) { c.From = "" }, "From is required"},
		{"bad From", func(c *Config) { c.From = "not an address" }, "From"},
		{"bad TLS", func(c *Config) { c.TLS = "ssl" }, "TLS"},
		{"negative Timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout"},
		{"Password without Username", func(c *Config) { c.Password = "pw" }, "Username"},
		{"bad HelloName", func(c *Config) { c.HelloName = "a\r\nRSET" }, "HelloName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.change(&cfg)
			_, err := New(cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMailerSendValidatesMessage(t *testing.T) {
	// Nothing listens here: each message must fail before any dial.
	m := newMailer(t, Config{Addr: "127.0.0.1:1", TLS: TLSNone})
	tests := []struct {
		name    string
		msg     Message
		wantErr string
	}{
		{"no recipient", Message{Text: "x"}, "no recipient"},
		{"bad recipient", Message{To: []string{"nobody"}}, `recipient "nobody"`},
		{"bad header name", Message{To: []string{"a@example.com"}, Headers: map[string]string{"X-A: b\r\nBcc": "c"}}, "not a header field name"},
		{"reserved header", Message{To: []string{"a@example.com"}, Headers: map[string]string{"bcc": "eve@example.com"}}, "written by the mailer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.Send(context.Background(), tt.msg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Send error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMailerParseTLSMode(t *testing.T) {
	tests := []struct {
		in      string
		want    TLSMode
		wantErr bool
	}{
		{"none", TLSNone, false},
		{"starttls", TLSStartTLS, false},
		{"tls", TLSImplicit, false},
		{" STARTTLS ", TLSStartTLS, false},
		{"", "", true},
		{"ssl", "", true},
	}
	for _, tt := range tests {
		got, err := ParseTLSMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseTLSMode(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
