package channel

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/deskkit/deskkit"
)

// FuzzHeaders: normalizeHeaders never panics; what it takes is at most
// MaxHeaders headers of token names, none reserved or webhook-*, unique
// without case, values without control characters and trimmed, which it
// takes again unchanged; what it refuses is an input error naming
// headers, or headers[i].name or .value of an index it was given. Each
// input is up to three headers written "name\x00value", split at "\x01".
func FuzzHeaders(f *testing.F) {
	for _, seed := range []string{
		"Authorization\x00Bearer abc",
		"X-Tenant\x00  acme  \x01X-Other\x00",
		"Host\x00evil",
		"webhook-id\x00x",
		"X-A\x00a\r\nb",
		"X A\x00v",
		"x-key\x00a\x01X-Key\x00b",
		"Transfer-Encoding\x00chunked",
		"\x00v",
		"X-Clé\x00v",
		"X-A\x00\xff",
		"TE\x00trailers\x01Keep-Alive\x00x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var in []Header
		for part := range strings.SplitSeq(s, "\x01") {
			name, value, _ := strings.Cut(part, "\x00")
			in = append(in, Header{Name: name, Value: value})
		}
		out, err := normalizeHeaders(Webhook, in)
		if err != nil {
			var ie *deskkit.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("%q: %v is no input error", s, err)
			}
			ok := ie.Field == "headers"
			for i := range in {
				ok = ok || ie.Field == "headers["+strconv.Itoa(i)+"].name" || ie.Field == "headers["+strconv.Itoa(i)+"].value"
			}
			if !ok {
				t.Fatalf("%q: the error names %q", s, ie.Field)
			}
			return
		}
		if len(out) != len(in) || len(out) > MaxHeaders {
			t.Fatalf("%q: %d headers out of %d", s, len(out), len(in))
		}
		seen := map[string]bool{}
		for _, h := range out {
			key := http.CanonicalHeaderKey(h.Name)
			if h.Name == "" || reservedHeaders[key] || strings.HasPrefix(strings.ToLower(h.Name), "webhook-") || seen[key] {
				t.Fatalf("%q: took the name %q", s, h.Name)
			}
			seen[key] = true
			for i := 0; i < len(h.Name); i++ {
				if !tokenByte(h.Name[i]) {
					t.Fatalf("%q: took the name %q", s, h.Name)
				}
			}
			if !utf8.ValidString(h.Value) || strings.IndexFunc(h.Value, unicode.IsControl) >= 0 || strings.TrimSpace(h.Value) != h.Value {
				t.Fatalf("%q: took the value %q", s, h.Value)
			}
		}
		again, err := normalizeHeaders(Webhook, out)
		if err != nil || len(again) != len(out) {
			t.Fatalf("%q: taken again: %v %v", s, again, err)
		}
		for i := range out {
			if again[i] != out[i] {
				t.Fatalf("%q: changed on a second pass: %q to %q", s, out[i], again[i])
			}
		}
		// They survive storage: encoded and decoded, the same.
		dec, err := decodeHeaders(encodeHeaders(out))
		if err != nil || len(dec) != len(out) {
			t.Fatalf("%q: stored: %v %v", s, dec, err)
		}
		for i := range out {
			if dec[i] != out[i] {
				t.Fatalf("%q: stored %q, read %q", s, out[i], dec[i])
			}
		}
	})
}
