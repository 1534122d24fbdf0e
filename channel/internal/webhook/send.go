package webhook

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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

// parsed is what a target's URL and keys parse to, once for the sends
// of a batch: the URL (never changed by a send), the HMAC signer, holding
// the decoded secret (nil without one), and the ed25519 key (nil without
// one).
type parsed struct {
	url    *url.URL
	signer *standardwebhooks.Webhook
	key    ed25519.PrivateKey
}

// parse parses t's address, secret and key; its errors are those a send
// returns. A webhook signs with its secret, its key, or both: one of them
// at least.
func parse(t notify.Target) (parsed, error) {
	u, err := notify.ParseURL(t.Address)
	if err != nil {
		return parsed{}, err
	}
	p := parsed{url: u}
	if t.Secret != "" || t.Key == "" {
		if p.signer, err = notify.NewSigner(t.Secret); err != nil {
			return parsed{}, err
		}
	}
	if t.Key != "" {
		if p.key, err = notify.ParseSigningKey(t.Key); err != nil {
			return parsed{}, err
		}
	}
	return p, nil
}

// sign is the webhook-signature of a message: a "v1," signature under the
// secret and a "v1a," one under the key, as the target has them, and
// during a rotation's overlap the previous secret's and key's after them,
// space-separated as Standard Webhooks lays out.
func sign(t notify.Target, p parsed, id string, now time.Time, body []byte) (string, error) {
	var sigs []string
	if p.signer != nil {
		sig, err := p.signer.Sign(id, now, body)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, sig)
	}
	if p.key != nil {
		sigs = append(sigs, notify.SignEd25519(p.key, id, now, body))
	}
	if now.Before(t.PreviousUntil) {
		// Parsed per send: previous keys sign only during an overlap,
		// and parsing one costs a base64 decoding (and an ed25519 key's
		// derivation).
		if t.Previous != "" {
			old, err := notify.Sign(t.Previous, id, now, body)
			if err != nil {
				return "", err
			}
			sigs = append(sigs, old)
		}
		if t.PreviousKey != "" {
			k, err := notify.ParseSigningKey(t.PreviousKey)
			if err != nil {
				return "", err
			}
			sigs = append(sigs, notify.SignEd25519(k, id, now, body))
		}
	}
	return strings.Join(sigs, " "), nil
}

// Body is the JSON body of a webhook message of type typ at t with
// data (compact; nil sends {}): what Send posts, the same on every
// attempt, and what a delivery's inspection shows as sent.
func Body(typ string, t time.Time, data json.RawMessage) ([]byte, error) {
	if data == nil {
		data = json.RawMessage("{}")
	}
	return notify.Marshal(body{Type: typ, Timestamp: t.UTC(), Data: data})
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

// WithKey is t, a webhook's target, signing with its ed25519 key too (or
// alone, when t has no secret), and parsed again.
func WithKey(t notify.Target, key string) notify.Target {
	t.Key, t.Parsed = key, nil
	if p, err := parse(t); err == nil {
		t.Parsed = p
	}
	return t
}

// Send POSTs m as a Standard Webhooks message signed with t.Secret
// (HMAC, "v1,") and t.Key (ed25519, "v1a,"), those it has, and while a
// rotation's overlap runs (until t.PreviousUntil by the sender's clock)
// with the previous ones too: "v1,<new> v1,<old>" in webhook-signature,
// as Standard Webhooks sends several signatures, so that a receiver
// holding any of them verifies it. Any 2xx is success.
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
	b, err := Body(m.Type, m.Time, data)
	if err != nil {
		return notify.Reply{}, err
	}
	// The signed timestamp is the attempt's, not the event's: receivers
	// refuse signatures older than a few minutes, and a retry is a new
	// attempt of an old event.
	now := s.Clock()
	sig, err := sign(t, p, m.ID, now, b)
	if err != nil {
		return notify.Reply{}, err
	}
	h := http.Header{}
	// The channel's own headers first: the registry refused every name
	// set below, and Set would replace one anyway.
	for _, kv := range t.Headers {
		h.Add(kv[0], kv[1])
	}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	r, f := s.Post(ctx, deskkit.Textf("the webhook"), p.url, h, b)
	if f != nil {
		return notify.Answered(p.url, h, b, r), f
	}
	return notify.Answered(p.url, h, b, r), nil
}
