package notify

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/deskkit/deskkit"
)

// The prefixes of Standard Webhooks' asymmetric keys: a signing (secret)
// key and its public key.
const (
	signingKeyPrefix = "whsk_"
	publicKeyPrefix  = "whpk_"
)

// NewSigningKey returns a new ed25519 signing key for webhooks: "whsk_"
// and the standard base64 of the key's 32-byte seed from crypto/rand. The
// receiver verifies with its public key (PublicKeyOf); the signing key
// itself never leaves the sender.
func NewSigningKey() (string, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return "", err
	}
	return signingKeyPrefix + base64.StdEncoding.EncodeToString(seed), nil
}

// ParseSigningKey returns the ed25519 private key of a key written as
// NewSigningKey writes them, or an *deskkit.InputError for field "key".
func ParseSigningKey(s string) (ed25519.PrivateKey, error) {
	rest, ok := strings.CutPrefix(s, signingKeyPrefix)
	if !ok {
		return nil, deskkit.Invalid("key", `must start with "whsk_"`)
	}
	seed, err := base64.StdEncoding.Strict().DecodeString(rest)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, deskkit.Invalid("key", `must be "whsk_" and the base64 of %d bytes`, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// PublicKeyOf returns the public key of a signing key, as Standard
// Webhooks writes it for receivers: "whpk_" and the standard base64 of
// the 32-byte ed25519 public key. Its error is ParseSigningKey's.
func PublicKeyOf(signingKey string) (string, error) {
	k, err := ParseSigningKey(signingKey)
	if err != nil {
		return "", err
	}
	return publicKeyPrefix + base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey)), nil
}

// SignEd25519 returns a webhook-signature value for a message under key:
// "v1a," and the base64 ed25519 signature of id + "." + ts (Unix seconds)
// + "." + body, as Standard Webhooks lays out asymmetric signatures.
func SignEd25519(key ed25519.PrivateKey, id string, ts time.Time, body []byte) string {
	msg := make([]byte, 0, len(id)+len(body)+24)
	msg = append(msg, id...)
	msg = append(msg, '.')
	msg = append(msg, []byte(formatUnix(ts))...)
	msg = append(msg, '.')
	msg = append(msg, body...)
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg))
}

// formatUnix is ts in Unix seconds, as webhook-timestamp writes it.
func formatUnix(ts time.Time) string { return strconv.FormatInt(ts.Unix(), 10) }
