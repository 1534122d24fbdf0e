package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// eve is the admin of tenant 2: tenant 1's channels do not exist for her.
var eve = deskkit.Principal{UserID: 60, TenantID: 2, Admin: true}

// The channel routes.
const (
	channelPath     = "/api/v1/event/channel"
	channelTestPath = "/api/v1/event/channel/test"
	channelTypePath = "/api/v1/event/channel/type/"
)

// fakeMailer is the host's mail server.
type fakeMailer struct {
	SendMailFn func(ctx context.Context, m deskkit.Mail) error
}

func (f *fakeMailer) SendMail(ctx context.Context, m deskkit.Mail) error {
	return f.SendMailFn(ctx, m)
}

// fakeResolver answers names from a table, and that a name is unknown
// otherwise: no test ever asks real DNS.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if addrs, ok := f[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var (
	_ deskkit.Mailer        = (*fakeMailer)(nil)
	_ httpapi.Authenticator = (*fakeAuthenticator)(nil)
)

// channelNames is what the fake resolver knows: a name that resolves to a
// private address, and one that resolves to a documentation address and
// loopback. None is public, so that nothing can leave the machine.
var channelNames = fakeResolver{
	"intranet.example.com": {netip.MustParseAddr("10.0.0.5")},
	"rebind.example.com":   {netip.MustParseAddr("203.0.113.10"), netip.MustParseAddr("127.0.0.1")},
}

// channelHost is what a host gives the registry: a mail server that
// records what it is given (or fails with mailErr), and a clock.
type channelHost struct {
	reg   *channel.ChannelRegistry
	clock *clocktest.Clock

	mu      sync.Mutex
	mails   []deskkit.Mail
	mailErr error
}

// newChannelHost returns a registry over db, migrated. cfg's Now, Logger
// and (if nil) Resolver are the host's.
func newChannelHost(t testing.TB, db *bun.DB, cfg channel.Config) *channelHost {
	t.Helper()
	if err := channel.Migrate(context.Background(), db); err != nil {
		t.Fatalf("channel.Migrate: %v", err)
	}
	h := &channelHost{clock: clocktest.New(now)}
	cfg.Now = h.clock.Now
	cfg.Logger = slog.New(slog.DiscardHandler)
	if cfg.Resolver == nil {
		cfg.Resolver = channelNames
	}
	// These tests are about the HTTP mapping, made as users who are not
	// admins: every user manages channels here, unless a test asks for
	// the registry's default (TestChannelAuthorize).
	switch cfg.Authorizer.(type) {
	case nil:
		cfg.Authorizer = everyUserManages{}
	case registryDefault:
		cfg.Authorizer = nil
	}
	mailer := &fakeMailer{SendMailFn: func(_ context.Context, m deskkit.Mail) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.mailErr != nil {
			return h.mailErr
		}
		h.mails = append(h.mails, m)
		return nil
	}}
	reg, err := channel.New(db, []byte("0123456789abcdef0123456789abcdef-channel-test"), mailer, &cfg)
	if err != nil {
		t.Fatalf("channel.New: %v", err)
	}
	h.reg = reg
	return h
}

// everyUserManages lets every user manage the channels.
type everyUserManages struct{}

func (everyUserManages) CanManageChannels(context.Context, deskkit.Principal, channel.Action) (bool, error) {
	return true, nil
}

// registryDefault asks newChannelHost for the registry's own default:
// admins only.
type registryDefault struct{ everyUserManages }

// failMail makes the mail server refuse every message with err (nil: take
// them again).
func (h *channelHost) failMail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mailErr = err
}

// recipients lists who got mail, in order.
func (h *channelHost) recipients() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, m := range h.mails {
		out = append(out, m.To)
	}
	return out
}

// add stores a channel through the registry, as p.
func (h *channelHost) add(t testing.TB, p deskkit.Principal, in channel.Input) channel.Added {
	t.Helper()
	a, err := h.reg.Add(context.Background(), p, in)
	if err != nil {
		t.Fatalf("add %+v: %v", in, err)
	}
	return a
}

// channelEnv is a server that mounts only the channels, on loopback.
type channelEnv struct {
	*env // url and the call helpers
	host *channelHost
}

// newChannelEnv serves a registry over db with cfg (see newChannelHost).
func newChannelEnv(t *testing.T, db *bun.DB, cfg channel.Config) *channelEnv {
	t.Helper()
	h := newChannelHost(t, db, cfg)
	srv, err := httpapi.New(&httpapi.Config{
		Authenticator: channelAuthenticator(),
		Channels:      h.reg,
		Logger:        slog.New(slog.DiscardHandler),
		Now:           func() time.Time { return now },
	})
	if err != nil {
		t.Fatalf("httpapi.New: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &channelEnv{env: &env{url: ts.URL, db: db}, host: h}
}

// channelAuthenticator knows the tokens of tenant 1, and eve of tenant 2.
func channelAuthenticator() *fakeAuthenticator {
	return &fakeAuthenticator{AuthenticateFn: func(_ context.Context, token string) (deskkit.Principal, error) {
		if token == "eve" {
			return eve, nil
		}
		if p, ok := tokens[token]; ok {
			return p, nil
		}
		return deskkit.Principal{}, fmt.Errorf("unknown token: %w", deskkit.ErrUnauthenticated)
	}}
}

// list answers GET /event/channel/type/{typ} as token and checks that no
// secret is in the answer.
func (e *channelEnv) list(t *testing.T, token, typ string, secrets ...string) []channel.Channel {
	t.Helper()
	a := e.call(t, http.MethodGet, channelTypePath+typ, token, "")
	var out []channel.Channel
	a.wantOK(t, &out)
	if out == nil {
		t.Errorf("list %s: data %s, want an array", typ, a.data)
	}
	for _, s := range append(secrets, "secret", "whsec_", "SEC") {
		if strings.Contains(string(a.raw), s) {
			t.Errorf("list %s shows a secret (%q): %s", typ, s, a.raw)
		}
	}
	return out
}

// received is a request a receiver got.
type received struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// receiver is a webhook or a robot on loopback: it records every request
// and answers with status and body.
type receiver struct {
	url string

	mu     sync.Mutex
	status int
	body   string
	got    []received
}

func newReceiver(t testing.TB, status int, body string) *receiver {
	t.Helper()
	r := &receiver{status: status, body: body}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{method: req.Method, path: req.URL.Path, query: req.URL.RawQuery, header: req.Header.Clone(), body: b})
		status, body := r.status, r.body
		r.mu.Unlock()
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "https://elsewhere.example.com/hook")
		}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *receiver) answer(status int, body string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.body = status, body
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// last is the last request, which must exist.
func (r *receiver) last(t *testing.T) received {
	t.Helper()
	got := r.requests()
	if len(got) == 0 {
		t.Fatal("the receiver got no request")
	}
	return got[len(got)-1]
}

// verifyWebhook checks a webhook request with the official Standard
// Webhooks library, under secret: the signature, the id and timestamp
// headers, and the event type of the body.
func verifyWebhook(t *testing.T, req received, secret, messageID string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	// The registry's clock is not the library's: the timestamp is checked
	// against the clock below instead.
	if err := wh.VerifyIgnoringTimestamp(req.body, req.header); err != nil {
		t.Errorf("signature does not verify under %s: %v; headers %v", secret, err, req.header)
	}
	if got := req.header.Get("webhook-id"); got != messageID || !strings.HasPrefix(got, "msg_") || strings.Contains(got, ".") {
		t.Errorf("webhook-id %q, want %q", got, messageID)
	}
	if got, want := req.header.Get("webhook-timestamp"), fmt.Sprint(now.Unix()); got != want {
		t.Errorf("webhook-timestamp %q, want %q", got, want)
	}
	var body map[string]any
	if err := json.Unmarshal(req.body, &body); err != nil {
		t.Fatalf("webhook body %s: %v", req.body, err)
	}
	if body["type"] != "channel.test" {
		t.Errorf("webhook type %v, want channel.test; body %s", body["type"], req.body)
	}
}

// webhookSecret checks that s is a Standard Webhooks secret of 32 bytes.
func webhookSecret(t *testing.T, s string) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(key) != 32 {
		t.Errorf("secret %q is not whsec_ and 32 bytes in base64 (%v)", s, err)
	}
}

