package smtptest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
)

// Message is one message the server accepted, with what the client said
// to get it there.
type Message struct {
	Helo string   // the name the client gave in EHLO or HELO
	TLS  bool     // whether the connection was encrypted
	User string   // who authenticated with AUTH; "" without
	From string   // MAIL FROM
	To   []string // RCPT TO, in order
	Data []byte   // as received, headers and body
}

// Header parses the message's header.
func (m Message) Header() (mail.Header, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return nil, err
	}
	return msg.Header, nil
}

// Subject is the decoded Subject header: as written when it does not
// decode, "" when the header does not parse.
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

// Parts returns the bodies by media type ("text/plain", "text/html"), as
// Parsed.Bodies does.
func (m Message) Parts() (map[string]string, error) {
	p, err := m.Parse()
	if err != nil {
		return nil, err
	}
	return p.Bodies(), nil
}

// Parsed is a message as a mail reader shows it.
type Parsed struct {
	// Header is the message's header, as written.
	Header mail.Header
	// Subject is the Subject header with its RFC 2047 encoded words
	// decoded.
	Subject string
	// MediaType is the message's own media type without parameters:
	// "text/plain", "multipart/alternative".
	MediaType string
	// Parts are the bodies in order: the message's own, or the leaves of
	// a multipart one, nested multiparts flattened.
	Parts []Part
}

// Part is one body of a message.
type Part struct {
	// ContentType is the Content-Type as written: "text/plain;
	// charset=UTF-8".
	ContentType string
	// Body has its transfer encoding (quoted-printable, base64) undone
	// and its line ends as "\n". The line end that closes a single-part
	// message's last line is dropped, as the one before a multipart
	// boundary belongs to the boundary, so a body reads the same either
	// way. The charset is left as is.
	Body string
}

// Bodies returns the bodies by media type ("text/plain", "text/html"); of
// two parts of one type, the last.
func (p Parsed) Bodies() map[string]string {
	out := make(map[string]string, len(p.Parts))
	for _, part := range p.Parts {
		mt, _, err := mime.ParseMediaType(part.ContentType)
		if err != nil {
			mt = part.ContentType
		}
		out[mt] = part.Body
	}
	return out
}

// Parse reads the message with net/mail and mime/multipart, as a mail
// reader would. It fails on a malformed header, Subject, Content-Type or
// multipart body, or an unknown transfer encoding.
func (m Message) Parse() (Parsed, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return Parsed{}, fmt.Errorf("smtptest: read message: %w", err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return Parsed{}, fmt.Errorf("smtptest: Subject: %w", err)
	}
	p := Parsed{Header: msg.Header, Subject: subject}
	h := textproto.MIMEHeader(msg.Header)
	p.MediaType, _, err = mime.ParseMediaType(contentType(h))
	if err != nil {
		return Parsed{}, fmt.Errorf("smtptest: Content-Type: %w", err)
	}
	p.Parts, err = parts(h, msg.Body, nil)
	if err != nil {
		return Parsed{}, err
	}
	if len(p.Parts) == 1 && !strings.HasPrefix(p.MediaType, "multipart/") {
		p.Parts[0].Body = strings.TrimSuffix(p.Parts[0].Body, "\n")
	}
	return p, nil
}

// parts appends to out the leaf bodies of the entity with header h and
// body r.
func parts(h textproto.MIMEHeader, r io.Reader, out []Part) ([]Part, error) {
	ct := contentType(h)
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, fmt.Errorf("smtptest: Content-Type %q: %w", ct, err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		body, err := decode(h.Get("Content-Transfer-Encoding"), r)
		if err != nil {
			return nil, err
		}
		return append(out, Part{ContentType: ct, Body: body}), nil
	}
	mr := multipart.NewReader(r, params["boundary"])
	for {
		// Raw: decode undoes every transfer encoding alike.
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("smtptest: %s: %w", mt, err)
		}
		if out, err = parts(p.Header, p, out); err != nil {
			return nil, err
		}
	}
}

// contentType is h's Content-Type, or RFC 2045's default.
func contentType(h textproto.MIMEHeader) string {
	if ct := h.Get("Content-Type"); ct != "" {
		return ct
	}
	return "text/plain; charset=us-ascii"
}

func decode(cte string, r io.Reader) (string, error) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "", "7bit", "8bit", "binary":
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r) // skips line ends
	default:
		return "", fmt.Errorf("smtptest: unknown Content-Transfer-Encoding %q", cte)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("smtptest: body: %w", err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n"), nil
}
