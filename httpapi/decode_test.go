package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
)

// Issue 12, 3.6: messages that misled. A code written as a number with a
// leading zero (as the seed's "number" invites) is invalid JSON, and the
// 400 said only where; it now says why and how to write it. A flat
// toAddress said "must be an array", which it was.
func TestDecodeMessages(t *testing.T) {
	e := setup(t)
	body := `{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "verificationCode": 024172}`
	a := e.call(t, http.MethodPatch, mobilePath, "alice", body)
	a.wantError(t, 400, httpapi.KeyValidation, "verificationCode")
	want := fmt.Sprintf(`verificationCode is not valid JSON: a number cannot start with 0 (024172, at byte %d); write it as a string: "024172"`, strings.Index(body, "024172")+1)
	if a.msg != want {
		t.Errorf("msg %q, want %q", a.msg, want)
	}

	a = e.call(t, http.MethodPost, mailSend, "alice", `{"bizKey": "SIGNIN", "toAddress": ["ann@example.com"]}`)
	a.wantError(t, 400, httpapi.KeyValidation, "toAddress")
	if a.msg != "toAddress must be an array of arrays of addresses" {
		t.Errorf("msg %q", a.msg)
	}
}

// Issue 28, fault 5: invalid UTF-8 in a JSON body was stored as U+FFFD,
// where the same bytes in a query are refused. DecodeJSON refuses it, and
// an escape of half a surrogate pair (which encoding/json also turns into
// U+FFFD), naming the field by its JSON path.
func TestDecodeJSONInvalidUTF8(t *testing.T) {
	type inner struct {
		City string   `json:"city"`
		Tags []string `json:"tags"`
	}
	type request struct {
		Name    string            `json:"name"`
		Home    inner             `json:"home"`
		Lists   [][]string        `json:"lists"`
		Labels  map[string]string `json:"labels"`
		Comment *string           `json:"comment"`
	}
	for _, c := range []struct {
		body, want string
	}{
		{"{\"name\":\"bad \xff\xfe\"}", "name must be valid UTF-8"},
		{"{\"name\":\"\xc3\"}", "name must be valid UTF-8"},         // cut short
		{"{\"name\":\"\xed\xa0\x80\"}", "name must be valid UTF-8"}, // a surrogate in UTF-8
		{"{\"name\":\"\xc0\xaf\"}", "name must be valid UTF-8"},     // overlong
		{"{\"comment\":\"ok\",\"home\":{\"city\":\"x\xff\"}}", "home.city must be valid UTF-8"},
		{"{\"home\":{\"tags\":[\"a\",\"\xfe\"]}}", "home.tags must be valid UTF-8"},
		{"{\"lists\":[[\"a\"],[\"b\x80\"]]}", "lists must be valid UTF-8"},
		{"{\"labels\":{\"k\":\"\xff\"}}", "labels.k must be valid UTF-8"},
		{"{\"labels\":{\"k\xff\":\"v\"}}", "labels must be valid UTF-8"}, // a key: named by its object
		{"{\"na\xffme\":\"v\"}", "body must be valid UTF-8"},
		{`{"name":"\ud800"}`, `name must be valid UTF-8; \ud800 alone is half of a surrogate pair, no character`},
		{`{"name":"a\uDFFFb"}`, `name must be valid UTF-8; \uDFFF alone is half of a surrogate pair, no character`},
		{`{"name":"\ude00\ud83d"}`, `name must be valid UTF-8; \ude00 alone is half of a surrogate pair, no character`},
		{`{"name":"\ud83d\u0041"}`, `name must be valid UTF-8; \ud83d alone is half of a surrogate pair, no character`},
		{`{"name":"\ud83d"}`, `name must be valid UTF-8; \ud83d alone is half of a surrogate pair, no character`},
		{`{"home":{"tags":["\\", "\ud800x"]}}`, `home.tags must be valid UTF-8; \ud800 alone is half of a surrogate pair, no character`},
	} {
		err := httpapi.DecodeJSON(jsonRequest(c.body), new(request))
		var in *deskkit.InputError
		if !errors.As(err, &in) || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
	// What is valid passes as written: a surrogate pair is its character,
	// an escaped backslash before a u is no escape, U+FFFD written as such
	// is a character like any other.
	for body, want := range map[string]string{
		`{"name":"\ud83d\ude00"}`:     "😀",
		`{"name":"\uD83D\uDE00 ok"}`:  "😀 ok",
		`{"name":"\\ud800"}`:          `\ud800`,
		`{"name":"\\\ud83d\ude00"}`:   `\😀`,
		`{"name":"\ufffd"}`:           "\ufffd",
		"{\"name\":\"\xef\xbf\xbd\"}": "\ufffd",
		`{"name":"a\u00e9\u4e2d\n"}`:  "aé中\n",
		"{\"name\":\"\u4e2d\u6587\"}": "中文",
	} {
		var got request
		if err := httpapi.DecodeJSON(jsonRequest(body), &got); err != nil || got.Name != want {
			t.Errorf("%q: %q, %v; want %q", body, got.Name, err, want)
		}
	}
	// Bytes that are not UTF-8 outside a string are no JSON, as before.
	err := httpapi.DecodeJSON(jsonRequest("{\"name\":\"a\"}\xff"), new(request))
	if err == nil || !strings.Contains(err.Error(), "must be valid JSON") && !strings.Contains(err.Error(), "exactly one JSON object") {
		t.Errorf("a stray byte after the object: %v", err)
	}
}

func jsonRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}
