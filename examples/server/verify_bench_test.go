package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
)

// codeLog is a slog.Handler that keeps, from the log senders' lines (with
// -dev-log-codes), the code of the last message to each address: how the
// benchmark reads codes without a gateway.
type codeLog struct{ codes sync.Map } // address -> code

var codeInText = regexp.MustCompile(`\b\d{6}\b`)

func (h *codeLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *codeLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *codeLog) WithGroup(string) slog.Handler            { return h }

func (h *codeLog) Handle(_ context.Context, r slog.Record) error {
	var to, text string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "to":
			to = a.Value.String()
		case "text":
			text = a.Value.String()
		}
		return true
	})
	if c := codeInText.FindString(text); to != "" && c != "" {
		h.codes.Store(to, c)
	}
	return nil
}

// benchSendCheck measures send + check round trips through the reference
// server's handler on PostgreSQL, by users concurrent users, each sending
// to numbers of its own. The codes go to the log senders, or with
// gateway, to an HTTP SMS gateway on loopback through the http provider,
// whose connections then count.
func benchSendCheck(b *testing.B, users int, gateway bool) {
	_, roundTrip := setupSendCheck(b, users, gateway, nil)
	done, elapsed := runConcurrently(b, users, roundTrip)
	b.ReportMetric(float64(done)/elapsed.Seconds(), "roundtrips/s")
}

// setupSendCheck opens the server of benchSendCheck and returns its
// database and a round trip of a user (0 to users-1). With log, the
// statements each user's requests run are recorded there.
func setupSendCheck(b *testing.B, users int, gateway bool, log *stmtLog) (*bun.DB, func(user int) error) {
	db := dbtest.OpenPostgres(b)
	if log != nil {
		db = db.WithQueryHook(log)
	}
	ctx := context.Background()
	if err := migrateAll(ctx, db); err != nil {
		b.Fatal(err)
	}
	logs := &codeLog{}
	// Limits out of the way: each round trip goes to a new number, so the
	// limit rows are still written, but none refuses.
	vc := verifyConfig{
		smsProvider: "log", devLogCodes: true,
		limits: verify.Config{SendsPerHour: 1 << 30, SendsPerDay: 1 << 30, SendsPerAddressPerDay: 1 << 30, FailuresPerDay: 1 << 30},
	}
	if gateway {
		var conns atomic.Int64
		gw := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var m struct{ To, Text string }
			if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			logs.codes.Store(m.To, codeInText.FindString(m.Text))
			w.WriteHeader(http.StatusAccepted)
		}))
		gw.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		gw.Start()
		b.Cleanup(gw.Close)
		b.Cleanup(func() { b.ReportMetric(float64(conns.Load()), "gateway-conns") })
		vc.smsProvider, vc.smsHTTPURL = "http", gw.URL
	}
	a, err := newApp(db, appConfig{Logger: slog.New(logs), Verify: vc})
	if err != nil {
		b.Fatal(err)
	}
	tn, err := a.dir.EnsureTenant(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	tokens := make([]string, users)
	for i := range tokens {
		u, err := a.dir.EnsureUser(ctx, tn.ID, fmt.Sprintf("user%d", i), false)
		if err != nil {
			b.Fatal(err)
		}
		if tokens[i], err = a.dir.IssueToken(ctx, u); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	roundTrip := func(user int) error {
		token := tokens[user]
		mobile := fmt.Sprintf("+86138%08d", next.Add(1))
		if err := benchCall(a, user, token, http.MethodPost, "/api/v1/user/current/sms/send",
			fmt.Sprintf(`{"bizKey":"SIGNIN","mobile":%q,"country":"CN"}`, mobile)); err != nil {
			return err
		}
		code, ok := logs.codes.Load(mobile)
		if !ok {
			return fmt.Errorf("no code logged for %s", mobile)
		}
		return benchCall(a, user, token, http.MethodGet, "/api/v1/user/current/sms/check?"+url.Values{
			"bizKey": {"SIGNIN"}, "mobile": {mobile}, "country": {"CN"}, "verificationCode": {code.(string)},
		}.Encode(), "")
	}

	return db, roundTrip
}

// runConcurrently makes about b.N calls of call, split over n goroutines
// (the i-th passes i), and returns how many it made and how long they
// took; the first error fails the benchmark.
func runConcurrently(b *testing.B, n int, call func(i int) error) (int, time.Duration) {
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Value
	per := (b.N + n - 1) / n
	for i := range n {
		wg.Go(func() {
			for range per {
				if err := call(i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return per * n, elapsed
}

// benchUser is the context key of the benchmark user a request is for,
// which stmtLog reads.
type benchUser struct{}

// benchCall makes one request of user through a's handler, as the
// server's connection would hand it over. It builds the request with
// http.NewRequestWithContext rather than httptest.NewRequest, which
// parses each through a 4 KiB reader of its own: a fifth of the bytes a
// round trip allocated, and the client's cost, not the server's (a
// server's connections reuse their readers).
func benchCall(a *app, user int, token, method, target, body string) error {
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), benchUser{}, user),
		method, "http://example.com"+target, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.RequestURI, req.RemoteAddr = target, "192.0.2.1:1234"
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, target, rec.Code, rec.Body.String())
	}
	var env struct{ Code string }
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Code != "S" {
		return fmt.Errorf("%s %s: %s", method, target, rec.Body.String())
	}
	return nil
}

// BenchmarkSendCheck is one user's send + check round trips, one after the
// other.
func BenchmarkSendCheck(b *testing.B) { benchSendCheck(b, 1, false) }

// BenchmarkSendCheck8Users is 8 users at once, each with its own numbers.
func BenchmarkSendCheck8Users(b *testing.B) { benchSendCheck(b, 8, false) }

// BenchmarkSendCheckGateway8Users is 8 users at once, their codes posted to
// an HTTP gateway; gateway-conns is how many connections the sender opened
// to it (at most 8 when they are kept alive).
func BenchmarkSendCheckGateway8Users(b *testing.B) { benchSendCheck(b, 8, true) }
