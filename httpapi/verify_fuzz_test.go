package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
)

// fuzzRoute is a verify route the fuzzer drives: body routes get the
// input's bytes as their JSON body, query routes its query string.
type fuzzRoute struct {
	op, method, path string
	query            bool
	// canSucceed: a 2xx is possible without knowing a code. Checks and
	// changes need a code sent in this round, and none is (they run
	// first, and the clock moves a day between inputs), so a 2xx from
	// them would be a bypass.
	canSucceed bool
}

var fuzzRoutes = []fuzzRoute{
	{op: "checkSmsCode", method: http.MethodGet, path: smsCheck, query: true},
	{op: "checkEmailCode", method: http.MethodGet, path: mailCheck, query: true},
	{op: "changeMobile", method: http.MethodPatch, path: mobilePath},
	{op: "changeEmail", method: http.MethodPatch, path: emailPath},
	{op: "updateCurrentUser", method: http.MethodPatch, path: currentPath, canSucceed: true},
	{op: "sendSmsCode", method: http.MethodPost, path: smsSendPath, canSucceed: true},
	{op: "sendEmailCode", method: http.MethodPost, path: mailSend, canSucceed: true},
}

// knownKeys are the error keys a verify route may answer with.
var knownKeys = []string{
	httpapi.KeyRequestTooLarge, httpapi.KeyValidation, httpapi.KeyNotFound, httpapi.KeyConflict, httpapi.KeyTooManyRequests,
	httpapi.KeyCodeWrong, httpapi.KeyCodeExpired, httpapi.KeyCodeMissing, httpapi.KeyCodeExhausted,
	httpapi.KeyTooManyFailures, httpapi.KeyAddressTaken, httpapi.KeyAlreadyBound, httpapi.KeyNotBound,
	httpapi.KeyLinkSecretRefused,
}

