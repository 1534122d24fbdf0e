package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// webhookBody is the JSON a webhook receives, as Standard Webhooks lays
// it out.
type webhookBody struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// sendWebhook POSTs m as a Standard Webhooks message signed with
// t.Secret. Any 2xx is success.
func (s *Sender) sendWebhook(ctx context.Context, t Target, m Message) error {
	if err := s.checkHTTP(t); err != nil {
		return err
	}
	u, err := parseURL(t.Address)
	if err != nil {
		return err
	}
	key, err := ParseWebhookSecret(t.Secret)
	if err != nil {
		return err
	}
	data := m.Data
	if data == nil {
		data = json.RawMessage("{}")
	}
	body, err := marshal(webhookBody{Type: m.Type, Timestamp: m.Time.UTC(), Data: data})
	if err != nil {
		return err
	}
	// The signed timestamp is the attempt's, not the event's: receivers
	// refuse signatures older than a few minutes, and a retry is a new
	// attempt of an old event.
	now := s.now()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sign(key, m.ID, now, body))
	_, f := s.post(ctx, "the webhook", u, h, body)
	if f != nil {
		return f
	}
	return nil
}
