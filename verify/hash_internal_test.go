package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// TestHashesKeepTheirInput: the keyed hashes of codes and addresses hash
// the bytes they always hashed, so that codes sent and limits counted
// before an upgrade still match after it.
func TestHashesKeepTheirInput(t *testing.T) {
	v := &Verifier{addressKey: []byte("address key")}
	key := []byte("code key")
	u := User{ID: 42, TenantID: 7}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%d\x00%d\x00%s\x00%s\x00%s\x00%s", u.TenantID, u.ID, KindSMS, BindMobile, "+8613800138000", "012345")
	if got, want := v.hashCode(key, u, KindSMS, BindMobile, "+8613800138000", "012345"), hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("hashCode = %s, want %s", got, want)
	}
	mac = hmac.New(sha256.New, v.addressKey)
	fmt.Fprintf(mac, "%s\x00%s", KindEmail, "ann@example.com")
	if got, want := v.addressTag(KindEmail, "Ann@Example.com"), hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("addressTag = %s, want %s", got, want)
	}
}
