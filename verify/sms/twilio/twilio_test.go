package twilio_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/internal/smstest"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/sms/twilio"
)

func TestSender(t *testing.T) {
	const sid, token = "AC0123456789abcdef0123456789abcdef", "tok3n"
	tests := []struct {
		name     string
		from     string
		reply    http.HandlerFunc
		wantForm url.Values
		wantErr  []string // nil for success
	}{
		{
			name:     "201 from a number",
			from:     "+15005550006",
			reply:    smstest.Answer(http.StatusCreated, `{"sid":"SM1","status":"queued"}`),
			wantForm: url.Values{"To": {"+8613800138000"}, "From": {"+15005550006"}, "Body": {"Your code is 482913."}},
		},
		{
			name:     "201 from a messaging service",
			from:     "MG0123456789abcdef0123456789abcdef",
			reply:    smstest.Answer(http.StatusCreated, `{"sid":"SM1"}`),
			wantForm: url.Values{"To": {"+8613800138000"}, "MessagingServiceSid": {"MG0123456789abcdef0123456789abcdef"}, "Body": {"Your code is 482913."}},
		},
		{
			name:     "400 with Twilio's error",
			from:     "+15005550006",
			reply:    smstest.Answer(http.StatusBadRequest, `{"code":21211,"message":"The 'To' number is not a valid phone number.","more_info":"https://www.twilio.com/docs/errors/21211","status":400}`),
			wantForm: url.Values{"To": {"+8613800138000"}, "From": {"+15005550006"}, "Body": {"Your code is 482913."}},
			wantErr:  []string{"400", "21211", "The 'To' number is not a valid phone number."},
		},
		{
			name:     "200 is not 201",
			from:     "+15005550006",
			reply:    smstest.Answer(http.StatusOK, `{}`),
			wantForm: url.Values{"To": {"+8613800138000"}, "From": {"+15005550006"}, "Body": {"Your code is 482913."}},
			wantErr:  []string{"200"},
		},
		{
			name:     "503 without JSON",
			from:     "+15005550006",
			reply:    smstest.Answer(http.StatusServiceUnavailable, "upstream down"),
			wantForm: url.Values{"To": {"+8613800138000"}, "From": {"+15005550006"}, "Body": {"Your code is 482913."}},
			wantErr:  []string{"503", "upstream down"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := smstest.Start(t, tt.reply)
			s, err := twilio.New(twilio.Config{AccountSID: sid, AuthToken: token, From: tt.from, BaseURL: g.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = s.SendSMS(context.Background(), smstest.Message)
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil {
				if err == nil {
					t.Fatal("SendSMS succeeded, want an error")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if strings.Contains(err.Error(), smstest.Message.Code) || strings.Contains(err.Error(), token) {
					t.Errorf("error %q contains the code or the token", err)
				}
			}
			reqs := g.Requests()
			if len(reqs) != 1 {
				t.Fatalf("gateway got %d requests, want 1", len(reqs))
			}
			form, err := url.ParseQuery(reqs[0].Body)
			if err != nil {
				t.Fatal(err)
			}
			reqs[0].Body = ""
			want := smstest.Request{
				Method: "POST", Path: "/2010-04-01/Accounts/" + sid + "/Messages.json",
				ContentType: "application/x-www-form-urlencoded", User: sid, Password: token,
			}
			if diff := cmp.Diff(want, reqs[0]); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantForm, form); diff != "" {
				t.Errorf("form (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSenderRedirectFails(t *testing.T) {
	var targetHits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { targetHits.Add(1) }))
	t.Cleanup(target.Close)
	g := smstest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	})
	s, err := twilio.New(twilio.Config{AccountSID: "AC1", AuthToken: "t", From: "+15005550006", BaseURL: g.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendSMS(context.Background(), smstest.Message); err == nil || !strings.Contains(err.Error(), "307") {
		t.Fatalf("SendSMS error = %v, want one naming 307", err)
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the redirect target got %d requests, want none", n)
	}
}

func TestNewValidates(t *testing.T) {
	valid := twilio.Config{AccountSID: "AC1", AuthToken: "t", From: "+15005550006"}
	tests := []struct {
		name   string
		change func(*twilio.Config)
		ok     bool
	}{
		{"default BaseURL", func(*twilio.Config) {}, true},
		{"https BaseURL", func(c *twilio.Config) { c.BaseURL = "https://api.example.com/" }, true},
		{"http on loopback", func(c *twilio.Config) { c.BaseURL = "http://127.0.0.1:8080" }, true},
		{"messaging service", func(c *twilio.Config) { c.From = "MG1" }, true},
		{"http to a remote host", func(c *twilio.Config) { c.BaseURL = "http://api.example.com" }, false},
		{"no AccountSID", func(c *twilio.Config) { c.AccountSID = "" }, false},
		{"AccountSID with a slash", func(c *twilio.Config) { c.AccountSID = "AC1/../x" }, false},
		{"no AuthToken", func(c *twilio.Config) { c.AuthToken = "" }, false},
		{"no From", func(c *twilio.Config) { c.From = "" }, false},
		{"From not E.164", func(c *twilio.Config) { c.From = "15005550006" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.change(&cfg)
			_, err := twilio.New(cfg)
			if (err == nil) != tt.ok {
				t.Errorf("New error = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestNewRefusesNegativeConcurrency(t *testing.T) {
	if _, err := twilio.New(twilio.Config{AccountSID: "AC1", AuthToken: "t", From: "+12015550123", Concurrency: -1}); err == nil {
		t.Error("Twilio sender with Concurrency -1: no error")
	}
}

// TestClassify checks that Twilio's refusals are *sms.Error classified
// as the template providers' are: a 429 (or Twilio's 20429) throttled with the answer's Retry-After, a 5xx
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
		{"twilio 20429", withRetryAfter(http.StatusTooManyRequests, "7", `{"code":20429,"message":"Too Many Requests"}`), class{"20429", true, true, 7 * time.Second}},
		{"twilio 20003", withRetryAfter(http.StatusUnauthorized, "", `{"code":20003,"message":"Authenticate"}`), class{"20003", false, false, 0}},
		{"twilio 21211", withRetryAfter(http.StatusBadRequest, "", `{"code":21211,"message":"Invalid 'To' Phone Number"}`), class{"21211", false, false, 0}},
		{"twilio 20500", withRetryAfter(http.StatusInternalServerError, "", `{"code":20500,"message":"Internal Server Error"}`), class{"20500", true, false, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := smstest.Start(t, tt.reply)
			var s verify.SMSSender
			var err error
			s, err = twilio.New(twilio.Config{AccountSID: "AC0123456789abcdef0123456789abcdef", AuthToken: "tok3n", From: "+15005550006", BaseURL: g.URL})
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
}