func TestChannelLifecycle(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := newChannelEnv(t, db, channel.Config{})

		// A webhook: its secret is in the add answer, and only there.
		var hook channel.Added
		e.call(t, http.MethodPost, channelPath, "alice",
			`{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`).wantOK(t, &hook)
		webhookSecret(t, hook.Secret)
		if diff := cmp.Diff(channel.Channel{ID: hook.ID, Type: channel.Webhook, Name: "Ops hook", Address: "https://hooks.example.com/deskkit", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Signing: channel.SigningHMAC, Headers: []channel.Header{}}, hook.Channel); diff != "" || hook.ID < 1 {
			t.Errorf("added webhook (-want +got):\n%s", diff)
		}

		// Aliases in, canonical names out; id may be sent as null.
		var wecom, ding, mail channel.Added
		e.call(t, http.MethodPost, channelPath, "alice",
			`{"id": null, "channelType": "WECHAT", "name": "Team room", "address": " https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=abc "}`).wantOK(t, &wecom)
		a := e.call(t, http.MethodPost, channelPath, "alice",
			`{"channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=tok", "secret": "SECdingsecret"}`)
		a.wantOK(t, &ding)
		if strings.Contains(string(a.raw), "SECdingsecret") {
			t.Errorf("the add answer shows the DingTalk secret: %s", a.raw)
		}
		e.call(t, http.MethodPost, channelPath, "alice",
			`{"channelType": "EMAIL", "name": "On call", "address": "ann@Example.COM, bob@example.com,ann@example.com"}`).wantOK(t, &mail)
		want := []channel.Added{
			{Channel: channel.Channel{ID: wecom.ID, Type: channel.EnterpriseChat, Name: "Team room", Address: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=abc", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Headers: []channel.Header{}}},
			{Channel: channel.Channel{ID: ding.ID, Type: channel.WorkplaceChat, Name: "Ding room", Address: "https://oapi.dingtalk.com/robot/send?access_token=tok", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Headers: []channel.Header{}}},
			{Channel: channel.Channel{ID: mail.ID, Type: channel.Email, Name: "On call", Address: "ann@example.com,bob@example.com", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Headers: []channel.Header{}}},
		}
		if diff := cmp.Diff(want, []channel.Added{wecom, ding, mail}); diff != "" {
			t.Errorf("added (-want +got):\n%s", diff)
		}

		// Lists by canonical name and by alias, never with a secret.
		for typ, want := range map[string][]channel.Channel{
			"WEBHOOK":         {hook.Channel},
			"ENTERPRISE_CHAT": {wecom.Channel},
			"WECHAT":          {wecom.Channel},
			"WORKPLACE_CHAT":  {ding.Channel},
			"DINGTALK":        {ding.Channel},
			"EMAIL":           {mail.Channel},
		} {
			if diff := cmp.Diff(want, e.list(t, "bob", typ, hook.Secret, "SECdingsecret")); diff != "" {
				t.Errorf("list %s (-want +got):\n%s", typ, diff)
			}
		}
		// Tenant 2 has none; an empty list is [].
		if a := e.call(t, http.MethodGet, channelTypePath+"WEBHOOK", "eve", ""); string(a.data) != "[]" {
			t.Errorf("eve's webhooks: %s, want []", a.data)
		}

		// Replace, with the id as a string and as a number.
		var replaced channel.Channel
		e.call(t, http.MethodPut, channelPath, "bob", fmt.Sprintf(
			`{"id": "%d", "channelType": "WEBHOOK", "name": "Ops hook 2", "address": "https://hooks.example.com/v2"}`, hook.ID)).wantOK(t, &replaced)
		wantHook := channel.Channel{ID: hook.ID, Type: channel.Webhook, Name: "Ops hook 2", Address: "https://hooks.example.com/v2", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Signing: channel.SigningHMAC, Headers: []channel.Header{}}
		if diff := cmp.Diff(wantHook, replaced); diff != "" {
			t.Errorf("replaced (-want +got):\n%s", diff)
		}
		replaced = channel.Channel{} // a robot's answer has no signing to overwrite the webhook's
		e.call(t, http.MethodPut, channelPath, "alice", fmt.Sprintf(
			`{"id": %d, "channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=tok2"}`, ding.ID)).wantOK(t, &replaced)
		wantDing := channel.Channel{ID: ding.ID, Type: channel.WorkplaceChat, Name: "Ding room", Address: "https://oapi.dingtalk.com/robot/send?access_token=tok2", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Headers: []channel.Header{}}
		if diff := cmp.Diff(wantDing, replaced); diff != "" {
			t.Errorf("replaced (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]channel.Channel{wantHook}, e.list(t, "alice", "WEBHOOK", hook.Secret)); diff != "" {
			t.Errorf("webhooks after the replace (-want +got):\n%s", diff)
		}

		// Delete: data null, then the channel is gone.
		a = e.call(t, http.MethodDelete, fmt.Sprintf("%s/%d", channelPath, hook.ID), "alice", "")
		a.wantOK(t, new(any))
		if string(a.data) != "null" {
			t.Errorf("delete data %s, want null", a.data)
		}
		if got := e.list(t, "alice", "WEBHOOK"); len(got) != 0 {
			t.Errorf("webhooks after the delete: %v", got)
		}
		e.call(t, http.MethodDelete, fmt.Sprintf("%s/%d", channelPath, hook.ID), "alice", "").wantError(t, 404, httpapi.KeyNotFound, "")
	})
}

// Another tenant's channel does not exist: replace, delete and test by
// its id are 404, and it is left as it was.
func TestChannelTenantIsolation(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := newChannelEnv(t, db, channel.Config{})
		hook := e.host.add(t, alice, channel.Input{Type: "WEBHOOK", Name: "Ops hook", Address: "https://hooks.example.com/a"})
		body := fmt.Sprintf(`{"id": %d, "channelType": "WEBHOOK", "name": "Mine now", "address": "https://evil.example.com/"}`, hook.ID)
		e.call(t, http.MethodPut, channelPath, "eve", body).wantError(t, 404, httpapi.KeyNotFound, "")
		e.call(t, http.MethodPost, channelTestPath, "eve", body).wantError(t, 404, httpapi.KeyNotFound, "")
		e.call(t, http.MethodDelete, fmt.Sprintf("%s/%d", channelPath, hook.ID), "eve", "").wantError(t, 404, httpapi.KeyNotFound, "")
		if diff := cmp.Diff([]channel.Channel{hook.Channel}, e.list(t, "alice", "WEBHOOK", hook.Secret)); diff != "" {
			t.Errorf("alice's webhooks (-want +got):\n%s", diff)
		}
		// Names are unique within a tenant only.
		e.call(t, http.MethodPost, channelPath, "eve", `{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/e"}`).
			wantOK(t, &channel.Added{})
	})
}

