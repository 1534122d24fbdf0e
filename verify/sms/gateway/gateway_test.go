package gateway_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/internal/smstest"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/sms/gateway"
)

func TestSenderRequest(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusAccepted} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			g := smstest.Start(t, smstest.Answer(status, `{"id":"1"}`))
			s, err := gateway.New(gateway.Config{
				URL:    g.URL + "/sms/send",
				Header: http.Header{"X-Api-Key": {"key-1"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SendSMS(context.Background(), smstest.Message); err != nil {
				t.Fatal(err)
			}
			want := []smstest.Request{{
				Method: "POST", Path: "/sms/send", ContentType: "application/json", APIKey: "key-1",
				Body: `{"to":"+8613800138000","text":"Your code is 482913.","bizKey":"MODIFY_MOBILE"}`,
			}}
			if diff := cmp.Diff(want, g.Requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSenderFailures(t *testing.T) {
	tests := []struct {
		name  string
		reply http.HandlerFunc
		want  []string // in the error's text
	}{
		{"400", smstest.Answer(http.StatusBadRequest, `{"error":"bad number"}`), []string{"400 Bad Request", "bad number"}},
		{"500", smstest.Answer(http.StatusInternalServerError, "down"), []string{"500 Internal Server Error", "down"}},
		{"echo of the message", smstest.Answer(http.StatusBadRequest, "rejected: Your code is 482913."), []string{"400", "rejected"}},
		{"echo of the number", smstest.Answer(http.StatusBadRequest, "bad number +8613800138000 (13800138000)"), []string{"400", "bad number +*********8000 (*******8000)"}},
		{"long reply", smstest.Answer(http.StatusBadGateway, strings.Repeat("x", 1000)), []string{"502", strings.Repeat("x", 200) + "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := smstest.Start(t, tt.reply)
			s, err := gateway.New(gateway.Config{URL: g.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = s.SendSMS(context.Background(), smstest.Message)
			if err == nil {
				t.Fatal("SendSMS succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), smstest.Message.Code) || strings.Contains(err.Error(), "13800138000") {
				t.Errorf("error %q contains the code or the number", err)
			}
			if strings.Contains(err.Error(), strings.Repeat("x", 201)) {
				t.Errorf("error quotes more than 200 bytes of the reply: %d bytes", len(err.Error()))
			}
		})
	}
}

func TestSenderRedirectFails(t *testing.T) {
	var targetHits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		targetHits.Add(1)
	}))
	t.Cleanup(target.Close)
	g := smstest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	})
	s, err := gateway.New(gateway.Config{URL: g.URL})
	if err != nil {
		t.Fatal(err)
	}
	err = s.SendSMS(context.Background(), smstest.Message)
	if err == nil || !strings.Contains(err.Error(), "302") {
		t.Fatalf("SendSMS error = %v, want one naming 302", err)
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the redirect target got %d requests, want none", n)
	}
}

// countingBody counts the bytes read from a reply.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type countingTransport struct {
	base *http.Transport
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, &c.read}
	}
	return resp, err
}

