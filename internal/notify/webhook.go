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

// webhookJSON is the JSON of a webhookBody, written without marshalling
// data again: a message's data was checked to be a JSON object (by
// CheckMessage, or once per event by the caller of SendChecked), and
// encoding/json would scan a RawMessage once more for every channel and
// attempt.
func webhookJSON(typ string, at time.Time, data json.RawMessage) ([]byte, error) {
	head, err := marshal(struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
	}{typ, at.UTC()})
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, len(head)+len(data)+9)
	body = append(body, head[:len(head)-1]...) // without its "}"
	body = append(body, `,"data":`...)
	body = append(body, data...)
	return append(body, '}'), nil
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
	u, key := t.url, t.key
	data := m.Data
	if data == nil {
		data = json.RawMessage("{}")
	}
	body, err := webhookJSON(m.Type, m.Time, data)
	if err != nil {
		return Reply{}, err
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
	r, f := s.post(ctx, "the webhook", u, h, body)
	if f != nil {
		return reply(r), f
	}
	return reply(r), nil
}