func TestChannelBadRequests(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := newChannelEnv(t, db, channel.Config{})
		hook := e.host.add(t, alice, channel.Input{Type: "WEBHOOK", Name: "Ops hook", Address: "https://hooks.example.com/a"})
		mail := e.host.add(t, alice, channel.Input{Type: "EMAIL", Name: "On call", Address: "ann@example.com"})
		id := fmt.Sprint(hook.ID)
		long := func(c string, n int) string { return strings.Repeat(c, n) }
		var eleven []string
		for i := range channel.MaxEmailAddrs + 1 {
			eleven = append(eleven, fmt.Sprintf("a%d@example.com", i))
		}
		elevenMails := strings.Join(eleven, ",")

		for _, tc := range []struct {
			name, method, target, body string
			status                     int
			key, field                 string
		}{
			// Add: the rules of each field.
			{"type unknown", "POST", channelPath, `{"channelType": "SMS", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "channelType"},
			{"type in lower case", "POST", channelPath, `{"channelType": "webhook", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "channelType"},
			{"type missing", "POST", channelPath, `{"name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "channelType"},
			{"name missing", "POST", channelPath, `{"channelType": "WEBHOOK", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "name"},
			{"name too long", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "` + long("é", 101) + `", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "name"},
			{"address missing", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a"}`, 400, httpapi.KeyValidation, "address"},
			{"address not a URL", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "hooks.example.com"}`, 400, httpapi.KeyValidation, "address"},
			{"address ftp", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "ftp://hooks.example.com/"}`, 400, httpapi.KeyValidation, "address"},
			{"address too long", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/` + long("a", 2000) + `"}`, 400, httpapi.KeyValidation, "address"},
			{"WeCom without its path", "POST", channelPath, `{"channelType": "WECHAT", "name": "a", "address": "https://qyapi.weixin.qq.com/send?key=abc"}`, 400, httpapi.KeyValidation, "address"},
			{"WeCom without key", "POST", channelPath, `{"channelType": "ENTERPRISE_CHAT", "name": "a", "address": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send"}`, 400, httpapi.KeyValidation, "address"},
			{"DingTalk without token", "POST", channelPath, `{"channelType": "DINGTALK", "name": "a", "address": "https://oapi.dingtalk.com/robot/send?key=abc"}`, 400, httpapi.KeyValidation, "address"},
			{"e-mail not an address", "POST", channelPath, `{"channelType": "EMAIL", "name": "a", "address": "ann@example.com, bob"}`, 400, httpapi.KeyValidation, "address"},
			{"e-mail eleven addresses", "POST", channelPath, `{"channelType": "EMAIL", "name": "a", "address": "` + elevenMails + `"}`, 400, httpapi.KeyValidation, "address"},
			{"secret on a webhook", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "secret": "SECabc"}`, 400, httpapi.KeyValidation, "secret"},
			{"secret not DingTalk's", "POST", channelPath, `{"channelType": "DINGTALK", "name": "a", "address": "https://oapi.dingtalk.com/robot/send?access_token=t", "secret": "abc"}`, 400, httpapi.KeyValidation, "secret"},
			{"header named Host", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "headers": [{"name": "X-Ok", "value": "1"}, {"name": "Host", "value": "evil"}]}`, 400, httpapi.KeyValidation, "headers[1].name"},
			{"header webhook-id", "PUT", channelPath, `{"id": ` + id + `, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "headers": [{"name": "webhook-id", "value": "x"}]}`, 400, httpapi.KeyValidation, "headers[0].name"},
			{"header value with a line break", "POST", channelTestPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "headers": [{"name": "X-A", "value": "a\r\nHost: x"}]}`, 400, httpapi.KeyValidation, "headers[0].value"},
			{"headers on e-mail", "POST", channelPath, `{"channelType": "EMAIL", "name": "a", "address": "ann@example.com", "headers": [{"name": "X-A", "value": "1"}]}`, 400, httpapi.KeyValidation, "headers"},
			{"header unknown field", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "headers": [{"name": "X-A", "value": "1", "secret": true}]}`, 400, httpapi.KeyValidation, "headers.secret"},
			{"headers an object", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "headers": {"X-A": "1"}}`, 400, httpapi.KeyValidation, "headers"},
			{"id on an add", "POST", channelPath, `{"id": 5, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"name taken", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/b"}`, 409, httpapi.KeyChannelNameTaken, ""},
			{"name taken by another type", "POST", channelPath, `{"channelType": "EMAIL", "name": "Ops hook", "address": "ops@example.com"}`, 409, httpapi.KeyChannelNameTaken, ""},

			// Bodies the decoder refuses, on each route that takes one.
			{"no body", "POST", channelPath, ``, 400, httpapi.KeyValidation, "body"},
			{"bad JSON", "POST", channelPath, `{"channelType": "WEBHOOK",`, 400, httpapi.KeyValidation, "body"},
			{"not an object", "PUT", channelPath, `["WEBHOOK"]`, 400, httpapi.KeyValidation, "body"},
			{"two objects", "POST", channelTestPath, `{"channelType": "WEBHOOK"} {}`, 400, httpapi.KeyValidation, "body"},
			{"unknown field", "POST", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "url": "x"}`, 400, httpapi.KeyValidation, "url"},
			{"unknown field on replace", "PUT", channelPath, `{"id": ` + id + `, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "tenantId": 2}`, 400, httpapi.KeyValidation, "tenantId"},
			{"unknown field on test", "POST", channelTestPath, `{"channelType": "EMAIL", "name": "a", "address": "ann@example.com", "to": "x"}`, 400, httpapi.KeyValidation, "to"},
			{"name a number", "POST", channelPath, `{"channelType": "WEBHOOK", "name": 5, "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "name"},
			{"type an array", "POST", channelPath, `{"channelType": ["WEBHOOK"], "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "channelType"},
			{"address an object", "PUT", channelPath, `{"id": ` + id + `, "channelType": "WEBHOOK", "name": "a", "address": {}}`, 400, httpapi.KeyValidation, "address"},
			{"secret a number", "POST", channelTestPath, `{"channelType": "DINGTALK", "name": "a", "address": "https://oapi.dingtalk.com/robot/send?access_token=t", "secret": 1}`, 400, httpapi.KeyValidation, "secret"},
			{"unknown query parameter", "POST", channelPath + "?dryRun=true", `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "dryRun"},

			// Replace: the id and the type.
			{"replace without id", "PUT", channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id null", "PUT", channelPath, `{"id": null, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id 0", "PUT", channelPath, `{"id": 0, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id negative", "PUT", channelPath, `{"id": -1, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id a fraction", "PUT", channelPath, `{"id": 1.5, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id with exponent", "PUT", channelPath, `{"id": 1e2, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id too big", "PUT", channelPath, `{"id": 9223372036854775808, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id letters", "PUT", channelPath, `{"id": "abc", "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id empty string", "PUT", channelPath, `{"id": "", "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id signed string", "PUT", channelPath, `{"id": "+` + id + `", "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace id a boolean", "PUT", channelPath, `{"id": true, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 400, httpapi.KeyValidation, "id"},
			{"replace type change", "PUT", channelPath, `{"id": ` + id + `, "channelType": "EMAIL", "name": "Ops hook", "address": "ops@example.com"}`, 400, httpapi.KeyValidation, "channelType"},
			{"replace unknown id", "PUT", channelPath, `{"id": 999999, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`, 404, httpapi.KeyNotFound, ""},
			{"replace name taken", "PUT", channelPath, `{"id": ` + id + `, "channelType": "WEBHOOK", "name": "On call", "address": "https://hooks.example.com/"}`, 409, httpapi.KeyChannelNameTaken, ""},
			{"replace bad address", "PUT", channelPath, `{"id": ` + id + `, "channelType": "WEBHOOK", "name": "Ops hook", "address": "mailto:ops@example.com"}`, 400, httpapi.KeyValidation, "address"},

			// List and delete: the path parameters.
			{"list unknown type", "GET", channelTypePath + "SMS", ``, 400, httpapi.KeyValidation, "channelType"},
			{"list unknown parameter", "GET", channelTypePath + "EMAIL?name=x", ``, 400, httpapi.KeyValidation, "name"},
			{"delete id 0", "DELETE", channelPath + "/0", ``, 400, httpapi.KeyValidation, "id"},
			{"delete id letters", "DELETE", channelPath + "/abc", ``, 400, httpapi.KeyValidation, "id"},
			{"delete id too big", "DELETE", channelPath + "/9223372036854775808", ``, 400, httpapi.KeyValidation, "id"},
			{"delete unknown id", "DELETE", channelPath + "/999999", ``, 404, httpapi.KeyNotFound, ""},
			{"delete unknown parameter", "DELETE", channelPath + "/" + id + "?force=true", ``, 400, httpapi.KeyValidation, "force"},

			// Test: the same rules as an add, and the id names a channel.
			{"test unknown type", "POST", channelTestPath, `{"channelType": "SMS", "name": "a", "address": "ann@example.com"}`, 400, httpapi.KeyValidation, "channelType"},
			{"test bad address", "POST", channelTestPath, `{"channelType": "EMAIL", "name": "a", "address": "ann"}`, 400, httpapi.KeyValidation, "address"},
			{"test id letters", "POST", channelTestPath, `{"id": "x1", "channelType": "EMAIL", "name": "a", "address": "ann@example.com"}`, 400, httpapi.KeyValidation, "id"},
			{"test unknown id", "POST", channelTestPath, `{"id": 999999, "channelType": "EMAIL", "name": "a", "address": "ann@example.com"}`, 404, httpapi.KeyNotFound, ""},

			// Routing: a static segment shadows {id}; nothing redirects.
			{"delete the test route", "DELETE", channelTestPath, ``, 405, httpapi.KeyMethodNotAllowed, ""},
			{"get the test route", "GET", channelTestPath, ``, 405, httpapi.KeyMethodNotAllowed, ""},
			{"get a channel id 0", "GET", channelPath + "/0", ``, 400, httpapi.KeyValidation, "id"},
			{"patch a channel", "PATCH", channelPath, `{}`, 405, httpapi.KeyMethodNotAllowed, ""},
			{"list without type", "GET", channelTypePath, ``, 404, httpapi.KeyRouteNotFound, ""},
			{"list of nothing", "GET", strings.TrimSuffix(channelTypePath, "/"), ``, 404, httpapi.KeyRouteNotFound, ""},
			{"delete trailing slash", "DELETE", channelPath + "/" + id + "/", ``, 404, httpapi.KeyRouteNotFound, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.call(t, tc.method, tc.target, "alice", tc.body).wantError(t, tc.status, tc.key, tc.field)
			})
		}
		for _, method := range []string{http.MethodDelete, http.MethodGet} {
			a := e.call(t, method, channelTestPath, "alice", "")
			if got := a.header.Get("Allow"); got != "POST" {
				t.Errorf("%s %s: Allow %q, want POST", method, channelTestPath, got)
			}
		}
		// Nothing refused was stored or changed.
		if diff := cmp.Diff([]channel.Channel{hook.Channel}, e.list(t, "alice", "WEBHOOK", hook.Secret)); diff != "" {
			t.Errorf("webhooks (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]channel.Channel{mail.Channel}, e.list(t, "alice", "EMAIL")); diff != "" {
			t.Errorf("e-mail channels (-want +got):\n%s", diff)
		}
		if got := e.host.recipients(); len(got) != 0 {
			t.Errorf("refused tests sent mail to %v", got)
		}
	})
}

// Every route wants a bearer token.
func TestChannelRoutesRequireToken(t *testing.T) {
	e := newChannelEnv(t, dbtest.OpenSQLite(t), channel.Config{})
	hook := newReceiver(t, http.StatusNoContent, "")
	for _, r := range []struct{ method, target, body string }{
		{http.MethodPost, channelPath, `{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`},
		{http.MethodPut, channelPath, `{"id": 1, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`},
		{http.MethodGet, channelTypePath + "WEBHOOK", ""},
		{http.MethodDelete, channelPath + "/1", ""},
		{http.MethodPost, channelTestPath, `{"channelType": "WEBHOOK", "name": "a", "address": "` + hook.url + `"}`},
	} {
		for _, token := range []string{"", "mallory"} {
			a := e.call(t, r.method, r.target, token, r.body)
			a.wantError(t, 401, httpapi.KeyUnauthorized, "")
			if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("%s %s: WWW-Authenticate %q", r.method, r.target, a.header.Get("WWW-Authenticate"))
			}
		}
	}
	if n := len(hook.requests()); n != 0 {
		t.Errorf("the webhook got %d requests without a token", n)
	}
}

// Without a registry the routes are not there.
func TestChannelRoutesNotMounted(t *testing.T) {
	srv, err := httpapi.New(&httpapi.Config{Authenticator: channelAuthenticator(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	e := &env{url: ts.URL}
	e.call(t, http.MethodPost, channelPath, "alice", `{}`).wantError(t, 404, httpapi.KeyRouteNotFound, "")
	e.call(t, http.MethodGet, channelTypePath+"WEBHOOK", "alice", "").wantError(t, 404, httpapi.KeyRouteNotFound, "")
	for _, r := range srv.Routes() {
		if strings.HasPrefix(r.Path, channelPath) {
			t.Errorf("route %s %s without a registry", r.Method, r.Path)
		}
	}
}

// 5 webhooks per tenant: the 6th is 409 with a key of its own, E3, and no
// Retry-After (waiting does not help; deleting one does).
func TestChannelQuota(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := newChannelEnv(t, db, channel.Config{})
		add := func(token string, i int) answer {
			return e.call(t, http.MethodPost, channelPath, token,
				fmt.Sprintf(`{"channelType": "WEBHOOK", "name": "hook %d", "address": "https://hooks.example.com/%d"}`, i, i))
		}
		var first channel.Added
		for i := range channel.Webhook.Quota() {
			var added channel.Added
			add("alice", i).wantOK(t, &added)
			if i == 0 {
				first = added
			}
		}
		a := add("bob", 5)
		a.wantError(t, 409, httpapi.KeyChannelQuotaExceeded, "")
		if a.header.Get("Retry-After") != "" {
			t.Errorf("quota answer has Retry-After %q", a.header.Get("Retry-After"))
		}
		if !strings.Contains(a.msg, "WEBHOOK") || !strings.Contains(a.msg, "5") {
			t.Errorf("msg %q does not name the type and the quota", a.msg)
		}
		// Another type, and another tenant, have quotas of their own.
		e.call(t, http.MethodPost, channelPath, "alice", `{"channelType": "EMAIL", "name": "mail", "address": "ann@example.com"}`).wantOK(t, &channel.Added{})
		add("eve", 0).wantOK(t, &channel.Added{})
		// A delete frees a unit.
		e.call(t, http.MethodDelete, fmt.Sprintf("%s/%d", channelPath, first.ID), "alice", "").wantOK(t, new(any))
		add("alice", 6).wantOK(t, &channel.Added{})
		add("alice", 7).wantError(t, 409, httpapi.KeyChannelQuotaExceeded, "")
		if got := len(e.list(t, "alice", "WEBHOOK")); got != 5 {
			t.Errorf("%d webhooks, want 5", got)
		}
	})
}

// With private networks not allowed, literal loopback addresses are
// refused when saved, and names that resolve to private addresses when a
// test message is sent: 400 channel_address_blocked, and nothing is
// connected to.
func TestChannelAddressBlocked(t *testing.T) {
	e := newChannelEnv(t, dbtest.OpenSQLite(t), channel.Config{})
	hook := newReceiver(t, http.StatusNoContent, "") // on 127.0.0.1
	for _, address := range []string{
		"http://127.0.0.1/",
		hook.url + "/hook",
		"http://127.1/",
		"http://2130706433/",
		"http://[::ffff:127.0.0.1]/",
		"http://[::1]:8080/",
		"http://localhost/",
		"http://10.0.0.1/",
		"http://169.254.169.254/latest/meta-data/",
	} {
		body := jsonOf(t, map[string]string{"channelType": "WEBHOOK", "name": "blocked", "address": address})
		for _, r := range []struct{ method, target string }{{http.MethodPost, channelPath}, {http.MethodPost, channelTestPath}} {
			a := e.call(t, r.method, r.target, "alice", body)
			a.wantError(t, 400, httpapi.KeyChannelAddressBlocked, "")
			if a.msg == "" {
				t.Errorf("%s %s: no msg", r.method, address)
			}
		}
	}
	// Names are resolved when a message is sent; every address counts.
	for _, address := range []string{"http://intranet.example.com/hook", "http://rebind.example.com/hook"} {
		body := jsonOf(t, map[string]string{"channelType": "WEBHOOK", "name": "by name", "address": address})
		e.call(t, http.MethodPost, channelTestPath, "alice", body).wantError(t, 400, httpapi.KeyChannelAddressBlocked, "")
	}
	if n := len(hook.requests()); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}
	if got := e.list(t, "alice", "WEBHOOK"); len(got) != 0 {
		t.Errorf("blocked webhooks were stored: %v", got)
	}
}

// A test message goes out through the channel's protocol; what the far end
// answered is in the answer.
func TestChannelTest(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := newChannelEnv(t, db, channel.Config{AllowPrivateNetworks: true, TestsPerMinute: -1})
		hook := newReceiver(t, http.StatusNoContent, "")
		body := jsonOf(t, map[string]string{"channelType": "WEBHOOK", "name": "Ops hook", "address": hook.url + "/hook"})

		// No stored channel: a throwaway secret, in the answer.
		var res channel.TestResult
		e.call(t, http.MethodPost, channelTestPath, "alice", body).wantOK(t, &res)
		webhookSecret(t, res.Secret)
		req := hook.last(t)
		if req.method != http.MethodPost || req.path != "/hook" || !strings.HasPrefix(req.header.Get("Content-Type"), "application/json") {
			t.Errorf("webhook request %s %s, Content-Type %q", req.method, req.path, req.header.Get("Content-Type"))
		}
		verifyWebhook(t, req, res.Secret, res.MessageID)

		// The stored channel, by id (as a string) and by type and name:
		// its own secret, which the answer does not repeat.
		stored := e.host.add(t, alice, channel.Input{Type: "WEBHOOK", Name: "Ops hook", Address: hook.url + "/hook"})
		for _, b := range []string{
			fmt.Sprintf(`{"id": "%d", "channelType": "WEBHOOK", "name": "Ops hook", "address": "%s/hook"}`, stored.ID, hook.url),
			body,
		} {
			a := e.call(t, http.MethodPost, channelTestPath, "alice", b)
			var res channel.TestResult
			a.wantOK(t, &res)
			if res.Secret != "" || strings.Contains(string(a.raw), stored.Secret) {
				t.Errorf("a test of a stored channel shows a secret: %s", a.raw)
			}
			verifyWebhook(t, hook.last(t), stored.Secret, res.MessageID)
		}

		// The far end refuses: 502 with what it answered, no Retry-After.
		for _, tc := range []struct {
			status int
			want   string
		}{
			{http.StatusInternalServerError, "500"},
			{http.StatusGone, "410"},
			{http.StatusFound, "redirect"},
			{http.StatusTooManyRequests, "429"},
		} {
			hook.answer(tc.status, "")
			a := e.call(t, http.MethodPost, channelTestPath, "alice", body)
			a.wantError(t, 502, httpapi.KeyChannelTestFailed, "")
			if !strings.Contains(a.msg, tc.want) {
				t.Errorf("far end %d: msg %q does not say %q", tc.status, a.msg, tc.want)
			}
			if a.header.Get("Retry-After") != "" {
				t.Errorf("far end %d: Retry-After %q", tc.status, a.header.Get("Retry-After"))
			}
		}

		// Nobody listens.
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		a := e.call(t, http.MethodPost, channelTestPath, "alice", jsonOf(t, map[string]string{"channelType": "WEBHOOK", "name": "gone", "address": closed.URL}))
		a.wantError(t, 502, httpapi.KeyChannelTestFailed, "")
		if !strings.Contains(a.msg, "refused") {
			t.Errorf("msg %q does not say the connection was refused", a.msg)
		}
	})
}

// The robots answer HTTP 200 with an errcode: only 0 is success.
func TestChannelTestRobots(t *testing.T) {
	e := newChannelEnv(t, dbtest.OpenSQLite(t), channel.Config{AllowPrivateNetworks: true, TestsPerMinute: -1})
	wecom := newReceiver(t, http.StatusOK, `{"errcode": 0, "errmsg": "ok"}`)
	ding := newReceiver(t, http.StatusOK, `{"errcode": 0, "errmsg": "ok"}`)
	wecomBody := jsonOf(t, map[string]string{"channelType": "WECHAT", "name": "Team room", "address": wecom.url + "/cgi-bin/webhook/send?key=k1"})
	dingBody := jsonOf(t, map[string]string{"channelType": "DINGTALK", "name": "Ding room", "address": ding.url + "/robot/send?access_token=t1", "secret": "SECtest"})

	var res channel.TestResult
	e.call(t, http.MethodPost, channelTestPath, "alice", wecomBody).wantOK(t, &res)
	var msg struct {
		MsgType  string         `json:"msgtype"`
		Markdown map[string]any `json:"markdown"`
	}
	if req := wecom.last(t); req.query != "key=k1" || json.Unmarshal(req.body, &msg) != nil || msg.MsgType != "markdown" || msg.Markdown["content"] == nil {
		t.Errorf("WeCom request ?%s %s", req.query, req.body)
	}
	e.call(t, http.MethodPost, channelTestPath, "alice", dingBody).wantOK(t, &res)
	req := ding.last(t)
	if !strings.HasPrefix(req.query, "access_token=t1&timestamp=") || !strings.Contains(req.query, "&sign=") {
		t.Errorf("DingTalk request is not signed: ?%s", req.query)
	}
	if !strings.Contains(string(req.body), "Ding room") {
		t.Errorf("DingTalk message does not name the channel: %s", req.body)
	}

	for _, tc := range []struct {
		r            *receiver
		body, answer string
		want         []string
	}{
		{wecom, wecomBody, `{"errcode": 93000, "errmsg": "invalid webhook url"}`, []string{"93000", "invalid webhook url"}},
		{ding, dingBody, `{"errcode": 310000, "errmsg": "sign not match"}`, []string{"310000"}},
		{ding, dingBody, `{"errcode": 130101, "errmsg": "send too fast"}`, []string{"130101"}},
		{wecom, wecomBody, `not json`, nil},
	} {
		tc.r.answer(http.StatusOK, tc.answer)
		a := e.call(t, http.MethodPost, channelTestPath, "alice", tc.body)
		a.wantError(t, 502, httpapi.KeyChannelTestFailed, "")
		for _, w := range tc.want {
			if !strings.Contains(a.msg, w) {
				t.Errorf("robot answered %s: msg %q does not say %q", tc.answer, a.msg, w)
			}
		}
	}
}

// E-mail goes through the host's mail server, one message per address.
func TestChannelTestEmail(t *testing.T) {
	e := newChannelEnv(t, dbtest.OpenSQLite(t), channel.Config{TestsPerMinute: -1})
	body := `{"channelType": "EMAIL", "name": "On call", "address": "ann@example.com, Bob@Example.com"}`
	var res channel.TestResult
	e.call(t, http.MethodPost, channelTestPath, "alice", body).wantOK(t, &res)
	if diff := cmp.Diff([]string{"ann@example.com", "Bob@example.com"}, e.host.recipients()); diff != "" {
		t.Errorf("recipients (-want +got):\n%s", diff)
	}
	if res.MessageID == "" || res.Secret != "" {
		t.Errorf("result %+v", res)
	}
	e.host.failMail(errors.New("550 mailbox unavailable"))
	e.call(t, http.MethodPost, channelTestPath, "alice", body).wantError(t, 502, httpapi.KeyChannelTestFailed, "")
}

// Tests are throttled per tenant: 429 with Retry-After, until the window
// ends.
func TestChannelTestThrottle(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		e := newChannelEnv(t, db, channel.Config{AllowPrivateNetworks: true, TestsPerMinute: 2})
		hook := newReceiver(t, http.StatusNoContent, "")
		body := jsonOf(t, map[string]string{"channelType": "WEBHOOK", "name": "Ops hook", "address": hook.url})
		e.call(t, http.MethodPost, channelTestPath, "alice", body).wantOK(t, &channel.TestResult{})
		e.host.clock.Advance(20 * time.Second)
		e.call(t, http.MethodPost, channelTestPath, "bob", body).wantOK(t, &channel.TestResult{})
		a := e.call(t, http.MethodPost, channelTestPath, "alice", body)
		a.wantError(t, 429, httpapi.KeyTooManyRequests, "")
		a.wantRetryAfter(t, 40*time.Second)
		if n := len(hook.requests()); n != 2 {
			t.Errorf("the webhook got %d requests, want 2", n)
		}
		// Another tenant has its own allowance.
		e.call(t, http.MethodPost, channelTestPath, "eve", body).wantOK(t, &channel.TestResult{})
		e.host.clock.Advance(40 * time.Second)
		e.call(t, http.MethodPost, channelTestPath, "alice", body).wantOK(t, &channel.TestResult{})
	})
}

