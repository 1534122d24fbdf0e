package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// storedMail is a prepare that stores alice's e-mail channel as
// fx.channel: a channel without a secret of deskkit's.
func storedMail(t *testing.T, e *env) {
	e.fx.channel = e.ch.add(t, alice, channel.Input{Type: "EMAIL", Name: "On call", Address: "ann@example.com"})
}

func init() {
	rotate := func(body string) func(fixture) string { return path("%s", body) }
	eventResponseCases = slices.Concat(eventResponseCases,
		// POST /event/channel/{id}/secret/reveal
		[]responseCase{
			{name: "reveal", op: "revealEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/reveal"), prepare: storedWebhook,
				token: "bob", reqValid: true, wantStatus: 200,
				wantData: func(fx fixture) any {
					return channel.SigningSecret{ChannelID: fx.channel.ID, Signing: channel.SigningHMAC, Secret: fx.channel.Secret}
				}},
			{name: "reveal of an e-mail channel", op: "revealEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/reveal"), prepare: storedMail,
				token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
		},
		eventIDCases("revealEventChannelSecret", http.MethodPost, onChannel("/secret/reveal"), storedWebhook),

		// POST /event/channel/{id}/secret/rotate
		[]responseCase{
			{name: "rotate", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{"overlapSeconds": 3600}`), token: "bob", reqValid: true, wantStatus: 200,
				checkData: func(t *testing.T, data json.RawMessage) {
					var s channel.SigningSecret
					if err := json.Unmarshal(data, &s); err != nil {
						t.Fatalf("data %s: %v", data, err)
					}
					if want := now.Add(time.Hour); !strings.HasPrefix(s.Secret, "whsec_") || s.PreviousSecretUntil == nil || !s.PreviousSecretUntil.Equal(want) {
						t.Errorf("rotated %s, want a new secret, the old one until %v", data, want)
					}
				}},
			{name: "rotate to a given secret at once", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q=", "overlapSeconds": 0}`), token: "bob", reqValid: true, wantStatus: 200,
				wantData: func(fx fixture) any {
					return channel.SigningSecret{ChannelID: fx.channel.ID, Signing: channel.SigningHMAC, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q="}
				}},
			{name: "rotate to ed25519", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{"signing": "ed25519", "overlapSeconds": 604800}`), token: "bob", reqValid: true, wantStatus: 200,
				checkData: func(t *testing.T, data json.RawMessage) {
					var s channel.SigningSecret
					if err := json.Unmarshal(data, &s); err != nil {
						t.Fatalf("data %s: %v", data, err)
					}
					if s.Signing != channel.SigningEd25519 || s.Secret != "" || !strings.HasPrefix(s.PublicKey, "whpk_") || s.PreviousSecretUntil == nil {
						t.Errorf("rotated to ed25519: %s", data)
					}
				}},
			{name: "rotate to an unknown signing", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{"signing": "rsa"}`), token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "rotate with a bad secret", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{"secret": "SECnot"}`), token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "rotate with an overlap over 7 days", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{"overlapSeconds": 604801}`), token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "rotate an e-mail channel", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedMail,
				body: rotate(`{}`), token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "rotate id 0", op: "rotateEventChannelSecret", method: http.MethodPost, target: onChannel("/secret/rotate")("0"),
				body: rotate(`{}`), token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "rotate not allowed", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{}`), token: "dave", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden},
			{name: "rotate unknown id", op: "rotateEventChannelSecret", method: http.MethodPost, target: onChannel("/secret/rotate")("999"),
				body: rotate(`{}`), token: "bob", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
			{name: "rotate database down", op: "rotateEventChannelSecret", method: http.MethodPost, target: channelOp("/secret/rotate"), prepare: storedWebhook,
				body: rotate(`{}`), token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
		},
	)
}

// logBuffer is a log's output, written by several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSecretsShownOnlyWhereMeant drives a webhook's life through the API,
// with the worker running, on both databases: add, list, get, tests,
// rotations (with and without overlap, a secret given and made), reveals,
// refused rotations, deliveries, their attempts and hourly counts. A
// receiver echoes the channel's secrets in its answers, as a careless one
// might. No answer shows a secret or a signature (v1,) but the add's, the
// reveals' and the rotations' own, and no log line of the server or the
// registry shows either.
func TestSecretsShownOnlyWhereMeant(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := t.Context()
		if err := channel.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		var logs logBuffer
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		reg, err := channel.New(db, []byte("0123456789abcdef0123456789abcdef-secret-test"), nil, &channel.Config{
			AllowPrivateNetworks: true, Logger: log, RetrySchedule: []time.Duration{0, time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		admin := deskkit.Principal{UserID: 7, TenantID: 1, Admin: true}
		srv, err := httpapi.New(&httpapi.Config{
			Authenticator: &fakeAuthenticator{AuthenticateFn: func(context.Context, string) (deskkit.Principal, error) { return admin, nil }},
			Channels:      reg,
			Logger:        log,
		})
		if err != nil {
			t.Fatal(err)
		}
		api := httptest.NewServer(srv)
		t.Cleanup(api.Close)

		// The receiver echoes what it is told to: the secrets it holds.
		var mu sync.Mutex
		var echo []string
		var signatures []string
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			signatures = append(signatures, r.Header.Get("webhook-signature"))
			body := strings.Join(echo, " and ")
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "ok, I hold "+body)
		}))
		t.Cleanup(hook.Close)
		setEcho := func(s ...string) { mu.Lock(); echo = s; mu.Unlock() }

		runCtx, stop := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); _ = reg.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-ran })

		var secrets []string // every secret the channel had
		var answers []string // every answer that must show none
		call := func(method, target, body string, meant bool) map[string]any {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, method, api.URL+httpapi.Prefix+target, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer admin")
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if !meant {
				answers = append(answers, method+" "+target+": "+string(raw))
			}
			var env struct {
				Data any `json:"data"`
			}
			_ = json.Unmarshal(raw, &env)
			m, _ := env.Data.(map[string]any)
			return m
		}
		secretOf := func(m map[string]any) string {
			s, _ := m["secret"].(string)
			if !strings.HasPrefix(s, "whsec_") {
				t.Fatalf("no secret in %v", m)
			}
			secrets = append(secrets, s)
			return s
		}

		addr := hook.URL + "/hook"
		added := call("POST", "/event/channel", `{"channelType": "WEBHOOK", "name": "ops", "address": "`+addr+`"}`, true)
		first := secretOf(added)
		setEcho(first)
		id := int64(added["id"].(float64))
		ch := fmt.Sprintf("/event/channel/%d", id)
		testBody := fmt.Sprintf(`{"id": %d, "channelType": "WEBHOOK", "name": "ops", "address": %q}`, id, addr)
		call("POST", "/event/channel/test", testBody, false)

		second := secretOf(call("POST", ch+"/secret/rotate", `{"overlapSeconds": 3600}`, true))
		setEcho(second, first) // the old one signs beside the new one
		call("POST", "/event/channel/test", testBody, false)
		if got := secretOf(call("POST", ch+"/secret/reveal", "", true)); got != second {
			t.Errorf("revealed %.12s..., want the rotated secret", got)
		}
		// Refused rotations do not echo the secret sent.
		call("POST", ch+"/secret/rotate", `{"secret": "`+second+`"}`, false)
		call("POST", ch+"/secret/rotate", `{"secret": "`+second+`x"}`, false)
		third := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q="
		if got := secretOf(call("POST", ch+"/secret/rotate", `{"secret": "`+third+`", "overlapSeconds": 0}`, true)); got != third {
			t.Errorf("rotated to %.12s..., want the secret given", got)
		}
		setEcho(third)
		call("POST", "/event/channel/test", testBody, false)
		// ed25519 beside HMAC: the public key is shown, the signing key
		// never.
		ed := call("POST", ch+"/secret/rotate", `{"signing": "hmac+ed25519", "overlapSeconds": 60}`, true)
		fourth := secretOf(ed)
		if pk, _ := ed["publicKey"].(string); !strings.HasPrefix(pk, "whpk_") {
			t.Errorf("rotation to ed25519 answered no public key: %v", ed)
		}
		setEcho(fourth, third)
		call("POST", "/event/channel/test", testBody, false)

		// The worker delivers the rotations' and the reveal's events.
		deadline := time.Now().Add(20 * time.Second)
		for {
			page := call("GET", ch+"/deliveries?pageSize=100", "", false)
			list, _ := page["list"].([]any)
			done := len(list) == 4
			for _, d := range list {
				if d.(map[string]any)["status"] != channel.DeliverySucceeded {
					done = false
				}
			}
			if done {
				for _, d := range list {
					call("GET", fmt.Sprintf("/event/delivery/%d/attempts", int64(d.(map[string]any)["id"].(float64))), "", false)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the deliveries did not all succeed: %v", page)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, target := range []string{"/event/channel", "/event/channel/type/WEBHOOK", ch, ch + "/deliveries/hourly", "/event/types"} {
			call("GET", target, "", false)
		}

		mu.Lock()
		sent := slices.Clone(signatures)
		mu.Unlock()
		if len(sent) < 8 {
			t.Fatalf("the receiver got %d requests, want 4 tests and 4 events", len(sent))
		}
		leaks := func(where, text string) {
			t.Helper()
			for _, s := range secrets {
				if key := strings.TrimPrefix(s, "whsec_"); strings.Contains(text, key) {
					t.Errorf("%s shows the secret %.12s...:\n%s", where, s, text)
				}
			}
			if strings.Contains(text, "v1,") || strings.Contains(text, "v1a,") {
				t.Errorf("%s shows a signature:\n%s", where, text)
			}
			if strings.Contains(text, "whsk_") {
				t.Errorf("%s shows a signing key:\n%s", where, text)
			}
			for _, sig := range sent {
				for _, part := range strings.Fields(sig) {
					if _, mac, _ := strings.Cut(part, ","); mac != "" && strings.Contains(text, mac) {
						t.Errorf("%s shows a signature sent:\n%s", where, text)
					}
				}
			}
		}
		for _, a := range answers {
			leaks("an answer", a)
		}
		if !strings.Contains(strings.Join(answers, "\n"), "ok, I hold ***") {
			t.Errorf("no attempt shows the receiver's answer with the secrets masked:\n%s", strings.Join(answers, "\n"))
		}
		out := logs.String()
		leaks("the log", out)
		for _, line := range []string{"channel: signing secret revealed", "channel: signing secret rotated"} {
			if !strings.Contains(out, line) {
				t.Errorf("no log line %q", line)
			}
		}
	})
}
