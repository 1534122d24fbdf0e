package feishu

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// MaxBodyBytes is the most Feishu takes in a robot's request body (20 KB);
// a longer message's text is cut until the body fits.
const MaxBodyBytes = 20 << 10

// Feishu's codes that a failure explains.
const (
	codeSign     = 19021 // signature or timestamp refused
	codeIP       = 19022 // the address is outside the robot's IP allowlist
	codeKeyword  = 19024 // a keyword the message lacks
	codeTooMany  = 9499  // too many requests
	codeFrequent = 11232 // frequency limited
)

// testType is the type of a test message, which goes as text.
const testType = "channel.test"

// fields are the members of Feishu's answer that hold its code.
var fields = notify.RobotFields{Code: "code", Msg: "msg"}

// body is a robot message: text, or a card (interactive), and when the
// channel has a secret, its signature.
type body struct {
	Timestamp string `json:"timestamp,omitempty"`
	Sign      string `json:"sign,omitempty"`
	MsgType   string `json:"msg_type"`
	Content   *text  `json:"content,omitempty"`
	Card      *card  `json:"card,omitempty"`
}

type text struct {
	Text string `json:"text"`
}

type card struct {
	Config struct {
		WideScreenMode bool `json:"wide_screen_mode"`
	} `json:"config"`
	Header struct {
		Title struct {
			Tag     string `json:"tag"`
			Content string `json:"content"`
		} `json:"title"`
		Template string `json:"template"`
	} `json:"header"`
	Elements []element `json:"elements"`
}

type element struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

// Target is the robot's URL and secret.
func (Kind) Target(name, address, secret string) notify.Target {
	return notify.Target{Name: name, Address: address, Secret: secret}
}

// Send POSTs m to the robot: a test message as text, an event as a card,
// signed when t.Secret is set. The channel's name leads the title, so that
// a robot in keyword mode finds the name if it is the keyword. Success is
// code 0.
func (Kind) Send(ctx context.Context, s *notify.Sender, t notify.Target, m notify.Message) (notify.Reply, error) {
	if err := s.CheckHTTP("feishu"); err != nil {
		return notify.Reply{}, err
	}
	u, err := notify.ParseURL(t.Address)
	if err != nil {
		return notify.Reply{}, err
	}
	b, err := message(t.Name, m, MaxBodyBytes)
	if err != nil {
		return notify.Reply{}, err
	}
	if t.Secret != "" {
		b.Timestamp, b.Sign = sign(t.Secret, s.Clock())
	}
	return s.PostRobotAs(ctx, deskkit.Textf("Feishu"), u, b, fields, explain)
}

// message is m as the robot's body for the channel name, its text cut so
// that the body, signature included, has at most limit bytes: the longest
// cut that fits, found by halving, since escaping makes a byte of text
// anything from one to six of JSON.
func message(name string, m notify.Message, limit int) (body, error) {
	const signature = len(`,"timestamp":"0000000000","sign":""`) + 44 // a base64 SHA-256
	b, n, err := shaped(name, m, len(m.Text))
	if err != nil || n+signature <= limit {
		return b, err
	}
	lo, hi := 0, len(m.Text) // the text cut to lo bytes fits (or lo is 0); to hi it does not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, n, err := shaped(name, m, mid); err != nil {
			return body{}, err
		} else if n+signature <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	b, _, err = shaped(name, m, lo)
	return b, err
}

// shaped is m as the robot's body with its text cut to room bytes, and the
// body's length in JSON.
func shaped(name string, m notify.Message, room int) (body, int, error) {
	title := "[" + name + "] " + m.Title
	var b body
	if m.Type == testType {
		b.MsgType, b.Content = "text", &text{Text: notify.Join(title, cutTo(m.Text, room))}
	} else {
		c := &card{}
		c.Config.WideScreenMode = true
		c.Header.Title.Tag, c.Header.Title.Content = "plain_text", title
		c.Header.Template = "blue"
		if m.Text != "" {
			c.Elements = []element{{Tag: "markdown", Content: cutTo(m.Text, room)}}
		}
		b.MsgType, b.Card = "interactive", c
	}
	raw, err := notify.Marshal(b)
	return b, len(raw), err
}

// cutTo is notify.Cut for a limit that may fall below zero: nothing but
// the ellipsis then.
func cutTo(s string, limit int) string {
	return notify.Cut(s, max(limit, len("…")))
}

// sign is Feishu's signature at now: timestamp in Unix seconds, and the
// base64 HMAC-SHA256 keyed by timestamp + "\n" + secret over an empty
// message. Feishu refuses a timestamp more than an hour off its own clock.
func sign(secret string, now time.Time) (timestamp, signature string) {
	timestamp = strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	return timestamp, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func explain(f *notify.Failure) {
	switch f.Errcode {
	case codeSign:
		f.Reason = deskkit.Textf("Feishu refused the signature (%s): the robot's secret differs from the channel's, or the server's clock is more than an hour from Feishu's", codeText(f))
	case codeKeyword:
		f.Reason = deskkit.Textf("Feishu refused the message (%s): the robot's security settings want a keyword the message lacks", codeText(f))
	case codeIP:
		f.Reason = deskkit.Textf("Feishu refused the message (%s): the robot's IP allowlist lacks this server's address", codeText(f))
	case codeTooMany, codeFrequent:
		f.Reason = deskkit.Textf("Feishu refused the message: a robot may send at most 100 messages a minute and 5 a second (%s)", codeText(f))
		f.Retryable, f.RetryAfter = true, notify.RobotRateWindow
	default:
		f.Reason = deskkit.Textf("Feishu answered %s", codeText(f))
	}
}

// codeText is "code 19021: sign match fail ...".
func codeText(f *notify.Failure) string {
	if f.Errmsg == "" {
		return "code " + strconv.Itoa(f.Errcode)
	}
	return "code " + strconv.Itoa(f.Errcode) + ": " + f.Errmsg
}