// storedWebhook is a prepare that stores alice's webhook "Ops hook" as
// fx.channel.
func storedWebhook(t *testing.T, e *env) {
	e.fx.channel = e.ch.add(t, alice, channel.Input{Type: "WEBHOOK", Name: "Ops hook", Address: "https://hooks.example.com/ops"})
}

// hookAnswering is a prepare that starts a receiver answering status, as
// fx.hook.
func hookAnswering(status int) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) { e.fx.hook = newReceiver(t, status, "").url }
}

// quotaFull is a prepare that gives alice's tenant its 5 webhooks.
func quotaFull(t *testing.T, e *env) {
	for i := range channel.Webhook.Quota() {
		e.ch.add(t, alice, channel.Input{Type: "WEBHOOK", Name: fmt.Sprintf("hook %d", i), Address: "https://hooks.example.com/ops"})
	}
}

// throttled is a prepare that starts a receiver and uses up the tenant's 2
// tests of the minute on it.
func throttled(t *testing.T, e *env) {
	hookAnswering(http.StatusNoContent)(t, e)
	for range 2 {
		if _, err := e.ch.reg.Test(t.Context(), bob, channel.Input{Type: "WEBHOOK", Name: "x", Address: e.fx.hook}); err != nil {
			t.Fatalf("test: %v", err)
		}
	}
}

