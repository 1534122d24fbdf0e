package notify

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskkit/deskkit"
)

// webhookSecretPrefix marks a Standard Webhooks signing secret.
const webhookSecretPrefix = "whsec_"

// webhookKeyBytes is the length of a webhook signing key: as long as the
// HMAC-SHA256 output, as Standard Webhooks recommends.
const webhookKeyBytes = 32

// NewWebhookSecret returns a new webhook signing secret: "whsec_" and the
// standard base64 of 32 bytes from crypto/rand, the form the Standard
// Webhooks libraries take.
func NewWebhookSecret() (string, error) {
	key := make([]byte, webhookKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return webhookSecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseWebhookSecret returns the key of a secret written as
// NewWebhookSecret writes them, or an *deskkit.InputError for field
// "secret".
func ParseWebhookSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, webhookSecretPrefix)
	if !ok {
		return nil, deskkit.Invalid("secret", `must start with "whsec_"`)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(rest)
	if err != nil || len(key) != webhookKeyBytes {
		return nil, deskkit.Invalid("secret", `must be "whsec_" and the base64 of %d bytes`, webhookKeyBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature header value for a message, as the
// Standard Webhooks library signs it: "v1," and the base64 HMAC-SHA256,
// keyed by the decoded secret, of id + "." + ts (Unix seconds) + "." +
// body. Its error is ParseWebhookSecret's.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	wh, err := NewSigner(secret)
	if err != nil {
		return "", err
	}
	return wh.Sign(id, ts, body)
}

// NewSigner returns the Standard Webhooks signer of secret, once
// ParseWebhookSecret has accepted it: the library takes any base64 after
// an optional prefix, a channel's secret only "whsec_" and the standard
// base64 of 32 bytes.
func NewSigner(secret string) (*standardwebhooks.Webhook, error) {
	if _, err := ParseWebhookSecret(secret); err != nil {
		return nil, err
	}
	return standardwebhooks.NewWebhook(secret)
}

// NewMessageID returns a new message id: deskkit.NewEventID, "msg_" and
// 26 characters of lower-case base32 encoding 128 random bits, like a
// ULID's length but without its time, which would tell receivers when ids
// were made without adding anything they need.
func NewMessageID() string { return deskkit.NewEventID() }
