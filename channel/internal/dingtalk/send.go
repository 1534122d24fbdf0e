package dingtalk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// MaxBytes is the most sent in a DingTalk markdown message's text;
// DingTalk refuses longer messages, so longer text is cut to it.
const MaxBytes = 20000

// DingTalk's errcodes that a failure explains.
const (
	errcodeRefused = 310000 // keyword, signature or timestamp refused
	errcodeRate    = 130101 // over 20 messages a minute
)

type body struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	} `json:"markdown"`
}

// Target is the robot's URL and secret.
func (Kind) Target(name, address, secret string) notify.Target {
	return notify.Target{Name: name, Address: address, Secret: secret}
}

// Send POSTs m as a DingTalk custom robot's markdown message, signed when
// t.Secret is set. The channel's name leads title and text, so that a
// robot in keyword mode finds the name if it is the keyword. Success is
// errcode 0.
func (Kind) Send(ctx context.Context, s *notify.Sender, t notify.Target, m notify.Message) (notify.Reply, error) {
	if err := s.CheckHTTP("dingtalk"); err != nil {
		return notify.Reply{}, err
	}
	u, err := notify.ParseURL(t.Address)
	if err != nil {
		return notify.Reply{}, err
	}
	if t.Secret != "" {
		if strings.ContainsFunc(t.Secret, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			return notify.Reply{}, deskkit.Invalid("secret", "must be printable ASCII")
		}
		u.RawQuery = sign(u.RawQuery, t.Secret, s.Clock())
	}
	title := "[" + t.Name + "] " + m.Title
	var b body
	b.MsgType = "markdown"
	b.Markdown.Title = title
	b.Markdown.Text = notify.Cut(notify.Join("#### "+title, m.Text), MaxBytes)
	return s.PostRobot(ctx, deskkit.Textf("DingTalk"), u, b, explain)
}

// sign appends DingTalk's signature to the query rawQuery, which keeps its
// own order and spelling: timestamp in Unix milliseconds, and sign, the
// URL-escaped base64 HMAC-SHA256 of timestamp + "\n" + secret keyed by the
// secret. DingTalk refuses a timestamp more than an hour off its own
// clock.
func sign(rawQuery, secret string, now time.Time) string {
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	q := "timestamp=" + ts + "&sign=" + url.QueryEscape(sig)
	if rawQuery == "" {
		return q
	}
	return rawQuery + "&" + q
}

func explain(f *notify.Failure) {
	switch f.Errcode {
	case errcodeRefused:
		f.Reason = deskkit.Textf("DingTalk refused the message (%s): the robot's security settings "+
			"want a keyword the message lacks, a signature with another secret, or a clock closer to DingTalk's", notify.ErrcodeText(f))
	case errcodeRate:
		f.Reason = deskkit.Textf("DingTalk refused the message: a robot may send at most 20 messages a minute (%s)", notify.ErrcodeText(f))
		f.Retryable, f.RetryAfter = true, notify.RobotRateWindow
	case notify.ErrcodeBusy:
		f.Reason = deskkit.Textf("DingTalk is busy (%s)", notify.ErrcodeText(f))
		f.Retryable = true
	default:
		f.Reason = deskkit.Textf("DingTalk answered %s", notify.ErrcodeText(f))
	}
}
