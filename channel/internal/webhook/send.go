package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// body is the JSON a webhook receives, as Standard Webhooks lays it out.
// Data is compact (Send's contract), so encoding/json writes it as it is.
type body struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// parsed is what a target's URL and secret parse to, once for the sends
// of a batch: the URL (never changed by a send) and the signer, holding
// the decoded key.
type parsed struct {
	url    *url.URL
	signer *standardwebhooks.Webhook
}

// parse parses t's address and secret; its errors are those a send
// returns.
func parse(t notify.Target) (parsed, error) {
	u, err := notify.ParseURL(t.Address)
	if err != nil {
		return parsed{}, err
	}
	signer, err := notify.NewSigner(t.Secret)
	if err != nil {
		return parsed{}, err
	}
	return parsed{u, signer}, nil
}

// Target is the channel's target with its URL and secret parsed once for
// the sends of a batch; as it is when they do not parse (its sends fail).
func (Kind) Target(name, address, secret string) notify.Target {
	t := notify.Target{Name: name, Address: address, Secret: secret}
	if p, err := parse(t); err == nil {
		t.Parsed = p
	}
	return t
}

// Send POSTs m as a Standard Webhooks message signed with t.Secret and,
// while a rotation's overlap runs (t.Previous, until t.PreviousUntil by
// the sender's clock), with the previous secret too: "v1,<new> v1,<old>"
// in webhook-signature, as Standard Webhooks sends several signatures, so
// that a receiver holding either secret verifies it. Any 2xx is success.
func (Kind) Send(ctx context.Context, s *notify.Sender, t notify.Target, m notify.Message) (notify.Reply, error) {
	if err := s.CheckHTTP("webhook"); err != nil {
		return notify.Reply{}, err
	}
	p, ok := t.Parsed.(parsed)
	if !ok {
		var err error
		if p, err = parse(t); err != nil {
			return notify.Reply{}, err
		}
	}
	data := m.Data
	if data == nil {
		data = json.RawMessage("{}")
	}
	b, err := notify.Marshal(body{Type: m.Type, Timestamp: m.Time.UTC(), Data: data})
	if err != nil {
		return notify.Reply{}, err
	}
	// The signed timestamp is the attempt's, not the event's: receivers
	// refuse signatures older than a few minutes, and a retry is a new
	// attempt of an old event.
	now := s.Clock()
	sig, err := p.signer.Sign(m.ID, now, b)
	if err != nil {
		return notify.Reply{}, err
	}
	if t.Previous != "" && now.Before(t.PreviousUntil) {
		// Parsed per send: a previous secret signs only during an
		// overlap, and its signer costs a base64 decoding.
		old, err := notify.Sign(t.Previous, m.ID, now, b)
		if err != nil {
			return notify.Reply{}, err
		}
		sig += " " + old
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	r, f := s.Post(ctx, deskkit.Textf("the webhook"), p.url, h, b)
	if f != nil {
		return notify.ReplyOf(r), f
	}
	return notify.ReplyOf(r), nil
}
