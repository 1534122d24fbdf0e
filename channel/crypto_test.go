package channel

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

var (
	sealOldSecret = []byte("the server secret before rotation, 32+ bytes")
	sealNewSecret = []byte("the server secret after rotation, 32+ bytes!")
)

func mustSealer(t *testing.T, secret, previous []byte) *sealer {
	t.Helper()
	s, err := newSealer(secret, previous)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealRoundTrip(t *testing.T) {
	s := mustSealer(t, sealNewSecret, nil)
	aad := sealAAD(7, Webhook, fieldSecret)
	if aad != "tenant=7;type=WEBHOOK;field=secret" {
		t.Errorf("sealAAD = %q", aad)
	}
	for _, plain := range []string{"", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k", strings.Repeat("é", 1000)} {
		enc, err := s.seal(plain, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(enc, "v1:") || (plain != "" && strings.Contains(enc, plain)) {
			t.Errorf("seal(%.20q) = %.40q: want v1: and no plaintext", plain, enc)
		}
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(enc, "v1:"))
		if err != nil || len(raw) != 12+len(plain)+16 {
			t.Errorf("seal(%.20q): %d bytes, %v; want nonce, text and tag: %d", plain, len(raw), err, 12+len(plain)+16)
		}
		got, err := s.open(enc, aad)
		if err != nil || got != plain {
			t.Errorf("open(seal(%.20q)) = %.20q, %v", plain, got, err)
		}
	}
}

// The aad binds a value to its tenant, type and field: a ciphertext copied
// anywhere else does not open.
func TestSealWrongAAD(t *testing.T) {
	s := mustSealer(t, sealNewSecret, nil)
	enc, err := s.seal("SECsecret", sealAAD(7, WorkplaceChat, fieldSecret))
	if err != nil {
		t.Fatal(err)
	}
	for _, aad := range []string{
		sealAAD(8, WorkplaceChat, fieldSecret),
		sealAAD(7, Webhook, fieldSecret),
		sealAAD(7, WorkplaceChat, fieldAddress),
		"",
	} {
		if got, err := s.open(enc, aad); !errors.Is(err, errUnsealable) || got != "" {
			t.Errorf("open with aad %q = %q, %v; want errUnsealable", aad, got, err)
		}
	}
}

func TestSealTamper(t *testing.T) {
	s := mustSealer(t, sealNewSecret, nil)
	aad := sealAAD(1, Email, fieldAddress)
	enc, err := s.seal("ann@example.com", aad)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(enc, "v1:"))
	// Every flipped bit, in the nonce, the text or the tag, is caught.
	for i := range raw {
		flipped := append([]byte(nil), raw...)
		flipped[i] ^= 0x01
		if _, err := s.open("v1:"+base64.RawStdEncoding.EncodeToString(flipped), aad); !errors.Is(err, errUnsealable) {
			t.Errorf("byte %d flipped: %v; want errUnsealable", i, err)
		}
	}
	for name, bad := range map[string]string{
		"truncated":     "v1:" + base64.RawStdEncoding.EncodeToString(raw[:len(raw)-1]),
		"nonce only":    "v1:" + base64.RawStdEncoding.EncodeToString(raw[:12]),
		"empty":         "",
		"no prefix":     strings.TrimPrefix(enc, "v1:"),
		"other version": "v2:" + strings.TrimPrefix(enc, "v1:"),
		"not base64":    "v1:!!!!",
		"plaintext":     "ann@example.com",
	} {
		if got, err := s.open(bad, aad); !errors.Is(err, errUnsealable) || got != "" {
			t.Errorf("%s: open = %q, %v; want errUnsealable", name, got, err)
		}
	}
}

// After a rotation, values sealed under the old secret open only while it
// is given as the previous secret; new values are sealed under the new one.
func TestSealRotation(t *testing.T) {
	aad := sealAAD(3, Webhook, fieldAddress)
	before := mustSealer(t, sealOldSecret, nil)
	old, err := before.seal("https://example.com/old", aad)
	if err != nil {
		t.Fatal(err)
	}
	rotated := mustSealer(t, sealNewSecret, sealOldSecret)
	if got, err := rotated.open(old, aad); err != nil || got != "https://example.com/old" {
		t.Errorf("rotated open of an old value = %q, %v", got, err)
	}
	if _, err := mustSealer(t, sealNewSecret, nil).open(old, aad); !errors.Is(err, errUnsealable) {
		t.Errorf("open of an old value without PreviousSecret: %v; want errUnsealable", err)
	}
	fresh, err := rotated.seal("https://example.com/new", aad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := before.open(fresh, aad); !errors.Is(err, errUnsealable) {
		t.Errorf("a value sealed after the rotation opens under the old secret: %v", err)
	}
	if got, err := mustSealer(t, sealNewSecret, nil).open(fresh, aad); err != nil || got != "https://example.com/new" {
		t.Errorf("a new value does not open under the new secret alone: %q, %v", got, err)
	}
}

func TestSealNoncesDiffer(t *testing.T) {
	s := mustSealer(t, sealNewSecret, nil)
	aad := sealAAD(1, Webhook, fieldSecret)
	seen := map[string]bool{}
	for range 100 {
		enc, err := s.seal("same", aad)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(enc, "v1:"))
		nonce := string(raw[:12])
		if seen[nonce] {
			t.Fatalf("nonce %x repeated", nonce)
		}
		seen[nonce] = true
	}
}

// The stored format is pinned: a value opens with AES-256-GCM under
// HKDF-SHA256(secret, info "deskkit channel secret v1"), computed here
// independently. Changing the info or the layout would make every stored
// channel unreadable.
func TestSealFormat(t *testing.T) {
	s := mustSealer(t, sealNewSecret, nil)
	enc, err := s.seal("https://example.com/hook", "tenant=1;type=WEBHOOK;field=address")
	if err != nil {
		t.Fatal(err)
	}
	key, err := hkdf.Key(sha256.New, sealNewSecret, nil, "deskkit channel secret v1", 32)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(block)
	raw, _ := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(enc, "v1:"))
	plain, err := gcm.Open(nil, raw[:12], raw[12:], []byte("tenant=1;type=WEBHOOK;field=address"))
	if err != nil || string(plain) != "https://example.com/hook" {
		t.Errorf("independent open = %q, %v", plain, err)
	}
}

// Sealers of two secrets disagree; a sealer needs a current secret.
func TestSealKeyIsDerived(t *testing.T) {
	if _, err := newSealer(nil, nil); err == nil {
		t.Error("newSealer accepted no secret")
	}
	if _, err := newSealer(nil, sealOldSecret); err == nil {
		t.Error("newSealer accepted a previous secret without a current one")
	}
	a, b := mustSealer(t, sealOldSecret, nil), mustSealer(t, sealNewSecret, nil)
	enc, _ := a.seal("x", "aad")
	if _, err := b.open(enc, "aad"); !errors.Is(err, errUnsealable) {
		t.Errorf("a value sealed under one secret opens under another: %v", err)
	}
}
