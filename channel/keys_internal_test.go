package channel

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/deskkit/deskkit"
)

// mayHoldSetKey's shortcut rests on this: no rune outside ASCII folds
// (unicode.SimpleFold, as strings.EqualFold and encoding/json fold) to a
// letter of a key deskkit sets, as the Kelvin sign folds to k.
func TestSetKeysFoldOnlyInASCII(t *testing.T) {
	for _, k := range setKeys {
		for _, c := range k {
			for r := unicode.SimpleFold(c); r != c; r = unicode.SimpleFold(r) {
				if r > unicode.MaxASCII {
					t.Errorf("%U folds to %q of %q: mayHoldSetKey must look for it", r, c, k)
				}
			}
		}
	}
}

// FuzzWithTenant: for any JSON object, withTenant refuses exactly the data
// whose top-level keys include one that folds to a key deskkit sets
// without being it, and otherwise returns an object with the same keys
// and values but "tenantId", which holds the tenant whichever way a
// receiver matches keys.
func FuzzWithTenant(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"n":1}`, `{"tenantId":5}`, `{"TenantID":999999,"TENANTID":424242}`, `{"actor":null}`,
		`{"Actor":{"id":1}}`, `{"x":{"TenantID":1}}`, `{"tenant\u0049d":5}`, `{"tenantId":1,"tenantId":2}`,
		`{"a":"\"tenantid\""}`, `{"ACTOR ":1}`, `{"s":"\u003c\u003e","acTor":2}`, `{"\u212aey":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var in map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &in) != nil || in == nil {
			return
		}
		data, err := json.Marshal(json.RawMessage(s)) // as message() makes it
		if err != nil {
			return
		}
		var folded string
		for k := range in {
			for _, set := range setKeys {
				if k != set && strings.EqualFold(k, set) {
					folded = k
				}
			}
		}
		out, err := withTenant(data, 42)
		if folded != "" {
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != "data" {
				t.Fatalf("%s (key %q): %v, %s; want an input error on data", s, folded, err, out)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s gave %s: %v", s, out, err)
		}
		in["tenantId"] = json.RawMessage("42")
		if len(got) != len(in) {
			t.Fatalf("%s gave %s: keys %d, want %d", s, out, len(got), len(in))
		}
		for k, v := range in {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(got[k], &b)
			if ja, _ := json.Marshal(a); string(ja) != string(mustMarshal(b)) {
				t.Fatalf("%s gave %s: %q is %s, want %s", s, out, k, got[k], v)
			}
		}
		var receiver struct {
			TenantID json.RawMessage `json:"tenantId"`
		}
		if err := json.Unmarshal(out, &receiver); err != nil || string(receiver.TenantID) != "42" {
			t.Fatalf("%s gave %s: a receiver reads tenantId %s (%v)", s, out, receiver.TenantID, err)
		}
	})
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