func TestSenderBoundsTheReply(t *testing.T) {
	const size = 10 << 20
	huge := func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		chunk := []byte(strings.Repeat("y", 64<<10))
		for written := 0; written < size; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client hung up, as it should
			}
		}
	}
	g := smstest.Start(t, huge)
	tr := &countingTransport{base: &http.Transport{}}
	t.Cleanup(tr.base.CloseIdleConnections)
	s, err := gateway.New(gateway.Config{URL: g.URL, Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.SendSMS(context.Background(), smstest.Message)
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("SendSMS error = %v, want one naming 500", err)
	}
	if len(err.Error()) > 400 {
		t.Errorf("error text is %d bytes long", len(err.Error()))
	}
	if n := tr.read.Load(); n > 64<<10 {
		t.Errorf("read %d bytes of the reply, want at most 64 KiB", n)
	}

	// The default client too fails and quotes no more.
	s, err = gateway.New(gateway.Config{URL: g.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendSMS(context.Background(), smstest.Message); err == nil || len(err.Error()) > 400 {
		t.Errorf("SendSMS error = %.500v, want a short one", err)
	}
}

func TestSenderRefusesWithoutSending(t *testing.T) {
	g := smstest.Start(t, smstest.Answer(http.StatusOK, ""))
	s, err := gateway.New(gateway.Config{URL: g.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendSMS(context.Background(), verify.SMS{To: "13800138000", Text: "code 1"}); err == nil {
		t.Error("SendSMS to a number without + succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.SendSMS(ctx, smstest.Message); !errors.Is(err, context.Canceled) {
		t.Errorf("SendSMS with a cancelled ctx = %v, want context.Canceled", err)
	}
	if n := len(g.Requests()); n != 0 {
		t.Errorf("gateway got %d requests, want none", n)
	}
}

func TestSenderErrorHidesQueryKey(t *testing.T) {
	// Nothing listens on port 1 of loopback: the dial fails at once.
	s, err := gateway.New(gateway.Config{URL: "http://127.0.0.1:1/send?key=topsecret"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.SendSMS(context.Background(), smstest.Message)
	if err == nil || strings.Contains(err.Error(), "topsecret") || !strings.Contains(err.Error(), "127.0.0.1:1/send") {
		t.Errorf("SendSMS error = %v, want one naming the URL without its query", err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, u := range []string{"", "/relative", "ftp://example.com/x", "example.com/send", "http://"} {
		if _, err := gateway.New(gateway.Config{URL: u}); err == nil {
			t.Errorf("New(URL %q) succeeded", u)
		}
	}
}

// TestSenderKeepsConnectionsAlive: rounds of concurrent sends reuse
// the connections of the first round. On Go's default transport (2 idle
// connections per host) every round opened concurrency-2 new ones.
func TestSenderKeepsConnectionsAlive(t *testing.T) {
	const concurrency, rounds = 16, 4
	var opened atomic.Int64
	arrived := make(chan struct{}, concurrency)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-release // every request of a round is in flight at once
		w.WriteHeader(http.StatusOK)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s, err := gateway.New(gateway.Config{URL: srv.URL, Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		errs := make(chan error, concurrency)
		for range concurrency {
			go func() {
				errs <- s.SendSMS(context.Background(), verify.SMS{To: "+8613800138000", Text: "hi", BizKey: "SIGNIN"})
			}()
		}
		deadline := time.After(10 * time.Second)
		for range concurrency {
			select {
			case <-arrived:
			case <-deadline:
				t.Fatalf("round %d: not every send reached the gateway", round)
			}
		}
		for range concurrency {
			release <- struct{}{}
		}
		for range concurrency {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	if got := opened.Load(); got != concurrency {
		t.Errorf("%d rounds of %d concurrent sends opened %d connections, want %d (one per sender in flight)", rounds, concurrency, got, concurrency)
	}
}

func TestNewRefusesNegativeConcurrency(t *testing.T) {
	if _, err := gateway.New(gateway.Config{URL: "http://127.0.0.1:1/sms", Concurrency: -1}); err == nil {
		t.Error("HTTP sender with Concurrency -1: no error")
	}
}

// TestClassify checks that the gateway's refusals are *sms.Error
// classified as the template providers' are: a 429 throttled with the answer's Retry-After, a 5xx
// retryable, anything else final.
func TestClassify(t *testing.T) {
	withRetryAfter := func(status int, after, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if after != "" {
				w.Header().Set("Retry-After", after)
			}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	type class struct {
		Code                 string
		Retryable, Throttled bool
		RetryAfter           time.Duration
	}
	tests := []struct {
		name  string
		reply http.HandlerFunc
		want  class
	}{
		{"gateway 429 with Retry-After", withRetryAfter(http.StatusTooManyRequests, "42", "slow down"), class{"", true, true, 42 * time.Second}},
		{"gateway 429 without", withRetryAfter(http.StatusTooManyRequests, "", "slow down"), class{"", true, true, sms.DefaultRetryAfter}},
		{"gateway 503", withRetryAfter(http.StatusServiceUnavailable, "", "down"), class{"", true, false, 0}},
		{"gateway 400", withRetryAfter(http.StatusBadRequest, "", "bad number"), class{"", false, false, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := smstest.Start(t, tt.reply)
			var s verify.SMSSender
			var err error
			s, err = gateway.New(gateway.Config{URL: g.URL})
			if err != nil {
				t.Fatal(err)
			}
			se, ok := errors.AsType[*sms.Error](s.SendSMS(context.Background(), smstest.Message))
			if !ok {
				t.Fatal("SendSMS did not fail with an *sms.Error")
			}
			if diff := cmp.Diff(tt.want, class{se.Code, se.Retryable, se.Throttled, se.RetryAfter}); diff != "" {
				t.Errorf("classification (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("gateway unreachable", func(t *testing.T) {
		g := smstest.Start(t, smstest.Answer(http.StatusOK, ""))
		g.Close()
		s, err := gateway.New(gateway.Config{URL: g.URL})
		if err != nil {
			t.Fatal(err)
		}
		se, ok := errors.AsType[*sms.Error](s.SendSMS(context.Background(), smstest.Message))
		if !ok || !se.Retryable || se.Err == nil {
			t.Errorf("unreachable gateway: got %#v, want a retryable *sms.Error wrapping the transport's error", se)
		}
	})
}
