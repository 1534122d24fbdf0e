package channel

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// sealInfo is the HKDF info of the key that encrypts channel addresses and
// secrets: a key of its own, so that no other use of the server secret
// (verify's code hashes) shares it. A new version of the format gets a new
// info and a new prefix.
const (
	sealInfo   = "deskkit channel secret v1"
	sealPrefix = "v1:"
)

// errUnsealable is the error of a stored value that no key opens: the
// server secret changed without Config.PreviousSecret, or the row was
// altered or copied to another tenant, type or field.
var errUnsealable = errors.New("channel: a stored value does not decrypt: wrong server secret (set PreviousSecret after a rotation) or an altered row")

// sealer encrypts what a database dump must not show: channel addresses
// (a robot's URL carries its key) and secrets. It is AES-256-GCM with a
// random 96-bit nonce per value, written "v1:" + base64(nonce || sealed),
// under a key derived from the server secret. The stored value carries no
// key id: open tries the current key, then the previous secret's, and
// GCM's tag tells which one sealed it.
type sealer struct {
	aeads []cipher.AEAD // the current key's first
}

// newSealer derives the keys of secret and, if not nil, of previous (the
// server secret before the last rotation, which open still accepts).
func newSealer(secret, previous []byte) (*sealer, error) {
	s := &sealer{}
	for _, k := range [][]byte{secret, previous} {
		if k == nil {
			continue
		}
		key, err := hkdf.Key(sha256.New, k, nil, sealInfo, 32)
		if err != nil {
			return nil, fmt.Errorf("channel: derive key: %w", err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("channel: derive key: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("channel: derive key: %w", err)
		}
		s.aeads = append(s.aeads, aead)
	}
	if len(s.aeads) == 0 || len(secret) == 0 {
		return nil, errors.New("channel: a server secret is required")
	}
	return s, nil
}

// seal encrypts plaintext under the current key. aad names where the value
// belongs (sealAAD); open must be given the same, so that a ciphertext
// copied to another tenant, type or field does not decrypt.
func (s *sealer) seal(plaintext, aad string) (string, error) {
	a := s.aeads[0]
	buf := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	// Random nonces are safe far beyond any channel count: the bound of
	// 2^32 values per key is about collisions of 96-bit nonces.
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("channel: nonce: %w", err)
	}
	buf = a.Seal(buf, buf, []byte(plaintext), []byte(aad))
	return sealPrefix + base64.RawStdEncoding.EncodeToString(buf), nil
}

// open decrypts what seal wrote with the same aad, trying the current key
// and then the previous one. Any failure is errUnsealable, which says
// nothing about the value.
func (s *sealer) open(ciphertext, aad string) (string, error) {
	enc, ok := strings.CutPrefix(ciphertext, sealPrefix)
	if !ok {
		return "", errUnsealable
	}
	raw, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil {
		return "", errUnsealable
	}
	for _, a := range s.aeads {
		if len(raw) < a.NonceSize()+a.Overhead() {
			break
		}
		nonce, sealed := raw[:a.NonceSize()], raw[a.NonceSize():]
		if plain, err := a.Open(nil, nonce, sealed, []byte(aad)); err == nil {
			return string(plain), nil
		}
	}
	return "", errUnsealable
}

// Fields of sealAAD.
const (
	fieldAddress = "address"
	fieldSecret  = "secret"
	// fieldPreviousSecret is a webhook's secret that a rotation replaced,
	// signing beside the new one during the overlap: a field of its own,
	// so that the ciphertext cannot be copied back into secret_enc.
	fieldPreviousSecret = "previous-secret"
	// fieldKey and fieldPreviousKey are a webhook's ed25519 signing key
	// and the one a rotation replaced.
	fieldKey         = "ed25519-key"
	fieldPreviousKey = "previous-ed25519-key"
	// fieldHeaders is a webhook's custom headers, a JSON list of [name,
	// value] pairs (encodeHeaders).
	fieldHeaders = "headers"
)

// sealAAD binds a sealed value to its row's tenant, type and field: the
// row's id is not known before the insert, and the type never changes.
func sealAAD(tenantID int64, t Type, field string) string {
	return fmt.Sprintf("tenant=%d;type=%s;field=%s", tenantID, t, field)
}
