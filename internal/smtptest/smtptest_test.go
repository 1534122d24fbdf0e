package smtptest_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/internal/smtptest"
)

const body = "Subject: hi\r\n\r\nhello\r\n"

// send delivers body from ann to the recipients over c, authenticating
// first when user is set, and closes c.
func send(c *smtp.Client, user, password string, to ...string) error {
	defer c.Close()
	if user != "" {
		if err := c.Auth(sasl.NewPlainClient("", user, password)); err != nil {
			return err
		}
	}
	if err := c.SendMail("ann@example.com", to, strings.NewReader(body)); err != nil {
		return err
	}
	return c.Quit()
}

func TestSMTPServer(t *testing.T) {
	serverTLS, clientTLS := smtptest.CA(t)
	users := map[string]string{"ann": "s3cret"}
	plain := func(addr string) (*smtp.Client, error) {
		c, err := smtp.Dial(addr)
		if err == nil {
			err = c.Hello("client.smtptest")
		}
		return c, err
	}
	startTLS := func(addr string) (*smtp.Client, error) { return smtp.DialStartTLS(addr, clientTLS) }
	implicitTLS := func(addr string) (*smtp.Client, error) { return smtp.DialTLS(addr, clientTLS) }
	tests := []struct {
		name           string
		cfg            *smtptest.Config
		dial           func(addr string) (*smtp.Client, error)
		user, password string
		want           *smtptest.Message // nil: refused
		wantCode       int               // the refusal's
	}{
		{
			name: "plain", dial: plain,
			want: &smtptest.Message{Helo: "client.smtptest", From: "ann@example.com", To: []string{"bob@example.com"}},
		},
		{
			name: "STARTTLS with AUTH", cfg: &smtptest.Config{StartTLS: serverTLS, Users: users}, dial: startTLS,
			user: "ann", password: "s3cret",
			want: &smtptest.Message{Helo: "localhost", TLS: true, User: "ann", From: "ann@example.com", To: []string{"bob@example.com"}},
		},
		{
			name: "implicit TLS with AUTH", cfg: &smtptest.Config{ImplicitTLS: serverTLS, Users: users}, dial: implicitTLS,
			user: "ann", password: "s3cret",
			want: &smtptest.Message{Helo: "localhost", TLS: true, User: "ann", From: "ann@example.com", To: []string{"bob@example.com"}},
		},
		{
			name: "AUTH without TLS when insecure", cfg: &smtptest.Config{Users: users, InsecureAuth: true}, dial: plain,
			user: "ann", password: "s3cret",
			want: &smtptest.Message{Helo: "client.smtptest", User: "ann", From: "ann@example.com", To: []string{"bob@example.com"}},
		},
		{
			name: "no AUTH without TLS", cfg: &smtptest.Config{Users: users}, dial: plain,
			user: "ann", password: "s3cret", wantCode: 523,
		},
		{
			name: "wrong password", cfg: &smtptest.Config{StartTLS: serverTLS, Users: users}, dial: startTLS,
			user: "ann", password: "wrong", wantCode: 535,
		},
		{
			name: "MAIL before AUTH", cfg: &smtptest.Config{StartTLS: serverTLS, Users: users}, dial: startTLS,
			wantCode: 502,
		},
		{
			name: "untrusted certificate", cfg: &smtptest.Config{ImplicitTLS: serverTLS},
			dial: func(addr string) (*smtp.Client, error) { return smtp.DialTLS(addr, nil) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := smtptest.StartConfig(t, tt.cfg)
			c, err := tt.dial(srv.Addr)
			if err == nil {
				err = send(c, tt.user, tt.password, "bob@example.com")
			}
			if tt.want == nil {
				var se *smtp.SMTPError
				if err == nil || (tt.wantCode != 0 && (!errors.As(err, &se) || se.Code != tt.wantCode)) {
					t.Fatalf("send error = %v, want code %d", err, tt.wantCode)
				}
				if n := len(srv.Messages()); n != 0 {
					t.Errorf("server accepted %d messages, want none", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := *tt.want
			want.Data = []byte(body)
			if diff := cmp.Diff([]smtptest.Message{want}, srv.Messages()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSMTPServerReject(t *testing.T) {
	srv := smtptest.Start(t)
	dial := func() *smtp.Client {
		c, err := smtp.Dial(srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	srv.Reject(550, "mailbox unavailable")
	err := send(dial(), "", "", "bob@example.com")
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 550 || se.Message != "mailbox unavailable" {
		t.Fatalf("send error = %v, want 550 mailbox unavailable", err)
	}
	srv.Reject(0, "")
	if err := send(dial(), "", "", "bob@example.com", "cy@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := send(dial(), "", "", "cy@example.com"); err != nil {
		t.Fatal(err)
	}
	tos := func(ms []smtptest.Message) [][]string {
		var out [][]string
		for _, m := range ms {
			out = append(out, m.To)
		}
		return out
	}
	if diff := cmp.Diff([][]string{{"bob@example.com", "cy@example.com"}, {"cy@example.com"}}, tos(srv.Messages())); diff != "" {
		t.Errorf("Messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"bob@example.com", "cy@example.com"}}, tos(srv.To("bob@example.com"))); diff != "" {
		t.Errorf("To (-want +got):\n%s", diff)
	}
	if n := len(srv.To("dan@example.com")); n != 0 {
		t.Errorf("To(dan) has %d messages, want none", n)
	}
}

func TestSMTPMessageParse(t *testing.T) {
	tests := []struct {
		name       string
		data       string
		want       smtptest.Parsed // Header is not compared
		wantBodies map[string]string
		wantErr    string
	}{
		{
			name: "single part, quoted-printable, encoded subject",
			data: "Subject: =?UTF-8?q?Best=C3=A4tigung_?= =?UTF-8?b?6aqM6K+B56CB?=\r\n" +
				"Content-Type: text/plain; charset=UTF-8\r\n" +
				"Content-Transfer-Encoding: quoted-printable\r\n\r\n" +
				"Code: 12=\r\n3456 =E2=80=94 ok\r\nline two\r\n",
			want: smtptest.Parsed{Subject: "Bestätigung 验证码", MediaType: "text/plain", Parts: []smtptest.Part{
				{ContentType: "text/plain; charset=UTF-8", Body: "Code: 123456 — ok\nline two"},
			}},
			wantBodies: map[string]string{"text/plain": "Code: 123456 — ok\nline two"},
		},
		{
			name: "no Content-Type",
			data: "Subject: hi\r\n\r\nhello\r\n",
			want: smtptest.Parsed{Subject: "hi", MediaType: "text/plain", Parts: []smtptest.Part{
				{ContentType: "text/plain; charset=us-ascii", Body: "hello"},
			}},
			wantBodies: map[string]string{"text/plain": "hello"},
		},
		{
			name: "nested multipart, base64 and quoted-printable",
			data: "Subject: m\r\nContent-Type: multipart/mixed; boundary=outer\r\n\r\n" +
				"--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n" +
				"--inner\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
				"SWhyIENvZGU6IDY1NDMyMSDigJQg6aqM\r\n6K+B56CB\r\n" +
				"--inner\r\nContent-Type: text/html; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
				"<p>Ihr Code: <b>654321</b> =E2=80=94</p>\r\n" +
				"--inner--\r\n" +
				"--outer\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
				"AAEC\r\n" +
				"--outer--\r\n",
			want: smtptest.Parsed{Subject: "m", MediaType: "multipart/mixed", Parts: []smtptest.Part{
				{ContentType: "text/plain; charset=UTF-8", Body: "Ihr Code: 654321 — 验证码"},
				{ContentType: "text/html; charset=UTF-8", Body: "<p>Ihr Code: <b>654321</b> —</p>"},
				{ContentType: "application/octet-stream", Body: "\x00\x01\x02"},
			}},
			wantBodies: map[string]string{
				"text/plain":               "Ihr Code: 654321 — 验证码",
				"text/html":                "<p>Ihr Code: <b>654321</b> —</p>",
				"application/octet-stream": "\x00\x01\x02",
			},
		},
		{
			name:    "unknown transfer encoding",
			data:    "Content-Type: text/plain\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\nbegin\r\n",
			wantErr: "x-uuencode",
		},
		{
			name:    "bad Content-Type",
			data:    "Content-Type: text/\r\n\r\nx\r\n",
			wantErr: "Content-Type",
		},
		{
			name:    "no header",
			data:    "no colon here",
			wantErr: "read message",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := smtptest.Message{Data: []byte(tt.data)}
			got, err := m.Parse()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tt.wantErr)
				}
				if _, err := m.Parts(); err == nil {
					t.Errorf("Parts: no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Header.Get("Subject") == "" {
				t.Errorf("Header has no Subject")
			}
			got.Header = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBodies, got.Bodies()); diff != "" {
				t.Errorf("Bodies (-want +got):\n%s", diff)
			}
			parts, err := m.Parts()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantBodies, parts); diff != "" {
				t.Errorf("Parts (-want +got):\n%s", diff)
			}
			if s := m.Subject(); s != tt.want.Subject {
				t.Errorf("Subject() = %q, want %q", s, tt.want.Subject)
			}
		})
	}
}

func TestSMTPStartSilent(t *testing.T) {
	addr, accepted := smtptest.StartSilent(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-accepted
	// The server has the connection; a greeting would be there at once.
	if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read = %d, %v; want a timeout", n, err)
	}
}
