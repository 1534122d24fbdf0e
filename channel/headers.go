package channel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deskkit/deskkit"
)

// Header is a custom HTTP header that a channel sends with every request
// (Input.Headers): a webhook's Authorization token, a tenant id its
// receiver routes on.
type Header struct {
	_ struct{} `additionalProperties:"false" description:"A custom HTTP header sent with every request of the channel."`
	// Name is the header's name: an HTTP token (letters, digits and
	// !#$%&'*+-.^_|~), 1 to MaxHeaderNameBytes bytes, stored as written
	// and sent in HTTP's canonical form (x-api-key as X-Api-Key); names
	// differ without case, so two headers of one name are refused. (The
	// OpenAPI document's pattern writes the apostrophe as \x27: vacuum's
	// ECMA-262 check refuses it written plain.)
	Name string `json:"name" minLength:"1" maxLength:"100" pattern:"^[!#$%&\\x27*+.^_|~0-9A-Za-z-]+$" example:"Authorization" description:"The header's name: an HTTP token of 1 to 100 bytes (letters, digits and !#$%&'*+-.^_|~). Not a hop-by-hop header (Connection, Keep-Alive, Proxy-Authenticate, Proxy-Authorization, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade), not Host, Content-Length, Content-Type or Expect, and none of the webhook-* headers the signature uses; unique without case."`
	// Value is the header's value, at most MaxHeaderValueBytes bytes of
	// UTF-8 without control characters (tabs and line breaks included),
	// trimmed of spaces at either end. It may be empty.
	Value string `json:"value" maxLength:"1000" example:"Bearer 9f2c..." description:"The header's value: at most 1,000 bytes of UTF-8 without control characters, trimmed of spaces. Answered as *** to a user who sees addresses masked; treated as a secret: stored encrypted, never logged."`
}

// Bounds of custom headers.
const (
	MaxHeaders          = 10
	MaxHeaderNameBytes  = 100
	MaxHeaderValueBytes = 1000
)

// reservedHeaders are the names a client may not give: the hop-by-hop
// headers (RFC 9110 section 7.6.1, and the Proxy-Connection and Keep-Alive
// of old), the headers that frame the request, which the client sets
// (Host, Content-Length, Content-Type, Expect), and, by prefix, the
// webhook-* headers of Standard Webhooks. Canonical (http.CanonicalHeaderKey).
var reservedHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Trailers": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "Content-Length": true, "Content-Type": true, "Expect": true,
}

// normalizeHeaders checks the custom headers a client sent for a channel of
// type t and returns them as stored: values trimmed, nil for none. Every
// refusal is a *deskkit.InputError naming the field, headers[i].name or
// headers[i].value (i from 0, as the JSON's index), and the rule.
func normalizeHeaders(t Type, in []Header) ([]Header, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if !kindOf(t).Info().Headers {
		return nil, errNoHeaders(t)
	}
	if len(in) > MaxHeaders {
		return nil, deskkit.Invalid("headers", "must be at most %d headers", MaxHeaders)
	}
	out := make([]Header, len(in))
	seen := map[string]int{}
	for i, h := range in {
		name, err := checkHeaderName(fmt.Sprintf("headers[%d].name", i), h.Name)
		if err != nil {
			return nil, err
		}
		key := http.CanonicalHeaderKey(name)
		if j, ok := seen[key]; ok {
			return nil, deskkit.Invalid(fmt.Sprintf("headers[%d].name", i), "is %s again (headers[%d]); give each header once", name, j)
		}
		seen[key] = i
		value, err := checkHeaderValue(fmt.Sprintf("headers[%d].value", i), h.Value)
		if err != nil {
			return nil, err
		}
		out[i] = Header{Name: name, Value: value}
	}
	return out, nil
}

// checkHeaderName checks a header's name.
func checkHeaderName(field, name string) (string, error) {
	if name == "" {
		return "", deskkit.Invalid(field, "is required: a header's name, such as Authorization")
	}
	if len(name) > MaxHeaderNameBytes {
		return "", deskkit.Invalid(field, "must be at most %d bytes", MaxHeaderNameBytes)
	}
	for i := 0; i < len(name); i++ {
		if !tokenByte(name[i]) {
			return "", deskkit.Invalid(field, "must be an HTTP header name: letters, digits and %s, without spaces", "!#$%&'*+-.^_|~")
		}
	}
	key := http.CanonicalHeaderKey(name)
	if reservedHeaders[key] {
		return "", deskkit.Invalid(field, "is %s, which deskkit sets itself or which does not pass a proxy; it cannot be given", name)
	}
	if strings.HasPrefix(strings.ToLower(name), "webhook-") {
		return "", deskkit.Invalid(field, "is %s: the webhook-* headers carry the message's id, time and signature, and cannot be given", name)
	}
	return name, nil
}

// checkHeaderValue checks a header's value and returns it trimmed.
func checkHeaderValue(field, value string) (string, error) {
	if len(value) > MaxHeaderValueBytes {
		return "", deskkit.Invalid(field, "must be at most %d bytes", MaxHeaderValueBytes)
	}
	if !utf8.ValidString(value) {
		return "", deskkit.Invalid(field, "must be valid UTF-8")
	}
	for _, r := range value {
		if unicode.IsControl(r) {
			return "", deskkit.Invalid(field, "must not hold control characters (tabs and line breaks included)")
		}
	}
	return strings.Trim(value, " "), nil
}

// tokenByte reports whether c may appear in a header's name: an HTTP
// token's bytes (RFC 9110 section 5.6.2) but the backquote, which the
// OpenAPI document's pattern cannot carry, and no real header uses.
func tokenByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_|~", c) >= 0
}

// errNoHeaders refuses headers for type t, naming the types that take them.
func errNoHeaders(t Type) error {
	var items []deskkit.Text
	for _, k := range registered {
		if in := k.Info(); in.Headers {
			items = append(items, deskkit.Plain(in.Type))
		}
	}
	return deskkit.Invalid("headers", "are taken only by channels of type %s; %s channels send none", listOf(items), string(t))
}

// maskedHeaders is hs as a reader who sees addresses masked sees them:
// each value "***" (an empty one stays empty).
func maskedHeaders(hs []Header) []Header {
	out := make([]Header, len(hs))
	for i, h := range hs {
		out[i] = Header{Name: h.Name}
		if h.Value != "" {
			out[i].Value = masked
		}
	}
	return out
}

// encodeHeaders is hs as their column stores them before sealing: a JSON
// list of [name, value] pairs; "" for none.
func encodeHeaders(hs []Header) string {
	if len(hs) == 0 {
		return ""
	}
	pairs := make([][2]string, len(hs))
	for i, h := range hs {
		pairs[i] = [2]string{h.Name, h.Value}
	}
	b, _ := json.Marshal(pairs) // strings always encode
	return string(b)
}

// decodeHeaders reads what encodeHeaders wrote.
func decodeHeaders(s string) ([]Header, error) {
	if s == "" {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal([]byte(s), &pairs); err != nil {
		return nil, fmt.Errorf("headers: %w", err)
	}
	out := make([]Header, len(pairs))
	for i, p := range pairs {
		out[i] = Header{Name: p[0], Value: p[1]}
	}
	return out, nil
}
