package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// slowGateway is an SMS gateway that holds each message until the test
// tells it how to answer: the test cuts the database while the gateway
// holds a message, as a gateway answering after 2 s meets an outage that
// starts 0.7 s into the send.
type slowGateway struct {
	*httptest.Server
	arrived chan string // the text of each message, as it arrives
	answer  chan int    // the status to answer the message held
}

func startSlowGateway(t *testing.T) *slowGateway {
	t.Helper()
	g := &slowGateway{arrived: make(chan string, 1), answer: make(chan int)}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&m)
		g.arrived <- m.Text
		select {
		case status := <-g.answer:
			w.WriteHeader(status)
		case <-time.After(10 * time.Second):
			w.WriteHeader(http.StatusGatewayTimeout)
		}
	}))
	t.Cleanup(g.Close)
	return g
}

// hold waits for the next message and returns its text.
func (g *slowGateway) hold(t *testing.T) string {
	t.Helper()
	select {
	case text := <-g.arrived:
		return text
	case <-time.After(10 * time.Second):
		t.Fatal("no message reached the gateway")
		return ""
	}
}

// TestVerifySendDuringOutage is fault 1.1 of issue 12, through the
// reference server on PostgreSQL behind a TCP proxy: the gateway took the
// message, the database was cut before the code was marked active, the
// client got 503, the code stayed pending for ever, and the retry the 503
// invited was 429. Now the message that went out is a success whose code
// passes once the database is back, and a send that did not go out gives
// its limits back, so its retry goes through at once.
func TestVerifySendDuringOutage(t *testing.T) {
	rawURL := dbtest.Database(t)
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr()
	ctx := context.Background()
	const requestTimeout = 2 * time.Second
	db, err := openDBWith(ctx, u.String(), database.Options{MaxOpenConns: 4, DialTimeout: requestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	gw := startSlowGateway(t)
	a, err := newApp(db, appConfig{
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:            func() time.Time { return time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC) },
		RequestTimeout: requestTimeout,
		Verify:         verifyConfig{smsProvider: "http", smsHTTPURL: gw.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	// As serve does: the Verifier's Run records the outcome of a send
	// that the database could not take, once it is back.
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- a.verify.Run(runCtx) }()
	defer func() { stopRun(); <-ran }()
	token, err := a.demoToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		key    string
	}
	call := func(method, path, body string) answer {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		a.handler.ServeHTTP(rec, req)
		var env struct {
			Ext struct {
				EKey string `json:"eKey"`
			} `json:"ext"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &env)
		return answer{rec.Code, env.Ext.EKey}
	}
	const mobile = "+8613600136000"
	send := func(bizKey string) answer {
		return call(http.MethodPost, "/api/v1/user/current/sms/send", `{"bizKey":"`+bizKey+`","mobile":"`+mobile+`","country":"CN"}`)
	}
	check := func(bizKey, code string) answer {
		return call(http.MethodGet, "/api/v1/user/current/sms/check?"+url.Values{
			"bizKey": {bizKey}, "mobile": {mobile}, "country": {"CN"}, "verificationCode": {code},
		}.Encode(), "")
	}
	// until calls fn until it answers 200, for at most 15 s: the
	// database comes back, and the retry of Run's after it.
	until := func(what string, fn func() answer) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			got := fn()
			if got.status == http.StatusOK {
				return
			}
			select {
			case <-deadline:
				t.Fatalf("%s: still %d %s", what, got.status, got.key)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}

	// The gateway takes the message; the database is cut meanwhile.
	done := make(chan answer, 1)
	go func() { done <- send("SIGNIN") }()
	text := gw.hold(t)
	proxy.cut(false)
	gw.answer <- http.StatusOK
	if got := <-done; got.status != http.StatusOK {
		t.Errorf("send whose message went out during the outage: %d %s, want 200", got.status, got.key)
	}
	code := sixDigits.FindString(text)
	if got := check("SIGNIN", code); got.status != http.StatusServiceUnavailable {
		t.Errorf("check during the outage: %d %s, want 503", got.status, got.key)
	}
	proxy.restore()
	until("the delivered code once the database is back", func() answer { return check("SIGNIN", code) })

	// The gateway refuses the message; the database is cut meanwhile.
	go func() { done <- send("SIGNUP") }()
	gw.hold(t)
	proxy.cut(false)
	gw.answer <- http.StatusInternalServerError
	if got := <-done; got.status != http.StatusBadGateway || got.key != httpapi.KeySendFailed {
		t.Errorf("send refused by the gateway during the outage: %d %s, want 502 %s", got.status, got.key, httpapi.KeySendFailed)
	}
	proxy.restore()
	// The retry, on the same clock (no minute has passed): the failed
	// send's interval went back with the database.
	go func() {
		for range 100 {
			select {
			case <-gw.arrived:
				gw.answer <- http.StatusOK
			case <-time.After(15 * time.Second):
				return
			}
		}
	}()
	until("the retry of a send that did not go out", func() answer { return send("SIGNUP") })
}