// FuzzVerifyBodies feeds arbitrary bytes as the JSON body of every verify
// route that takes one, and an arbitrary query string to both code checks,
// through the real server over SQLite, as alice (who has a mobile number
// and an e-mail address) and as carol (who has neither). Whatever the
// input, the answer is an envelope with a status below 500 and a known
// error key, and a success only where one is possible without a code.
//
//	go test ./httpapi -run '^$' -fuzz FuzzVerifyBodies -fuzztime 60s
func FuzzVerifyBodies(f *testing.F) {
	seeds := []struct {
		body, query string
	}{
		// Valid requests of each route.
		{`{"bizKey": "SIGNIN", "mobile": 13800138000, "country": "CN"}`, "bizKey=SIGNIN&mobile=13800138000&country=CN&verificationCode=123456"},
		{`{"bizKey": "BIND_MOBILE", "mobile": "+86 137-0013-7000", "country": "cn"}`, "bizKey=BIND_MOBILE&mobile=%2B86+137-0013-7000&country=cn&verificationCode=12345"},
		{`{"bizKey": "SIGNIN", "toAddress": [["alice@example.com", "ALICE@EXAMPLE.COM"], ["ann@example.org"]]}`, "bizKey=SIGNIN&email=alice%40example.com&verificationCode=012345"},
		{`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": "+86", "verificationCode": 12345}`, "bizKey=MODIFY_EMAIL&email=new%40example.com&verificationCode=1"},
		{`{"bizKey": "MODIFY_MOBILE", "mobile": "13700137000", "country": "CN", "itc": 86, "verificationCode": "012345", "linkSecret": "dkl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, ""},
		{`{"bizKey": "MODIFY_EMAIL", "email": "new@example.com", "verificationCode": "012345", "linkSecret": "dkl_x"}`, "bizKey=SIGNIN&email=+alice%40Example.COM+&verificationCode=00000000"},
		{`{"bizKey": "BIND_EMAIL", "email": " carol@Example.org ", "verificationCode": 0}`, "bizKey=SIGNIN&mobile=138+0013+8000&country=CN&verificationCode=0"},
		{`{"username": "  ann ", "gender": "FEMALE", "avatar": "https://example.com/a.png", "title": null, "address": ""}`, "bizKey=SIGNIN"},
		// Numbers JSON or the digits type refuses.
		{`{"bizKey": "SIGNIN", "mobile": -13800138000, "country": "CN"}`, "verificationCode=-1"},
		{`{"bizKey": "SIGNIN", "mobile": 1.38e10, "country": "CN"}`, "verificationCode=1e5"},
		{`{"bizKey": "BIND_MOBILE", "mobile": 013700137000, "country": "CN", "verificationCode": 00012}`, "verificationCode=%2B123"},
		{`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": "++86", "verificationCode": 123456789012345678901234567890}`, ""},
		{`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": "+", "verificationCode": true}`, ""},
		{`{"bizKey": "BIND_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 99999999999999999999, "verificationCode": {}}`, ""},
		// Odd addresses, regions and strings.
		{`{"bizKey": "SIGNIN", "mobile": "+", "country": "001"}`, "bizKey=SIGNIN&mobile=%2B&country=001&verificationCode=1"},
		{`{"bizKey": "SIGNIN", "mobile": "+999 1234 5678", "country": "us"}`, "bizKey=SIGNIN&mobile=%00&country=%C3%9F&verificationCode=1"},
		{`{"bizKey": "SIGNIN", "mobile": "\u0000", "country": "\u00df"}`, "bizKey=SIGNIN&email=%ff%40example.com&verificationCode=1"},
		{`{"bizKey": "SIGNIN", "toAddress": [["\"a b\"@example.com"], ["a@[127.0.0.1]"], ["a@b"]]}`, "bizKey=SIGNIN&email=%22a+b%22%40example.com&verificationCode=1"},
		{`{"bizKey": "SIGNIN", "toAddress": [[null], null, []]}`, "email=a%40b.co&email=a%40b.co"},
		{`{"bizKey": "SIGNIN", "toAddress": [["a@example.com", "b@example.com", "c@example.com", "d@example.com", "e@example.com", "f@example.com"]]}`, ""},
		{`{"email": "ä@exämple.com", "bizKey": "BIND_EMAIL", "verificationCode": "1"}`, "email=%C3%A4%40ex%C3%A4mple.com"},
		{`{"username": "\ud800", "firstName": "a\u0007", "gender": "", "avatar": "javascript:alert(1)"}`, ""},
		// Bytes that are not UTF-8, and escapes of half a surrogate pair:
		// encoding/json would read each as U+FFFD (issue 28, fault 5).
		{"{\"username\": \"bad \xff\xfe\", \"firstName\": \"Ann\"}", "bizKey=SIGNIN&email=bad%FF%FE%40example.com&verificationCode=1"},
		{"{\"firstName\": \"Ann\", \"title\": \"\xc3\", \"address\": \"\xed\xa0\x80\"}", "bizKey=SIGNIN&mobile=%C3&country=CN&verificationCode=1"},
		{"{\"bizKey\": \"SIGNIN\", \"toAddress\": [[\"a@example.com\", \"\xc0\xaf@example.com\"]]}", "bizKey=SIGNIN&country=%ED%A0%80"},
		{"{\"bizKey\": \"SIGNIN\", \"mobile\": \"138\x80\", \"country\": \"CN\"}", ""},
		{`{"lastName": "\udc00", "landline": "\ud83d\u0041"}`, ""},
		{`{"fullName": "\ud83d\ude00 \\ud800", "avatar": "https://example.com/\ufffd.png"}`, ""},
		{"{\"fullName\": \"\xef\xbf\xbd\", \"b\xffad\": 1}", ""},
		// Malformed JSON and query strings.
		{``, ``},
		{`null`, `%zz`},
		{`[]`, `=1`},
		{`{}`, `;`},
		{`{"bizKey": "SIGNIN"} {}`, `a=1&a=2`},
		{`{"bizKey": "SIGNIN", "bizKey": "MODIFY_MOBILE", "unknown": 1}`, "bizKey=SIGNIN&bizKey=SIGNUP"},
		{`{"BIZKEY": "SIGNIN", "Mobile": 13800138000, "country": "CN", "country": "US"}`, "BIZKEY=SIGNIN"},
		{`{"bizKey": "SIGNIN", "toAddress": [["a@example.com"]], "toAddress": ["a@example.com"]}`, ""},
		{`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`, "#frag"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.body), s.query)
	}

	db := dbtest.OpenSQLite(f)
	vh := newVerifyHost(f, db)
	srv, err := httpapi.New(&httpapi.Config{
		Authenticator: &fakeAuthenticator{AuthenticateFn: func(_ context.Context, token string) (deskkit.Principal, error) {
			if p, ok := tokens[token]; ok {
				return p, nil
			}
			return deskkit.Principal{}, deskkit.ErrUnauthenticated
		}},
		Verifier: vh.v,
		Logger:   slog.New(slog.DiscardHandler),
		Now:      vh.clock.Now,
	})
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, body []byte, query string) {
		// A new day: no limit is used up, and no code of an earlier input
		// is still valid.
		vh.clock.Advance(24*time.Hour + time.Minute)
		for _, token := range []string{"alice", "carol"} {
			for _, r := range fuzzRoutes {
				req := httptest.NewRequestWithContext(t.Context(), r.method, r.path, nil)
				if r.query {
					req.URL.RawQuery = query
				} else {
					req = httptest.NewRequestWithContext(t.Context(), r.method, r.path, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
				}
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				err := checkFuzzAnswer(r, rec)
				if err == nil && !r.query && rec.Code == http.StatusOK {
					err = checkDecodedAsWritten(body)
				}
				if err != nil {
					t.Fatalf("%s (%s %s) as %s, body %q, query %q: %v", r.op, r.method, r.path, token, body, query, err)
				}
			}
		}
	})
}

