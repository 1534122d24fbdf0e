package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/deskkit/deskkit"
)

// webhookBody is the JSON a webhook receives, as Standard Webhooks lays
// it out. Data is compact (SendChecked's contract), so encoding/json
// writes it as it is.
type webhookBody struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// sendWebhook POSTs m as a Standard Webhooks message signed with
// t.Secret. Any 2xx is success.
func (s *Sender) sendWebhook(ctx context.Context, t Target, m Message) (Reply, error) {
	if err := s.checkHTTP(t); err != nil {
		return Reply{}, err
	}
	if t.url == nil {
		var err error
		if t, err = t.Prepared(); err != nil {
			return Reply{}, err
		}
	}
	data := m.Data
	if data == nil {
		data = json.RawMessage("{}")
	}
	body, err := marshal(webhookBody{Type: m.Type, Timestamp: m.Time.UTC(), Data: data})
	if err != nil {
		return Reply{}, err
	}
	// The signed timestamp is the attempt's, not the event's: receivers
	// refuse signatures older than a few minutes, and a retry is a new
	// attempt of an old event.
	now := s.now()
	sig, err := t.signer.Sign(m.ID, now, body)
	if err != nil {
		return Reply{}, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	r, f := s.post(ctx, deskkit.Textf("the webhook"), t.url, h, body)
	if f != nil {
		return reply(r), f
	}
	return reply(r), nil
}
