package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/smtptest"
)

// gateway is a real HTTP SMS gateway on loopback that records messages.
type gateway struct {
	mu      sync.Mutex
	msgs    []struct{ To, Text, BizKey string }
	arrived chan struct{} // closed at the next message; see await
	*httptest.Server
}

func startGateway(t *testing.T) *gateway {
	g := &gateway{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ To, Text, BizKey string }
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		g.mu.Lock()
		g.msgs = append(g.msgs, m)
		if g.arrived != nil {
			close(g.arrived)
			g.arrived = nil
		}
		g.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(g.Close)
	return g
}

// last is the last text message to the number.
func (g *gateway) last(t *testing.T, to string) string {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(g.msgs) - 1; i >= 0; i-- {
		if g.msgs[i].To == to {
			return g.msgs[i].Text
		}
	}
	t.Fatalf("no text message to %s", to)
	return ""
}

// await waits (at most 10 s) for a text message to the number that
// contains want, sent in the background (a notice, from the outbox), and
// returns it.
func (g *gateway) await(t *testing.T, to, want string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		g.mu.Lock()
		if g.arrived == nil {
			g.arrived = make(chan struct{})
		}
		next := g.arrived
		for _, m := range g.msgs {
			if m.To == to && strings.Contains(m.Text, want) {
				g.mu.Unlock()
				return m.Text
			}
		}
		g.mu.Unlock()
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("no text message to %s containing %q", to, want)
			return ""
		}
	}
}

var sixDigits = regexp.MustCompile(`\b\d{6}\b`)

// codeIn finds the code in a message.
func codeIn(t *testing.T, text string) string {
	t.Helper()
	c := sixDigits.FindString(text)
	if c == "" {
		t.Fatalf("no code in %q", text)
	}
	return c
}

// lastMail is the code in the last mail to address, from its plain part.
func lastMail(t *testing.T, mail *smtptest.Server, to string) (subject, text string) {
	t.Helper()
	ms := mail.To(to)
	if len(ms) == 0 {
		t.Fatalf("no mail to %s", to)
	}
	m := ms[len(ms)-1]
	parts, err := m.Parts()
	if err != nil {
		t.Fatal(err)
	}
	return m.Subject(), parts["text/plain"]
}

// startServer runs the reference server as a user would, with env, and
// returns its base URL and its log.
func startServer(t *testing.T, vars map[string]string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-demo=false"}, outW, stderr, env(vars))
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, stderr.String())
		}
	})
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		if base, ok := strings.CutPrefix(sc.Text(), "deskkit is listening on "); ok {
			go io.Copy(io.Discard, outR) //nolint:errcheck // drain
			return base, stderr
		}
	}
	err := <-done
	done <- err // for the cleanup, which waits for run too
	t.Fatalf("the server did not start: %v\n%s", err, stderr.String())
	return "", nil
}