// checkFuzzAnswer checks one answer of FuzzVerifyBodies.
func checkFuzzAnswer(r fuzzRoute, rec *httptest.ResponseRecorder) error {
	env, key, err := decodeFuzzEnvelope(rec)
	if err != nil {
		return err
	}
	switch {
	case rec.Code >= 500:
		return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
	case rec.Code == http.StatusOK:
		if !r.canSucceed {
			return fmt.Errorf("succeeded without a code: %s", rec.Body)
		}
		if *env.Code != "S" || key != "" {
			return fmt.Errorf("200 with code %s, eKey %q: %s", *env.Code, key, rec.Body)
		}
		if r.op == "sendSmsCode" || r.op == "sendEmailCode" {
			var sent verify.Sent
			if err := json.Unmarshal(env.Data, &sent); err != nil || sent != (verify.Sent{ExpiresInSeconds: 300, ResendInSeconds: 60}) {
				return fmt.Errorf("sent data %s (%v)", env.Data, err)
			}
		}
	case rec.Code < 400:
		return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
	default:
		return checkFuzzError(rec, env, key, knownKeys)
	}
	return nil
}

// fuzzEnvelope is an answer of the fuzzed routes.
type fuzzEnvelope struct {
	Code     *string         `json:"code"`
	Msg      *string         `json:"msg"`
	Data     json.RawMessage `json:"data"`
	Datetime *string         `json:"datetime"`
	Ext      map[string]any  `json:"ext"`
}

// decodeFuzzEnvelope reads an answer strictly: every field of the
// envelope, and no other.
func decodeFuzzEnvelope(rec *httptest.ResponseRecorder) (fuzzEnvelope, string, error) {
	var env fuzzEnvelope
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return env, "", fmt.Errorf("status %d, body is not an envelope: %v: %s", rec.Code, err, rec.Body)
	}
	if env.Code == nil || env.Msg == nil || env.Data == nil || env.Datetime == nil || env.Ext == nil {
		return env, "", fmt.Errorf("status %d, envelope lacks a field: %s", rec.Code, rec.Body)
	}
	key, _ := env.Ext["eKey"].(string)
	return env, key, nil
}

// checkFuzzError checks a 4xx answer: an error envelope with one of keys,
// and a message when the key is a validation error's.
func checkFuzzError(rec *httptest.ResponseRecorder, env fuzzEnvelope, key string, keys []string) error {
	if *env.Code == "S" || string(env.Data) != "null" || !slices.Contains(keys, key) {
		return fmt.Errorf("status %d with code %s, eKey %q: %s", rec.Code, *env.Code, key, rec.Body)
	}
	if key == httpapi.KeyValidation && *env.Msg == "" {
		return errors.New("a 400 without a message")
	}
	return nil
}

// checkDecodedAsWritten is the rule for a body a route took (issue 28,
// fault 5): it is UTF-8, and each U+FFFD in its strings was written so (as
// the character or as \ufffd), never put there by encoding/json for a byte
// that is not UTF-8 or for half a surrogate pair.
func checkDecodedAsWritten(body []byte) error {
	if !utf8.Valid(body) {
		return errors.New("a body that is not UTF-8 was taken")
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil // not one JSON value: no string of it was taken
	}
	written := bytes.Count(body, []byte("\ufffd")) + len(writtenFFFD.FindAll(body, -1))
	if decoded := countFFFD(v); decoded > written {
		return fmt.Errorf("a body was taken with %d U+FFFD where it wrote %d: encoding/json replaced what was no UTF-8", decoded, written)
	}
	return nil
}

// writtenFFFD is U+FFFD written as an escape, in any case.
var writtenFFFD = regexp.MustCompile(`\\u[fF]{3}[dD]`)

// countFFFD counts U+FFFD in the keys and strings of a decoded JSON value.
func countFFFD(v any) int {
	switch v := v.(type) {
	case string:
		return strings.Count(v, "\ufffd")
	case []any:
		n := 0
		for _, e := range v {
			n += countFFFD(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range v {
			n += strings.Count(k, "\ufffd") + countFFFD(e)
		}
		return n
	}
	return 0
}
