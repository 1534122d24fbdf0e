package notify_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

func TestNewWebhookSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s, err := notify.NewWebhookSecret()
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(s, "whsec_")
		if !ok {
			t.Fatalf("secret %q does not start with whsec_", s)
		}
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(key) != 32 {
			t.Fatalf("secret %q: %d bytes, err %v; want 32 bytes of standard base64", s, len(key), err)
		}
		got, err := notify.ParseWebhookSecret(s)
		if err != nil || string(got) != string(key) {
			t.Fatalf("ParseWebhookSecret(%q) = %x, %v; want %x", s, got, err, key)
		}
		if seen[s] {
			t.Fatalf("secret %q made twice", s)
		}
		seen[s] = true
	}
}

func TestParseWebhookSecretRefuses(t *testing.T) {
	key32 := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, s := range []string{
		"",
		key32,                           // no prefix
		"WHSEC_" + key32,                // prefix in the wrong case
		"whsec_",                        // no key
		"whsec_" + key32[:len(key32)-4], // 30 bytes
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"whsec_" + base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xff", 32))), // URL alphabet
		"whsec_" + strings.TrimRight(key32, "="),                                         // no padding
		"whsec_ " + key32,
	} {
		_, err := notify.ParseWebhookSecret(s)
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "secret" {
			t.Errorf("ParseWebhookSecret(%q) = %v, want an InputError for secret", s, err)
		}
		if _, err := notify.Sign(s, "msg_1", fixedNow, nil); !errors.As(err, &ie) {
			t.Errorf("Sign with secret %q = %v, want an InputError", s, err)
		}
	}
}

// TestSignKnownAnswers pins the signatures receivers verify: "v1," and
// the base64 HMAC-SHA256 of id.timestamp.body keyed by the decoded
// secret, computed apart from Go (Python's hmac) and the same as the
// signing written by hand before the library signed; the official
// library's receiver side accepts them.
func TestSignKnownAnswers(t *testing.T) {
	const secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // bytes 0 to 31
	ts := time.Unix(1714552215, 999_000_000)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, want string }{
		{"", "v1,c5uBiXLmMUBYLFuirUA0ngOlJkjltnl2XgLCPqo+qmo="},
		{`{"type":"channel.test","timestamp":"2024-05-01T08:30:00Z","data":{}}`, "v1,dxPMGQpDTbmRz79LB19j6pPIeLfLEwUk8dzrRmxLuf0="},
	} {
		got, err := notify.Sign(secret, "msg_abc", ts, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Sign(%q) = %q, want %q", c.body, got, c.want)
		}
		h := http.Header{}
		h.Set("webhook-id", "msg_abc")
		h.Set("webhook-timestamp", "1714552215")
		h.Set("webhook-signature", got)
		if err := wh.VerifyIgnoringTimestamp([]byte(c.body), h); err != nil {
			t.Errorf("the library refuses Sign(%q): %v", c.body, err)
		}
	}
}

func TestNewMessageID(t *testing.T) {
	form := regexp.MustCompile(`^msg_[0-9a-hjkmnp-tv-z]{26}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := notify.NewMessageID()
		if !form.MatchString(id) {
			t.Fatalf("NewMessageID() = %q, want msg_ and 26 lower-case base32 characters", id)
		}
		if seen[id] {
			t.Fatalf("NewMessageID() made %q twice", id)
		}
		seen[id] = true
	}
}

// fixedNow is the clock of the tests that need one.
var fixedNow = time.Date(2024, 5, 1, 8, 30, 15, 0, time.UTC)

// TestSigningKey: a new signing key is whsk_ and the base64 of a 32-byte
// seed, its public key whpk_ and the base64 of the ed25519 public key, and
// SignEd25519 writes "v1a," and a signature over id.timestamp.body that
// the public key verifies (and another key does not); malformed keys are
// refused naming "key".
func TestSigningKey(t *testing.T) {
	key, err := notify.NewSigningKey()
	if err != nil || !strings.HasPrefix(key, "whsk_") {
		t.Fatalf("NewSigningKey() = %q, %v", key, err)
	}
	pk, err := notify.PublicKeyOf(key)
	if err != nil || !strings.HasPrefix(pk, "whpk_") {
		t.Fatalf("PublicKeyOf = %q, %v", pk, err)
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(pk, "whpk_"))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public key %q: %d bytes, %v", pk, len(pub), err)
	}
	priv, err := notify.ParseSigningKey(key)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"channel.test"}`)
	sig := notify.SignEd25519(priv, "msg_abc", fixedNow, body)
	raw, ok := strings.CutPrefix(sig, "v1a,")
	if !ok {
		t.Fatalf("signature %q lacks v1a,", sig)
	}
	b, _ := base64.StdEncoding.DecodeString(raw)
	msg := []byte("msg_abc.1714552215." + string(body))
	if !ed25519.Verify(pub, msg, b) {
		t.Error("the public key does not verify the signature")
	}
	other, _ := notify.NewSigningKey()
	opk, _ := notify.PublicKeyOf(other)
	ob, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(opk, "whpk_"))
	if ed25519.Verify(ob, msg, b) {
		t.Error("another key's public key verifies the signature")
	}
	for _, bad := range []string{"", "whsec_" + strings.TrimPrefix(key, "whsk_"), "whsk_", "whsk_" + base64.StdEncoding.EncodeToString(make([]byte, 64))} {
		var ie *deskkit.InputError
		if _, err := notify.ParseSigningKey(bad); !errors.As(err, &ie) || ie.Field != "key" {
			t.Errorf("ParseSigningKey(%q) = %v, want an InputError for key", bad, err)
		}
	}
}