// call sends a request with a JSON body (nil: none) and returns the status
// and the envelope.
func call(t *testing.T, base, token, method, path string, body any) (int, struct {
	Code string          `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
	Ext  map[string]any  `json:"ext"`
}) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, base+path, r)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct {
		Code string          `json:"code"`
		Msg  string          `json:"msg"`
		Data json.RawMessage `json:"data"`
		Ext  map[string]any  `json:"ext"`
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res.StatusCode, env
}

// ok is call that must succeed; it decodes data into out.
func ok(t *testing.T, base, token, method, path string, body, out any) {
	t.Helper()
	status, env := call(t, base, token, method, path, body)
	if status != http.StatusOK || env.Code != "S" {
		t.Fatalf("%s %s: %d %s %s %v", method, path, status, env.Code, env.Msg, env.Ext)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVerifyEndToEnd runs the modify and bind flows through the reference
// server as a user runs it, with a real SMTP server and a real HTTP SMS
// gateway, on both databases.
func TestVerifyEndToEnd(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		mail := smtptest.Start(t)
		sms := startGateway(t)
		base, logs := startServer(t, map[string]string{
			envDatabaseURL: rawURL, envSMTPAddr: mail.Addr, envSMTPFrom: "Deskkit <noreply@example.com>",
			envSMSProvider: "http", envSMSHTTPURL: sms.URL + "/send",
		})
		ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-email", "Ann@Example.COM", "-mobile", "138 0013 8000", "-country", "cn")
		carl, _ := issue(t, rawURL, "-tenant", "acme", "-username", "carl")

		var d struct {
			Mobile, Country, Email, TenantName string
			ITC                                int
		}
		ok(t, base, ann, http.MethodGet, "/api/v1/user/current", nil, &d)
		if d.Mobile != "+8613800138000" || d.Country != "CN" || d.ITC != 86 || d.Email != "Ann@example.com" || d.TenantName != "acme" {
			t.Fatalf("detail after token: %+v", d)
		}

		// MODIFY_MOBILE: prove the current number, then the new one.
		ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "MODIFY_MOBILE", "mobile": 13800138000, "country": "CN"}, nil)
		var secrets []string // every code and link secret, none of which may be logged
		code := codeIn(t, sms.last(t, "+8613800138000"))
		secrets = append(secrets, code)
		var link struct{ LinkSecret string }
		ok(t, base, ann, http.MethodGet, "/api/v1/user/current/sms/check?"+url.Values{
			"bizKey": {"MODIFY_MOBILE"}, "mobile": {"+8613800138000"}, "country": {"CN"}, "verificationCode": {code},
		}.Encode(), nil, &link)
		ok(t, base, ann, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "MODIFY_MOBILE", "mobile": "13700137000", "country": "CN"}, nil)
		code = codeIn(t, sms.last(t, "+8613700137000"))
		secrets = append(secrets, code, link.LinkSecret)
		ok(t, base, ann, http.MethodPatch, "/api/v1/user/current/mobile", map[string]any{
			"bizKey": "MODIFY_MOBILE", "mobile": 13700137000, "country": "CN", "itc": 86, "verificationCode": code, "linkSecret": link.LinkSecret,
		}, &d)
		if d.Mobile != "+8613700137000" {
			t.Fatalf("mobile after MODIFY_MOBILE: %+v", d)
		}
		// The notice goes out from the outbox, after the answer.
		sms.await(t, "+8613800138000", "changed")

		// MODIFY_EMAIL, the same way over SMTP.
		ok(t, base, ann, http.MethodPost, "/api/v1/user/current/email/send", map[string]any{"bizKey": "MODIFY_EMAIL", "toAddress": [][]string{{"Ann@example.com"}}}, nil)
		subject, text := lastMail(t, mail, "Ann@example.com")
		code = codeIn(t, subject)
		if !strings.Contains(text, code) {
			t.Errorf("the plain body lacks the code %s: %q", code, text)
		}
		ok(t, base, ann, http.MethodGet, "/api/v1/user/current/email/check?"+url.Values{
			"bizKey": {"MODIFY_EMAIL"}, "email": {"Ann@EXAMPLE.com"}, "verificationCode": {code},
		}.Encode(), nil, &link)
		ok(t, base, ann, http.MethodPost, "/api/v1/user/current/email/send", map[string]any{"bizKey": "MODIFY_EMAIL", "toAddress": [][]string{{"ann@new.example"}}}, nil)
		subject, _ = lastMail(t, mail, "ann@new.example")
		ok(t, base, ann, http.MethodPatch, "/api/v1/user/current/email", map[string]any{
			"bizKey": "MODIFY_EMAIL", "email": "ann@new.example", "verificationCode": codeIn(t, subject), "linkSecret": link.LinkSecret,
		}, &d)
		if d.Email != "ann@new.example" {
			t.Fatalf("email after MODIFY_EMAIL: %+v", d)
		}
		noticed := mail.Await(10*time.Second, func(ms []smtptest.Message) bool {
			for _, m := range ms {
				if slices.Contains(m.To, "Ann@example.com") && strings.Contains(m.Subject(), "changed") {
					return true
				}
			}
			return false
		})
		if !noticed {
			t.Errorf("no notice to the old address")
		}

		// Any other bizKey's link secret is the host's to redeem: the demo
		// host's route answers what it proved, once.
		ok(t, base, ann, http.MethodPost, "/api/v1/user/current/email/send", map[string]any{"bizKey": "PASSWORD_UPDATE", "toAddress": [][]string{{"ann@new.example"}}}, nil)
		subject, _ = lastMail(t, mail, "ann@new.example")
		ok(t, base, ann, http.MethodGet, "/api/v1/user/current/email/check?"+url.Values{
			"bizKey": {"PASSWORD_UPDATE"}, "email": {"ann@new.example"}, "verificationCode": {codeIn(t, subject)},
		}.Encode(), nil, &link)
		var proof struct{ Kind, BizKey, Address string }
		ok(t, base, ann, http.MethodPost, "/api/v1/demo/link/redeem", map[string]any{"bizKey": "PASSWORD_UPDATE", "linkSecret": link.LinkSecret}, &proof)
		if proof.Kind != "EMAIL" || proof.BizKey != "PASSWORD_UPDATE" || proof.Address != "ann@new.example" {
			t.Errorf("redeemed: %+v", proof)
		}
		if status, env := call(t, base, ann, http.MethodPost, "/api/v1/demo/link/redeem", map[string]any{"bizKey": "PASSWORD_UPDATE", "linkSecret": link.LinkSecret}); status != http.StatusForbidden || env.Ext["eKey"] != "link_secret_invalid" {
			t.Errorf("a second redemption: %d %v", status, env)
		}

		// BIND_MOBILE and BIND_EMAIL for a user without addresses; the
		// code is the proof. Ann's old number is free again.
		ok(t, base, carl, http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": "BIND_MOBILE", "mobile": "+8613800138000", "country": "CN"}, nil)
		ok(t, base, carl, http.MethodPatch, "/api/v1/user/current/mobile", map[string]any{
			"bizKey": "BIND_MOBILE", "mobile": "13800138000", "country": "CN", "verificationCode": codeIn(t, sms.last(t, "+8613800138000")),
		}, &d)
		// Send, then check, as the docs say: the check uses the code up,
		// and the link secret it answers is the proof of the bind.
		ok(t, base, carl, http.MethodPost, "/api/v1/user/current/email/send", map[string]any{"bizKey": "BIND_EMAIL", "toAddress": [][]string{{"carl@example.com"}}}, nil)
		subject, _ = lastMail(t, mail, "carl@example.com")
		ok(t, base, carl, http.MethodGet, "/api/v1/user/current/email/check?"+url.Values{
			"bizKey": {"BIND_EMAIL"}, "email": {"carl@example.com"}, "verificationCode": {codeIn(t, subject)},
		}.Encode(), nil, &link)
		secrets = append(secrets, link.LinkSecret)
		status, env := call(t, base, carl, http.MethodPatch, "/api/v1/user/current/email", map[string]any{
			"bizKey": "BIND_EMAIL", "email": "carl@example.com", "verificationCode": codeIn(t, subject),
		})
		if status != http.StatusBadRequest || env.Ext["eKey"] != "verification_code_missing" || !strings.Contains(env.Msg, "already used by a check") {
			t.Errorf("bind with the code its check used: %d %q %v", status, env.Msg, env.Ext)
		}
		ok(t, base, carl, http.MethodPatch, "/api/v1/user/current/email", map[string]any{
			"bizKey": "BIND_EMAIL", "email": "carl@example.com", "linkSecret": link.LinkSecret,
		}, &d)
		if d.Mobile != "+8613800138000" || d.Email != "carl@example.com" {
			t.Fatalf("Carl after binding: %+v", d)
		}

		// Issue 19, fault 8: the natural request after a check carries the
		// code and the link secret the check answered (the seed's body has
		// both fields). It binds, with the real directory, for a number and
		// an address; a pair not of one check is 400 naming linkSecret and
		// binds nothing; a replay is refused.
		dora, _ := issue(t, rawURL, "-tenant", "acme", "-username", "dora")
		for _, b := range []struct {
			path, check string
			send        map[string]any
			code        func() string
			query       func(code string) url.Values
			body        func(code, secret string) map[string]any
			bound       func() string
		}{
			{
				path: "/api/v1/user/current/mobile", check: "/api/v1/user/current/sms/check",
				send: map[string]any{"bizKey": "BIND_MOBILE", "mobile": "13600136000", "country": "CN"},
				code: func() string { return codeIn(t, sms.last(t, "+8613600136000")) },
				query: func(code string) url.Values {
					return url.Values{"bizKey": {"BIND_MOBILE"}, "mobile": {"+8613600136000"}, "country": {"CN"}, "verificationCode": {code}}
				},
				body: func(code, secret string) map[string]any {
					return map[string]any{"bizKey": "BIND_MOBILE", "mobile": 13600136000, "country": "CN", "itc": 86, "verificationCode": code, "linkSecret": secret}
				},
				bound: func() string { return d.Mobile },
			},
			{
				path: "/api/v1/user/current/email", check: "/api/v1/user/current/email/check",
				send: map[string]any{"bizKey": "BIND_EMAIL", "toAddress": [][]string{{"dora@example.com"}}},
				code: func() string { subject, _ := lastMail(t, mail, "dora@example.com"); return codeIn(t, subject) },
				query: func(code string) url.Values {
					return url.Values{"bizKey": {"BIND_EMAIL"}, "email": {"dora@EXAMPLE.com"}, "verificationCode": {code}}
				},
				body: func(code, secret string) map[string]any {
					return map[string]any{"bizKey": "BIND_EMAIL", "email": "dora@example.com", "verificationCode": code, "linkSecret": secret}
				},
				bound: func() string { return d.Email },
			},
		} {
			ok(t, base, dora, http.MethodPost, strings.Replace(b.check, "/check", "/send", 1), b.send, nil)
			code := b.code()
			ok(t, base, dora, http.MethodGet, b.check+"?"+b.query(code).Encode(), nil, &link)
			secrets = append(secrets, code, link.LinkSecret)
			wrong := "000000"
			if code == wrong {
				wrong = "111111"
			}
			status, env := call(t, base, dora, http.MethodPatch, b.path, b.body(wrong, link.LinkSecret))
			if status != http.StatusBadRequest || env.Ext["eKey"] != "param_validation_error" || !strings.HasPrefix(env.Msg, "linkSecret ") {
				t.Errorf("%s with a code not of the check: %d %q %v", b.path, status, env.Msg, env.Ext)
			}
			ok(t, base, dora, http.MethodGet, "/api/v1/user/current", nil, &d)
			if b.bound() != "" {
				t.Fatalf("%s: dora bound by a refused pair: %+v", b.path, d)
			}
			ok(t, base, dora, http.MethodPatch, b.path, b.body(code, link.LinkSecret), &d)
			if want := map[bool]string{true: "+8613600136000", false: "dora@example.com"}[strings.HasSuffix(b.path, "mobile")]; b.bound() != want {
				t.Errorf("%s: dora after the pair: %+v, want %s", b.path, d, want)
			}
			status, env = call(t, base, dora, http.MethodPatch, b.path, b.body(code, link.LinkSecret))
			if status != http.StatusConflict || env.Ext["eKey"] != "verification_already_bound" {
				t.Errorf("%s: the pair replayed: %d %q %v", b.path, status, env.Msg, env.Ext)
			}
		}

		// Ann's new address is hers: Carl cannot get a code sent there.
		status, env = call(t, base, carl, http.MethodPost, "/api/v1/user/current/email/send", map[string]any{"bizKey": "SIGNIN", "toAddress": [][]string{{"ann@new.example"}}})
		if status != http.StatusConflict || env.Ext["eKey"] != "verification_address_taken" {
			t.Errorf("code to Ann's address for Carl: %d %v", status, env)
		}
		// The SMTP server refusing: 502 with its own key.
		mail.Reject(550, "mailbox unavailable")
		status, env = call(t, base, carl, http.MethodPost, "/api/v1/user/current/email/send", map[string]any{"bizKey": "SIGNIN", "toAddress": [][]string{{"carl@example.com"}}})
		if status != http.StatusBadGateway || env.Ext["eKey"] != "verification_send_failed" {
			t.Errorf("send with the SMTP server refusing: %d %v", status, env)
		}
		var tn struct {
			ID   int64
			Name string
		}
		ok(t, base, carl, http.MethodGet, "/api/v1/user/current/tenant", nil, &tn)
		if tn.Name != "acme" || tn.ID == 0 {
			t.Errorf("tenant: %+v", tn)
		}
		// The log has every request (the checks' query strings are left
		// out), and no code or link secret.
		if !strings.Contains(logs.String(), `"path":"/api/v1/user/current/sms/check"`) {
			t.Errorf("the log lacks the check requests:\n%s", logs.String())
		}
		for _, s := range secrets {
			// Whole words only: a duration such as 1.523456ms is no code.
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(s) + `\b`).MatchString(logs.String()) {
				t.Errorf("%q is in the server's log", s)
			}
		}
	})
}

// TestHTTPGatewayThrottled drives the server's http SMS provider against a
// gateway that throttles: a 429 is 503 verification_send_throttled with
// the gateway's Retry-After, as the template providers' throttles are; a
// 400 stays 502 verification_send_failed without one.
func TestHTTPGatewayThrottled(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		var status atomic.Int32
		status.Store(http.StatusTooManyRequests)
		g := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(int(status.Load()))
		}))
		t.Cleanup(g.Close)
		base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL, envSMSProvider: "http", envSMSHTTPURL: g.URL + "/send"})
		ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann")
		body := map[string]any{"bizKey": "BIND_MOBILE", "mobile": "+8613800138000", "country": "CN"}
		if got := sendForAnswer(t, base, ann, body); got != (sendAnswer{status: http.StatusServiceUnavailable, key: "verification_send_throttled", retryAfter: "30"}) {
			t.Errorf("a 429 from the gateway answered %+v, want 503 verification_send_throttled, Retry-After 30", got)
		}
		status.Store(http.StatusBadRequest)
		body["mobile"] = "+8613700137000"
		if got := sendForAnswer(t, base, ann, body); got != (sendAnswer{status: http.StatusBadGateway, key: "verification_send_failed"}) {
			t.Errorf("a 400 from the gateway answered %+v, want 502 verification_send_failed without Retry-After", got)
		}
	})
}
