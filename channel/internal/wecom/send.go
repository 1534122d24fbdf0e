package wecom

import (
	"context"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// MaxBytes is the most a WeCom robot takes in a markdown message's
// content; longer content is cut to it.
const MaxBytes = 4096

// errcodeRate is WeCom's refusal of more than 20 messages a minute.
const errcodeRate = 45009

type body struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Content string `json:"content"`
	} `json:"markdown"`
}

// Target is the robot's URL.
func (Kind) Target(name, address, secret string) notify.Target {
	return notify.Target{Name: name, Address: address, Secret: secret}
}

// Send POSTs m as a WeCom group robot's markdown message. Success is a
// 2xx reply that is JSON with errcode 0: WeCom answers 200 to refusals.
func (Kind) Send(ctx context.Context, s *notify.Sender, t notify.Target, m notify.Message) (notify.Reply, error) {
	if err := s.CheckHTTP("wecom"); err != nil {
		return notify.Reply{}, err
	}
	u, err := notify.ParseURL(t.Address)
	if err != nil {
		return notify.Reply{}, err
	}
	var b body
	b.MsgType = "markdown"
	b.Markdown.Content = notify.Cut(notify.Join("**"+m.Title+"**", m.Text), MaxBytes)
	return s.PostRobot(ctx, deskkit.Textf("WeCom"), u, b, explain)
}

func explain(f *notify.Failure) {
	switch f.Errcode {
	case errcodeRate:
		f.Reason = deskkit.Textf("WeCom refused the message: a robot may send at most 20 messages a minute (%s)", notify.ErrcodeText(f))
		f.Retryable, f.RetryAfter = true, notify.RobotRateWindow
	case notify.ErrcodeBusy:
		f.Reason = deskkit.Textf("WeCom is busy (%s)", notify.ErrcodeText(f))
		f.Retryable = true
	default:
		f.Reason = deskkit.Textf("WeCom answered %s", notify.ErrcodeText(f))
	}
}
