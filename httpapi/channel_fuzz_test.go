package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// channelFuzzRoute is a channel route the fuzzer drives. Every route gets
// the input's bytes as its body (GET and DELETE ignore it); list and delete
// get the input's segment as their path parameter.
type channelFuzzRoute struct {
	op, method string
	target     func(segment string) string
}

var channelFuzzRoutes = []channelFuzzRoute{
	{"addEventChannel", http.MethodPost, func(string) string { return channelPath }},
	{"replaceEventChannel", http.MethodPut, func(string) string { return channelPath }},
	{"listEventChannels", http.MethodGet, func(s string) string { return channelTypePath + url.PathEscape(s) }},
	{"deleteEventChannel", http.MethodDelete, func(s string) string { return channelPath + "/" + url.PathEscape(s) }},
	{"testEventChannel", http.MethodPost, func(string) string { return channelTestPath }},
}

// channelFuzzKeys are the error keys a channel route may answer with;
// method_not_allowed is DELETE /event/channel/test, whose static segment
// shadows {id}.
var channelFuzzKeys = []string{
	httpapi.KeyRequestTooLarge, httpapi.KeyValidation, httpapi.KeyNotFound, httpapi.KeyRouteNotFound, httpapi.KeyMethodNotAllowed, httpapi.KeyTooManyRequests,
	httpapi.KeyChannelNameTaken, httpapi.KeyChannelQuotaExceeded, httpapi.KeyChannelAddressBlocked,
}

