package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/notify"
)

func TestWebhookRequest(t *testing.T) {
	secret, err := notify.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		now      func() time.Time
		realTime bool // the clock is time.Now
		data     json.RawMessage
		wantBody string
		verify   func(body []byte, h http.Header) error
	}{{
		// The library checks the timestamp against the real time.
		name:     "real clock, library's full check",
		now:      time.Now,
		realTime: true,
		data:     json.RawMessage(`{"channelId": 7, "html": "<b>&</b>"}`),
		wantBody: `{"type":"channel.test","timestamp":"2024-05-01T08:30:00Z","data":{"channelId":7,"html":"<b>&</b>"}}`,
		verify:   wh.Verify,
	}, {
		name:     "fixed clock, no data",
		now:      func() time.Time { return kindtest.FixedNow },
		data:     nil,
		wantBody: `{"type":"channel.test","timestamp":"2024-05-01T08:30:00Z","data":{}}`,
		verify: func(body []byte, h http.Header) error {
			if got, want := h.Get("webhook-timestamp"), strconv.FormatInt(kindtest.FixedNow.Unix(), 10); got != want {
				t.Errorf("webhook-timestamp = %q, want %q (the sender's clock)", got, want)
			}
			return wh.VerifyIgnoringTimestamp(body, h)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			far := kindtest.StartFarEnd(t, kindtest.Answer(http.StatusNoContent, ""))
			s := kindtest.NewSender(t)
			s.Now = tt.now
			m := kindtest.Message()
			m.Data = tt.data
			before := time.Now().Unix()
			err := s.Send(context.Background(), kindtest.Dest{Kind: kindtest.KindWebhook, Name: "ops", Address: far.URL + "/hooks/deskkit?tenant=7", Secret: secret}, m)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			req := far.Only(t)
			type view struct {
				Method, Path, RawQuery, ContentType, ID, Body string
			}
			want := view{Method: "POST", Path: "/hooks/deskkit", RawQuery: "tenant=7", ContentType: "application/json", ID: m.ID, Body: tt.wantBody}
			got := view{Method: req.Method, Path: req.Path, RawQuery: req.RawQuery, ContentType: req.Header.Get("Content-Type"),
				ID: req.Header.Get("webhook-id"), Body: string(req.Body)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if err := tt.verify(req.Body, req.Header); err != nil {
				t.Errorf("standard-webhooks refuses the signature: %v", err)
			}
			if ts, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64); tt.realTime && (ts < before || ts > time.Now().Unix()) {
				t.Errorf("webhook-timestamp %d is not the time of the send", ts)
			}
			// A receiver holding another secret must refuse it.
			other, _ := notify.NewWebhookSecret()
			ow, _ := standardwebhooks.NewWebhook(other)
			if ow.VerifyIgnoringTimestamp(req.Body, req.Header) == nil {
				t.Error("a signature verifies with another secret")
			}
		})
	}
}

// TestWebhookRetryKeepsID sends the same message twice: a receiver sees
// the same webhook-id, so it can drop the duplicate, and a fresh
// signature over the attempt's time.
func TestWebhookRetryKeepsID(t *testing.T) {
	secret, _ := notify.NewWebhookSecret()
	far := kindtest.StartFarEnd(t, kindtest.Answer(http.StatusOK, "ok"))
	s := kindtest.NewSender(t)
	now := kindtest.FixedNow
	s.Now = func() time.Time { return now }
	target := kindtest.Dest{Kind: kindtest.KindWebhook, Address: far.URL, Secret: secret}
	for range 2 {
		if err := s.Send(context.Background(), target, kindtest.Message()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	reqs := far.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if reqs[0].Header.Get("webhook-id") != reqs[1].Header.Get("webhook-id") {
		t.Errorf("webhook-id changed on a retry: %q, %q", reqs[0].Header.Get("webhook-id"), reqs[1].Header.Get("webhook-id"))
	}
	if string(reqs[0].Body) != string(reqs[1].Body) {
		t.Errorf("body changed on a retry:\n%s\n%s", reqs[0].Body, reqs[1].Body)
	}
	if got, want := reqs[1].Header.Get("webhook-timestamp"), strconv.FormatInt(kindtest.FixedNow.Add(time.Minute).Unix(), 10); got != want {
		t.Errorf("retry's webhook-timestamp = %s, want %s", got, want)
	}
	if reqs[0].Header.Get("webhook-signature") == reqs[1].Header.Get("webhook-signature") {
		t.Error("the retry reused the first attempt's signature")
	}
}

// TestWebhookCustomHeaders: a channel's custom headers go with the
// request as given, beside the webhook's own, and the signature still
// verifies; a custom header of a name the webhook sets (which the
// registry refuses anyway) never replaces the webhook's.
func TestWebhookCustomHeaders(t *testing.T) {
	secret, _ := notify.NewWebhookSecret()
	wh, _ := standardwebhooks.NewWebhook(secret)
	far := kindtest.StartFarEnd(t, kindtest.Answer(http.StatusOK, "ok"))
	s := kindtest.NewSender(t)
	s.Now = func() time.Time { return kindtest.FixedNow }
	m := kindtest.Message()
	d := kindtest.Dest{Kind: kindtest.KindWebhook, Name: "ops", Address: far.URL + "/hook", Secret: secret,
		Headers: [][2]string{{"Authorization", "Bearer t0k3n"}, {"x-tenant", "acme"}, {"webhook-id", "forged"}, {"Content-Type", "text/plain"}}}
	if err := s.Send(context.Background(), d, m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	req := far.Only(t)
	if got := req.Header.Get("Authorization"); got != "Bearer t0k3n" {
		t.Errorf("Authorization = %q", got)
	}
	if got := req.Header.Values("X-Tenant"); len(got) != 1 || got[0] != "acme" {
		t.Errorf("X-Tenant = %q", got)
	}
	if got := req.Header.Values("webhook-id"); len(got) != 1 || got[0] != m.ID {
		t.Errorf("webhook-id = %q, want the message's id alone", got)
	}
	if got := req.Header.Values("Content-Type"); len(got) != 1 || got[0] != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	if err := wh.VerifyIgnoringTimestamp(req.Body, req.Header); err != nil {
		t.Errorf("the signature does not verify beside custom headers: %v", err)
	}
}
