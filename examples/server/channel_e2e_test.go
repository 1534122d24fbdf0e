package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskkit/deskkit/internal/smtptest"
)

// sink is one loopback HTTP server playing a webhook receiver, a WeCom
// robot (/cgi-bin/webhook/send) and a DingTalk robot (/robot/send). It
// records every request, and answers robots with errcode.
type sink struct {
	mu      sync.Mutex
	reqs    []sinkRequest
	errcode int // what the robots answer
	*httptest.Server
}

type sinkRequest struct {
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

func startSink(t *testing.T) *sink {
	s := &sink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, sinkRequest{Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
		code := s.errcode
		s.mu.Unlock()
		if r.URL.Path == "/hook" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"errcode":`+strconv.Itoa(code)+`,"errmsg":"refused by the test"}`) //nolint:errcheck // the client reads what it can
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) last(t *testing.T, path string) sinkRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.reqs) - 1; i >= 0; i-- {
		if s.reqs[i].Path == path {
			return s.reqs[i]
		}
	}
	t.Fatalf("nothing came to %s", path)
	return sinkRequest{}
}

func (s *sink) setErrcode(n int) {
	s.mu.Lock()
	s.errcode = n
	s.mu.Unlock()
}

// TestChannelsEndToEnd runs the five channel operations through the
// reference server as a user runs it, with real loopback receivers and a
// real SMTP server, on both databases.
func TestChannelsEndToEnd(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		mail := smtptest.Start(t)
		recv := startSink(t)
		base, logs := startServer(t, map[string]string{
			envDatabaseURL: rawURL, envSMTPAddr: mail.Addr, envSMTPFrom: "Deskkit <noreply@example.com>",
			envChannelAllowPrivate: "true", envChannelTestsPerMin: "8",
		})
		// Only admins manage channels; bob, of ann's tenant, is not one.
		ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
		bob, _ := issue(t, rawURL, "-tenant", "acme", "-username", "bob")
		zed, _ := issue(t, rawURL, "-tenant", "other", "-username", "zed", "-admin")

		// A webhook: the secret comes once, with the add.
		var hook struct {
			ID                         int64
			ChannelType, Name, Address string
			Secret                     string
		}
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "ops", "address": recv.URL + "/hook"}, &hook)
		if hook.ID == 0 || hook.ChannelType != "WEBHOOK" || !strings.HasPrefix(hook.Secret, "whsec_") {
			t.Fatalf("added webhook: %+v", hook)
		}
		var list []map[string]any
		ok(t, base, ann, http.MethodGet, "/api/v1/event/channel/type/WEBHOOK", nil, &list)
		if len(list) != 1 || list[0]["name"] != "ops" || list[0]["secret"] != nil {
			t.Fatalf("webhook list: %v", list)
		}
		var res struct{ MessageID, Secret string }
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel/test", map[string]any{"id": hook.ID, "channelType": "WEBHOOK", "name": "ops", "address": recv.URL + "/hook"}, &res)
		got := recv.last(t, "/hook")
		wh, err := standardwebhooks.NewWebhook(hook.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(got.Body, got.Header); err != nil {
			t.Errorf("the test message's signature: %v", err)
		}
		var ev struct {
			Type string
			Data map[string]any
		}
		if err := json.Unmarshal(got.Body, &ev); err != nil || ev.Type != "channel.test" || got.Header.Get("webhook-id") != res.MessageID || res.Secret != "" {
			t.Errorf("test message %s %v, headers %v, result %+v", got.Body, err, got.Header, res)
		}

		// WeCom under its alias; the answer has the canonical name.
		wecom := recv.URL + "/cgi-bin/webhook/send?key=k-123"
		var robot struct {
			ID          int64
			ChannelType string
		}
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WECHAT", "name": "wecom", "address": wecom}, &robot)
		if robot.ChannelType != "ENTERPRISE_CHAT" {
			t.Errorf("WECHAT added as %q", robot.ChannelType)
		}
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel/test", map[string]any{"channelType": "ENTERPRISE_CHAT", "name": "wecom", "address": wecom}, nil)
		if got := recv.last(t, "/cgi-bin/webhook/send"); got.Query["key"][0] != "k-123" || !strings.Contains(string(got.Body), `"msgtype":"markdown"`) {
			t.Errorf("WeCom got %v %s", got.Query, got.Body)
		}
		recv.setErrcode(93000)
		status, env := call(t, base, ann, http.MethodPost, "/api/v1/event/channel/test", map[string]any{"channelType": "ENTERPRISE_CHAT", "name": "wecom", "address": wecom})
		if status != http.StatusBadGateway || env.Ext["eKey"] != "channel_test_failed" || !strings.Contains(env.Msg, "93000") {
			t.Errorf("WeCom answering errcode 93000: %d %+v", status, env)
		}
		recv.setErrcode(0)

		// DingTalk, signed with its write-only secret.
		ding := recv.URL + "/robot/send?access_token=t-456"
		const sec = "SECtest0123456789"
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "DINGTALK", "name": "ding", "address": ding, "secret": sec}, nil)
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel/test", map[string]any{"channelType": "WORKPLACE_CHAT", "name": "ding", "address": ding}, nil)
		got = recv.last(t, "/robot/send")
		ts := got.Query.Get("timestamp")
		mac := hmac.New(sha256.New, []byte(sec))
		mac.Write([]byte(ts + "\n" + sec))
		if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); got.Query.Get("sign") != want || !strings.Contains(string(got.Body), "ding") {
			t.Errorf("DingTalk got sign %q (want %q), body %s", got.Query.Get("sign"), want, got.Body)
		}
		var dl []map[string]any
		ok(t, base, ann, http.MethodGet, "/api/v1/event/channel/type/WORKPLACE_CHAT", nil, &dl)
		if len(dl) != 1 || dl[0]["channelType"] != "WORKPLACE_CHAT" || strings.Contains(mustJSON(t, dl), sec) {
			t.Errorf("DingTalk list: %v", dl)
		}

		// bob may list, with the robot's token and the webhook's path
		// masked, and may change nothing.
		ok(t, base, bob, http.MethodGet, "/api/v1/event/channel/type/WORKPLACE_CHAT", nil, &dl)
		if len(dl) != 1 || dl[0]["address"] != recv.URL+"/robot/send?access_token=***" {
			t.Errorf("DingTalk list as bob: %v", dl)
		}
		ok(t, base, bob, http.MethodGet, "/api/v1/event/channel/type/WEBHOOK", nil, &list)
		if len(list) != 1 || list[0]["address"] != recv.URL+"/***" {
			t.Errorf("webhook list as bob: %v", list)
		}
		for _, c := range []struct {
			method, path string
			body         map[string]any
		}{
			{http.MethodPut, "/api/v1/event/channel", map[string]any{"id": hook.ID, "channelType": "WEBHOOK", "name": "ops", "address": "https://bob.example.com/steal"}},
			{http.MethodDelete, "/api/v1/event/channel/" + strconv.FormatInt(hook.ID, 10), nil},
			{http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "bob's", "address": recv.URL + "/hook"}},
			{http.MethodPost, "/api/v1/event/channel/test", map[string]any{"id": hook.ID, "channelType": "WEBHOOK", "name": "ops", "address": recv.URL + "/hook"}},
			// The deliveries and the state of channels are admins' too, and
			// so is publishing by hand.
			{http.MethodPatch, "/api/v1/event/channel/" + strconv.FormatInt(hook.ID, 10) + "/disable", nil},
			{http.MethodPatch, "/api/v1/event/channel/" + strconv.FormatInt(hook.ID, 10) + "/enable", nil},
			{http.MethodGet, "/api/v1/event/channel/" + strconv.FormatInt(hook.ID, 10) + "/deliveries", nil},
			{http.MethodPost, "/api/v1/event/channel/" + strconv.FormatInt(hook.ID, 10) + "/recover?since=2026-01-01T00:00:00Z", nil},
			{http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "from bob"}},
		} {
			var body any
			if c.body != nil {
				body = c.body
			}
			if status, env := call(t, base, bob, c.method, c.path, body); status != http.StatusForbidden || env.Ext["eKey"] != "forbidden" {
				t.Errorf("%s %s as bob: %d %+v, want 403 forbidden", c.method, c.path, status, env)
			}
		}
		ok(t, base, ann, http.MethodGet, "/api/v1/event/channel/type/WEBHOOK", nil, &list)
		if len(list) != 1 || list[0]["address"] != recv.URL+"/hook" || list[0]["name"] != "ops" {
			t.Errorf("webhook list after bob's tries: %v", list)
		}

		// E-mail through the SMTP server, one message per address.
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "EMAIL", "name": "team", "address": " a@example.com, B@Example.COM ,a@example.com"}, nil)
		var ml []struct{ Address string }
		ok(t, base, ann, http.MethodGet, "/api/v1/event/channel/type/EMAIL", nil, &ml)
		if len(ml) != 1 || ml[0].Address != "a@example.com,B@example.com" {
			t.Errorf("e-mail list: %+v", ml)
		}
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel/test", map[string]any{"channelType": "EMAIL", "name": "team", "address": ml[0].Address}, nil)
		if len(mail.To("a@example.com")) != 1 || len(mail.To("B@example.com")) != 1 {
			t.Errorf("mail: %d to a, %d to B", len(mail.To("a@example.com")), len(mail.To("B@example.com")))
		}

		// Replace, and what it refuses.
		var replaced struct {
			ID   int64
			Name string
		}
		ok(t, base, ann, http.MethodPut, "/api/v1/event/channel", map[string]any{"id": hook.ID, "channelType": "WEBHOOK", "name": "ops-2", "address": recv.URL + "/hook"}, &replaced)
		if replaced.ID != hook.ID || replaced.Name != "ops-2" {
			t.Errorf("replaced: %+v", replaced)
		}
		for _, c := range []struct {
			name   string
			token  string
			method string
			path   string
			body   map[string]any
			status int
			key    string
		}{
			{"type change", ann, http.MethodPut, "/api/v1/event/channel", map[string]any{"id": hook.ID, "channelType": "EMAIL", "name": "ops-2", "address": "x@example.com"}, 400, "param_validation_error"},
			{"no id", ann, http.MethodPut, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "ops-2", "address": recv.URL}, 400, "param_validation_error"},
			{"other tenant", zed, http.MethodPut, "/api/v1/event/channel", map[string]any{"id": hook.ID, "channelType": "WEBHOOK", "name": "x", "address": recv.URL}, 404, "resource_not_found"},
			{"name taken", ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "team", "address": recv.URL}, 409, "channel_name_taken"},
			{"unknown type", ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "SMS", "name": "s", "address": recv.URL}, 400, "param_validation_error"},
			{"metadata address", ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "m", "address": "http://169.254.169.254/latest"}, 400, "channel_address_blocked"},
			{"other tenant's delete", zed, http.MethodDelete, "/api/v1/event/channel/" + strconv.FormatInt(hook.ID, 10), nil, 404, "resource_not_found"},
		} {
			var body any
			if c.body != nil {
				body = c.body
			}
			if status, env := call(t, base, c.token, c.method, c.path, body); status != c.status || env.Ext["eKey"] != c.key {
				t.Errorf("%s: %d %+v, want %d %s", c.name, status, env, c.status, c.key)
			}
		}

		// The quota: 5 webhooks, the 6th is refused with E3.
		for i := 2; i <= 5; i++ {
			ok(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "hook" + strconv.Itoa(i), "address": recv.URL + "/hook"}, nil)
		}
		status, env = call(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "hook6", "address": recv.URL + "/hook"})
		if status != http.StatusConflict || env.Code != "E3" || env.Ext["eKey"] != "channel_quota_exceeded" {
			t.Errorf("a 6th webhook: %d %+v", status, env)
		}
		ok(t, base, ann, http.MethodDelete, "/api/v1/event/channel/"+strconv.FormatInt(hook.ID, 10), nil, nil)
		var six struct{ ID int64 }
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "hook6", "address": recv.URL + "/hook"}, &six)

		// The throttle: 8 messages a minute per tenant; 6 were sent above
		// (the e-mail test counts one per address).
		for i := range 3 {
			status, env = call(t, base, ann, http.MethodPost, "/api/v1/event/channel/test", map[string]any{"channelType": "WEBHOOK", "name": "try", "address": recv.URL + "/hook"})
			if want := i < 2; want != (status == http.StatusOK) {
				t.Errorf("message %d: %d %+v", 7+i, status, env)
			}
		}
		if status != http.StatusTooManyRequests || env.Ext["eKey"] != "too_many_requests" {
			t.Errorf("the 9th message: %d %+v", status, env)
		}
		if strings.Contains(logs.String(), hook.Secret) || strings.Contains(logs.String(), sec) {
			t.Error("a channel secret is in the server's log")
		}

		// Its health: healthy, then disabled by ann, by her name from the
		// directory.
		var health struct {
			Health         string
			DisabledBy     *int64
			DisabledByName string
		}
		path := "/api/v1/event/channel/" + strconv.FormatInt(six.ID, 10)
		if ok(t, base, bob, http.MethodGet, path, nil, &health); health.Health != "healthy" || health.DisabledBy != nil {
			t.Errorf("a new channel's health: %+v", health)
		}
		ok(t, base, ann, http.MethodPatch, path+"/disable", nil, nil)
		if ok(t, base, bob, http.MethodGet, path, nil, &health); health.Health != "disabled" || health.DisabledBy == nil || health.DisabledByName != "ann" {
			t.Errorf("the disabled channel's health: %+v", health)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChannelsGuardedByDefault: without DESKKIT_CHANNEL_ALLOW_PRIVATE_NETWORKS
// the server refuses channels on loopback, as a user would find it.
func TestChannelsGuardedByDefault(t *testing.T) {
	rawURL := "sqlite:" + t.TempDir() + "/deskkit.db"
	recv := startSink(t)
	base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL})
	ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
	for _, address := range []string{recv.URL + "/hook", "http://localhost/hook", "http://2130706433/hook", "http://[::ffff:127.0.0.1]/hook"} {
		status, env := call(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "ops", "address": address})
		if status != http.StatusBadRequest || env.Ext["eKey"] != "channel_address_blocked" {
			t.Errorf("adding %s: %d %+v", address, status, env)
		}
		status, env = call(t, base, ann, http.MethodPost, "/api/v1/event/channel/test", map[string]any{"channelType": "WEBHOOK", "name": "ops", "address": address})
		if status != http.StatusBadRequest || env.Ext["eKey"] != "channel_address_blocked" {
			t.Errorf("testing %s: %d %+v", address, status, env)
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.reqs) != 0 {
		t.Errorf("the receiver on loopback got %d requests", len(recv.reqs))
	}
}

// -channel-resends-per-minute (here through its variable) reaches the
// registry: past it, a resend or recover is 429 with Retry-After.
func TestResendsPerMinuteSetting(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		recv := startSink(t)
		base, _ := startServer(t, map[string]string{
			envDatabaseURL: rawURL, envChannelAllowPrivate: "true", envChannelResendsPerMin: "2",
		})
		ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-admin")
		var hook struct{ ID int64 }
		ok(t, base, ann, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "ops", "address": recv.URL + "/hook"}, &hook)
		recoverPath := "/api/v1/event/channel/" + strconv.FormatInt(hook.ID, 10) + "/recover?since=2026-01-01T00:00:00Z"
		for range 2 {
			ok(t, base, ann, http.MethodPost, recoverPath, nil, nil)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+recoverPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+ann)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || ra < 1 || ra > 60 ||
			!strings.Contains(string(body), "at most 2 resends and recovers a minute") {
			t.Errorf("the 3rd recover: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	})
}