// wantAdded checks the data of an add of a webhook: the channel, and its
// secret.
func wantAdded(name, address string) func(t *testing.T, data json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		t.Helper()
		var a channel.Added
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatalf("data %s: %v", data, err)
		}
		if diff := cmp.Diff(channel.Channel{ID: a.ID, Type: channel.Webhook, Name: name, Address: address, Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Signing: channel.SigningHMAC, Headers: []channel.Header{}}, a.Channel); diff != "" || a.ID < 1 {
			t.Errorf("added (-want +got):\n%s", diff)
		}
		webhookSecret(t, a.Secret)
	}
}

// wantTestSent checks the data of a test: a message id, and a secret if
// the channel was no stored one.
func wantTestSent(withSecret bool) func(t *testing.T, data json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		t.Helper()
		var r channel.TestResult
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("data %s: %v", data, err)
		}
		if r.MessageID == "" || (r.Secret != "") != withSecret {
			t.Errorf("test result %s", data)
		}
		if withSecret {
			webhookSecret(t, r.Secret)
		}
	}
}

func channelBody(typ, name, address string) func(fixture) string {
	return fill(fmt.Sprintf(`{"channelType": %q, "name": %q, "address": %q}`, typ, name, address))
}

func replaceBody(typ, name, address string) func(fixture) string {
	return fill(fmt.Sprintf(`{"id": {channelId}, "channelType": %q, "name": %q, "address": %q}`, typ, name, address))
}