// loopbackResolver resolves every name to loopback, which the fuzzed
// registries may not reach: no name leads anywhere, and no DNS is asked.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// FuzzChannelBodies feeds arbitrary bytes as the body of the five channel
// routes, and an arbitrary path segment as the channel type of the list and
// the id of the delete, through the real server over SQLite. Whatever the
// input, nothing panics and the answer is an envelope with a status below
// 500 and a known error key.
//
// Nothing may leave the machine, and the test route sends for real, to the
// address in the body. The registry allows no private network, and every
// name resolves to loopback, which it refuses. An IP literal that the
// guard allows must contain a digit (public IPv4, and IPv6 global unicast
// 2000::/3), so a body whose address field holds any digit is not given to
// the test route: the other routes store and check it without connecting
// anywhere.
//
// Each input is a new tenant for the routes that store, so that the quotas
// never fill up and every input can succeed; the test route runs as alice,
// whose tenant holds one channel of each type for id and name lookups.
//
//	go test ./httpapi -run '^$' -fuzz FuzzChannelBodies -fuzztime 60s
func FuzzChannelBodies(f *testing.F) {
	seeds := []struct {
		body, segment string
	}{
		// Valid requests of each route, aliases included.
		{`{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`, "WEBHOOK"},
		{`{"channelType": "WECHAT", "name": "Team room", "address": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=abc"}`, "WECHAT"},
		{`{"id": null, "channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=tok", "secret": "SECabc"}`, "DINGTALK"},
		{`{"channelType": "EMAIL", "name": "On call", "address": "ann@Example.COM, bob@example.com,ann@example.com"}`, "EMAIL"},
		{`{"id": "1", "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example/v"}`, "1"},
		{`{"id": 2, "channelType": "EMAIL", "name": "On call", "address": "ann@example.com"}`, "2"},
		{`{"channelType": "WEBHOOK", "name": "Stored hook", "address": "http://hooks.example/stored"}`, "ENTERPRISE_CHAT"},
		{`{"channelType": "DINGTALK", "name": "Ding", "address": "http://ding.example/robot/send?access_token=t", "secret": ""}`, "WORKPLACE_CHAT"},
		// Addresses the guard refuses, in many spellings.
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://127.1/"}`, "0"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://0x7f.0.0.1/"}`, "-1"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://2130706433/"}`, "9223372036854775808"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://[::ffff:127.0.0.1]/"}`, "abc"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://[fd00:ec2::254]/"}`, "test"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://localhost./"}`, "type"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://hooks.localhost/"}`, ""},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://intranet/"}`, "."},
		// Addresses that are not URLs, or not the protocol's.
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://user:pw@hooks.example/"}`, ".."},
		{`{"channelType": "WEBHOOK", "name": "a", "address": " HTTP://HOOKS.EXAMPLE/#frag "}`, "%00"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://hooks.example:0/"}`, "webhook"},
		{`{"channelType": "WEBHOOK", "name": "a", "address": "http://h\u00f6oks.example/"}`, "SLACK"},
		{`{"channelType": "ENTERPRISE_CHAT", "name": "a", "address": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=a&key=b"}`, "007"},
		{`{"channelType": "WORKPLACE_CHAT", "name": "a", "address": "https://oapi.dingtalk.com/robot/send?access_token=t&sign=x"}`, "1e3"},
		{`{"channelType": "EMAIL", "name": "a", "address": "a@b,,c@d"}`, "+1"},
		{`{"channelType": "EMAIL", "name": "a", "address": "\"a b\"@example.com, a@[127.0.0.1]"}`, " 1"},
		// Ids and types the decoder or the rules refuse.
		{`{"id": -1, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example/"}`, "1.5"},
		{`{"id": 1e3, "channelType": "EMAIL", "name": "a", "address": "a@example.com"}`, "-0"},
		{`{"id": 9223372036854775808, "channelType": "EMAIL", "name": "a", "address": "a@example.com"}`, "0x1"},
		{`{"id": "", "channelType": "EMAIL", "name": "a", "address": "a@example.com"}`, "\u00e9"},
		{`{"id": true, "channelType": 1, "name": [], "address": {}, "secret": 2}`, "a/b"},
		{`{"id": {}, "channelType": null, "name": null, "address": null, "secret": null}`, "a?b"},
		{`{"channelType": "WEBHOOK", "name": "` + strings.Repeat("n", 101) + `", "address": "https://hooks.example/"}`, strings.Repeat("9", 30)},
		{`{"channelType": "WEBHOOK", "name": "\u0000\u202e", "address": "https://hooks.example/` + strings.Repeat("a", 2000) + `"}`, "EMAIL "},
		// Bytes that are not UTF-8, and escapes of half a surrogate pair:
		// encoding/json would read each as U+FFFD (issue 28, fault 5).
		{"{\"channelType\": \"WEBHOOK\", \"name\": \"bad \xff\xfe\", \"address\": \"https://hooks.example/deskkit\"}", "WEBHOOK\xff"},
		{"{\"channelType\": \"EMAIL\", \"name\": \"On call\", \"address\": \"ann\xc3@example.com\"}", "EMAIL"},
		{"{\"channelType\": \"DINGTALK\", \"name\": \"Ding\", \"address\": \"https://oapi.dingtalk.com/robot/send?access_token=tok\", \"secret\": \"SEC\xed\xa0\x80\"}", "DINGTALK"},
		{`{"channelType": "WEBHOOK", "name": "Ops \ud800", "address": "https://hooks.example/deskkit"}`, "\xc0\xaf"},
		{`{"channelType": "WEBHOOK", "name": "\ud83d\ude00 \\udc00 \ufffd", "address": "https://hooks.example/deskkit"}`, "WEBHOOK"},
		{"{\"channelType\": \"WEBHOOK\", \"name\": \"\xef\xbf\xbd\", \"address\": \"https://hooks.example/\\udfff\"}", "EMAIL"},
		// Malformed JSON.
		{``, ``},
		{`null`, `null`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`{"channelType": "WEBHOOK"} {}`, `WEBHOOK/x`},
		{`{"channelType": "WEBHOOK", "channelType": "EMAIL", "unknown": 1}`, `%2F`},
		{`{"CHANNELTYPE": "EMAIL", "Name": "a", "ADDRESS": "a@example.com"}`, `EMAIL`},
		{`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`, "#"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.body), s.segment)
	}

	h := newChannelHost(f, dbtest.OpenSQLite(f), channel.Config{Resolver: loopbackResolver{}})
	for _, in := range []channel.Input{
		{Type: "WEBHOOK", Name: "Stored hook", Address: "http://hooks.example/stored"},
		{Type: "EMAIL", Name: "On call", Address: "ann@example.com"},
		{Type: "WECHAT", Name: "Team room", Address: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=abc"},
		{Type: "DINGTALK", Name: "Ding", Address: "http://ding.example/robot/send?access_token=t", Secret: ptr("SECabc")},
	} {
		h.add(f, alice, in)
	}
	var tenant atomic.Int64
	tenant.Store(1000)
	srv, err := httpapi.New(&httpapi.Config{
		Authenticator: &fakeAuthenticator{AuthenticateFn: func(_ context.Context, token string) (deskkit.Principal, error) {
			if token == "alice" {
				return alice, nil
			}
			var id int64
			if _, err := fmt.Sscanf(token, "tenant%d", &id); err != nil {
				return deskkit.Principal{}, deskkit.ErrUnauthenticated
			}
			return deskkit.Principal{UserID: 1, TenantID: id}, nil
		}},
		Channels: h.reg, Logger: slog.New(slog.DiscardHandler), Now: h.clock.Now,
	})
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, body []byte, segment string) {
		// A new minute: the test throttle never refuses.
		h.clock.Advance(time.Minute)
		token := fmt.Sprintf("tenant%d", tenant.Add(1))
		for _, r := range channelFuzzRoutes {
			token := token
			if r.op == "testEventChannel" {
				if !digitFree(body) {
					continue
				}
				token = "alice"
			}
			req := httptest.NewRequestWithContext(t.Context(), r.method, r.target(segment), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			err := checkChannelFuzzAnswer(rec)
			if err == nil && rec.Code == http.StatusOK && r.method != http.MethodGet && r.method != http.MethodDelete {
				err = checkDecodedAsWritten(body)
			}
			if err != nil {
				t.Fatalf("%s (%s %s), body %q, segment %q: %v", r.op, r.method, r.target(segment), body, segment, err)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// digitFree reports whether no value of body that the server could read as
// the address (its JSON keys match fields case-insensitively) holds an
// ASCII digit. Bodies that are no JSON object are digit-free: the server
// refuses them before reading any field.
func digitFree(body []byte) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		// Not an object, or not one the server can decode either; but a
		// body the server's streaming decoder reads further than
		// Unmarshal (a second value after the first) is refused as well.
		return !bytes.ContainsAny(body, "0123456789")
	}
	for k, v := range fields {
		if !strings.EqualFold(k, "address") {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			continue // not a string: refused as a wrong type
		}
		if strings.ContainsAny(s, "0123456789") {
			return false
		}
	}
	return true
}

// checkChannelFuzzAnswer checks one answer of FuzzChannelBodies.
func checkChannelFuzzAnswer(rec *httptest.ResponseRecorder) error {
	env, key, err := decodeFuzzEnvelope(rec)
	if err != nil {
		return err
	}
	switch {
	case rec.Code >= 500:
		return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
	case rec.Code == http.StatusOK:
		if *env.Code != "S" || key != "" {
			return fmt.Errorf("200 with code %s, eKey %q: %s", *env.Code, key, rec.Body)
		}
	case rec.Code < 400:
		return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
	default:
		return checkFuzzError(rec, env, key, channelFuzzKeys)
	}
	return nil
}
