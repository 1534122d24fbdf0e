package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit/trash"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestWebhookBody(t *testing.T) {
	ev := trashedEvent(7, 3)
	body, err := webhookBody(7, ev)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != trash.EventTaskTrashed || !got.Timestamp.Equal(ev.Time) {
		t.Errorf("type %q, timestamp %v; want %q, %v", got.Type, got.Timestamp, trash.EventTaskTrashed, ev.Time)
	}
	// deskkit puts "tenantId" first in the data.
	want := `{"tenantId":7,"actor":{"id":1003,"name":"Katherine Johnson"},`
	if s := string(got.Data); len(s) < len(want) || s[:len(want)] != want {
		t.Errorf("data = %s, want it to start with %s", got.Data, want)
	}
}

func TestMessagesLayout(t *testing.T) {
	l := layout{firstTenant: 1, tenants: 2, channels: 3, events: 4}
	msgs, err := messages("http://127.0.0.1:1", l)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != l.deliveries() {
		t.Fatalf("%d messages, want %d", len(msgs), l.deliveries())
	}
	perURL := map[string]int{}
	secrets := map[string]string{}
	for _, m := range msgs {
		perURL[m.URL]++
		if s, ok := secrets[m.URL]; ok && s != m.Secret {
			t.Errorf("%s has two secrets", m.URL)
		}
		secrets[m.URL] = m.Secret
	}
	if len(perURL) != l.tenants*l.channels {
		t.Errorf("%d channels, want %d", len(perURL), l.tenants*l.channels)
	}
	for u, n := range perURL {
		if n != l.events {
			t.Errorf("%s gets %d messages, want %d", u, n, l.events)
		}
	}
}

// TestPosterSigns checks that the POST River's jobs and the plain client
// make carries the body as given and verifies with the Standard Webhooks
// library, as deskkit's do.
func TestPosterSigns(t *testing.T) {
	type request struct {
		header http.Header
		body   []byte
	}
	got := make(chan request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- request{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	msgs, err := messages(srv.URL, layout{firstTenant: 1, tenants: 1, channels: 1, events: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := msgs[0]
	var signers sync.Map
	if err := loopbackClient(1).send(t.Context(), &signers, m); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if !bytes.Equal(r.body, m.Body) {
		t.Errorf("body %s, want %s", r.body, m.Body)
	}
	if id := r.header.Get("webhook-id"); id != m.ID {
		t.Errorf("webhook-id %q, want %q", id, m.ID)
	}
	wh, err := standardwebhooks.NewWebhook(m.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(r.body, r.header); err != nil {
		t.Errorf("verify: %v", err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:80":      true,
		"[::1]:80":          true,
		"10.0.0.1:80":       false,
		"93.184.216.34:443": false,
	} {
		if err := loopbackOnly("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("loopbackOnly(%s) = %v", addr, err)
		}
	}
}