// channelResponseCases are the event channels' operations.
var channelResponseCases = []responseCase{
	// POST /event/channel
	{name: "add webhook", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body:  channelBody("WEBHOOK", "Ops hook", "https://hooks.example.com/ops"),
		token: "alice", reqValid: true, wantStatus: 200, checkData: wantAdded("Ops hook", "https://hooks.example.com/ops")},
	{name: "add robot by alias", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body:  fill(`{"channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=t", "secret": "SECx"}`),
		token: "alice", reqValid: true, wantStatus: 200,
		checkData: func(t *testing.T, data json.RawMessage) {
			var a channel.Added
			if err := json.Unmarshal(data, &a); err != nil || a.Type != channel.WorkplaceChat || a.Secret != "" || a.ID < 1 {
				t.Errorf("data %s (%v)", data, err)
			}
		}},
	{name: "add unknown type", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body: channelBody("SMS", "a", "https://hooks.example.com/"), token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "add unknown field", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body:  fill(`{"channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/", "url": "x"}`),
		token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "add bad address", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body: channelBody("EMAIL", "a", "ann"), token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "add metadata address", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body:  channelBody("WEBHOOK", "a", "http://169.254.169.254/latest/meta-data/"),
		token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyChannelAddressBlocked},
	{name: "add not allowed", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body: channelBody("WEBHOOK", "a", "https://hooks.example.com/"), token: "dave", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden},
	{name: "add name taken", op: "addEventChannel", method: http.MethodPost, target: path(channelPath), prepare: storedWebhook,
		body: channelBody("EMAIL", "Ops hook", "ops@example.com"), token: "bob", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyChannelNameTaken},
	{name: "add over quota", op: "addEventChannel", method: http.MethodPost, target: path(channelPath), prepare: quotaFull,
		body: channelBody("WEBHOOK", "one more", "https://hooks.example.com/"), token: "bob", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyChannelQuotaExceeded},
	{name: "add database down", op: "addEventChannel", method: http.MethodPost, target: path(channelPath),
		body: channelBody("WEBHOOK", "a", "https://hooks.example.com/"), token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// PUT /event/channel
	{name: "replace", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath), prepare: storedWebhook,
		body: replaceBody("WEBHOOK", "Ops hook 2", "https://hooks.example.com/v2"), token: "bob", reqValid: true, wantStatus: 200,
		wantData: func(fx fixture) any {
			return channel.Channel{ID: fx.channel.ID, Type: channel.Webhook, Name: "Ops hook 2", Address: "https://hooks.example.com/v2", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Signing: channel.SigningHMAC, Headers: []channel.Header{}}
		}},
	{name: "replace id as a string", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath), prepare: storedWebhook,
		body:  fill(`{"id": "{channelId}", "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/v3"}`),
		token: "alice", reqValid: true, wantStatus: 200,
		wantData: func(fx fixture) any {
			return channel.Channel{ID: fx.channel.ID, Type: channel.Webhook, Name: "Ops hook", Address: "https://hooks.example.com/v3", Enabled: true, Events: []string{}, InFlightLimit: 4, Health: channel.HealthHealthy, Signing: channel.SigningHMAC, Headers: []channel.Header{}}
		}},
	{name: "replace without id", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath),
		body: channelBody("WEBHOOK", "a", "https://hooks.example.com/"), token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "replace type change", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath), prepare: storedWebhook,
		body: replaceBody("EMAIL", "Ops hook", "ops@example.com"), token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "replace with metadata address", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath), prepare: storedWebhook,
		body: replaceBody("WEBHOOK", "Ops hook", "http://169.254.169.254/"), token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyChannelAddressBlocked},
	{name: "replace not allowed", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath), prepare: storedWebhook,
		body: replaceBody("WEBHOOK", "Ops hook", "https://attacker.example.com/"), token: "dave", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden},
	{name: "replace unknown id", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath),
		body: fill(`{"id": 999, "channelType": "WEBHOOK", "name": "a", "address": "https://hooks.example.com/"}`), token: "alice", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "replace name taken", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath),
		prepare: func(t *testing.T, e *env) {
			e.ch.add(t, alice, channel.Input{Type: "EMAIL", Name: "On call", Address: "ann@example.com"})
			storedWebhook(t, e)
		},
		body: replaceBody("WEBHOOK", "On call", "https://hooks.example.com/ops"), token: "alice", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyChannelNameTaken},
	{name: "replace database down", op: "replaceEventChannel", method: http.MethodPut, target: path(channelPath), prepare: storedWebhook,
		body: replaceBody("WEBHOOK", "a", "https://hooks.example.com/"), token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// GET /event/channel/type/{channelType}
	{name: "list", op: "listEventChannels", method: http.MethodGet, target: path(channelTypePath + "WEBHOOK"), prepare: storedWebhook,
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fx fixture) any { return []channel.Channel{fx.channel.Channel} }},
	{name: "list by alias, empty", op: "listEventChannels", method: http.MethodGet, target: path(channelTypePath + "WECHAT"), prepare: storedWebhook,
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return []channel.Channel{} }},
	{name: "list unknown type", op: "listEventChannels", method: http.MethodGet, target: path(channelTypePath + "SMS"),
		token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "list database down", op: "listEventChannels", method: http.MethodGet, target: path(channelTypePath + "EMAIL"),
		token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// GET /event/channel/{id}
	{name: "get channel", op: "getEventChannel", method: http.MethodGet, target: fill(channelPath + "/{channelId}"), prepare: storedWebhook,
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fx fixture) any { return fx.channel.Channel }},
	{name: "get channel id 0", op: "getEventChannel", method: http.MethodGet, target: path(channelPath + "/0"),
		token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "get channel unknown parameter", op: "getEventChannel", method: http.MethodGet, target: fill(channelPath + "/{channelId}?secret=1"), prepare: storedWebhook,
		token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "get channel another tenant's channel", op: "getEventChannel", method: http.MethodGet, target: fill(channelPath + "/{channelId}"),
		prepare: func(t *testing.T, e *env) {
			e.fx.channel = e.ch.add(t, nomad, channel.Input{Type: "EMAIL", Name: "Theirs", Address: "ann@example.com"})
		},
		token: "bob", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "get channel database down", op: "getEventChannel", method: http.MethodGet, target: fill(channelPath + "/{channelId}"), prepare: storedWebhook,
		token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// DELETE /event/channel/{id}
	{name: "delete", op: "deleteEventChannel", method: http.MethodDelete, target: fill(channelPath + "/{channelId}"), prepare: storedWebhook,
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return nil }},
	{name: "delete id 0", op: "deleteEventChannel", method: http.MethodDelete, target: path(channelPath + "/0"),
		token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "delete not allowed", op: "deleteEventChannel", method: http.MethodDelete, target: fill(channelPath + "/{channelId}"), prepare: storedWebhook,
		token: "dave", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden},
	{name: "delete another tenant's channel", op: "deleteEventChannel", method: http.MethodDelete, target: fill(channelPath + "/{channelId}"),
		prepare: func(t *testing.T, e *env) {
			e.fx.channel = e.ch.add(t, nomad, channel.Input{Type: "EMAIL", Name: "Theirs", Address: "ann@example.com"})
		},
		token: "bob", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "delete database down", op: "deleteEventChannel", method: http.MethodDelete, target: fill(channelPath + "/{channelId}"), prepare: storedWebhook,
		token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// POST /event/channel/test
	{name: "test webhook", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath), prepare: hookAnswering(http.StatusNoContent),
		body: channelBody("WEBHOOK", "Ops hook", "{hook}/ops"), token: "alice", reqValid: true, wantStatus: 200, checkData: wantTestSent(true)},
	{name: "test stored webhook", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath),
		prepare: func(t *testing.T, e *env) {
			hookAnswering(http.StatusOK)(t, e)
			e.fx.channel = e.ch.add(t, alice, channel.Input{Type: "WEBHOOK", Name: "Ops hook", Address: e.fx.hook})
		},
		body: fill(`{"id": "{channelId}", "channelType": "WEBHOOK", "name": "Ops hook", "address": "{hook}"}`), token: "alice", reqValid: true, wantStatus: 200, checkData: wantTestSent(false)},
	{name: "test e-mail", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath),
		body: channelBody("EMAIL", "On call", "ann@example.com"), token: "alice", reqValid: true, wantStatus: 200, checkData: wantTestSent(false)},
	{name: "test unknown type", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath),
		body: channelBody("SMS", "a", "ann@example.com"), token: "alice", wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "test metadata address", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath),
		body: channelBody("WEBHOOK", "a", "http://[fd00:ec2::254]/latest/"), token: "alice", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyChannelAddressBlocked},
	{name: "test not allowed", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath), prepare: hookAnswering(http.StatusNoContent),
		body: channelBody("WEBHOOK", "Ops hook", "{hook}/ops"), token: "dave", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden},
	{name: "test unknown id", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath),
		body: fill(`{"id": 999, "channelType": "EMAIL", "name": "a", "address": "ann@example.com"}`), token: "alice", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
	{name: "test throttled", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath), prepare: throttled,
		body: channelBody("WEBHOOK", "Ops hook", "{hook}"), token: "alice", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyTooManyRequests},
	{name: "test refused", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath), prepare: hookAnswering(http.StatusInternalServerError),
		body: channelBody("WEBHOOK", "Ops hook", "{hook}"), token: "alice", reqValid: true, wantStatus: 502, wantKey: httpapi.KeyChannelTestFailed},
	{name: "test database down", op: "testEventChannel", method: http.MethodPost, target: path(channelTestPath), prepare: hookAnswering(http.StatusNoContent),
		body: channelBody("WEBHOOK", "Ops hook", "{hook}"), token: "alice", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
}
