// Package smstest is a loopback HTTP endpoint that records what the SMS
// senders' tests send it, shared by the packages of the senders that speak
// plain HTTP (the gateway, Twilio).
package smstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/deskkit/deskkit/verify"
)

// Request is what a Gateway saw of one request.
type Request struct {
	Method, Path, ContentType, APIKey string
	User, Password                    string
	Body                              string
}

// Gateway is an httptest server on loopback that records requests and
// answers with its reply.
type Gateway struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []Request
}

// Start starts a Gateway answering with reply, closed when t ends.
func Start(t *testing.T, reply http.HandlerFunc) *Gateway {
	t.Helper()
	g := &Gateway{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, password, _ := r.BasicAuth()
		g.mu.Lock()
		g.reqs = append(g.reqs, Request{
			Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
			APIKey: r.Header.Get("X-Api-Key"), User: user, Password: password, Body: string(body),
		})
		g.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

// Requests is what g saw so far, oldest first.
func (g *Gateway) Requests() []Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Request(nil), g.reqs...)
}

// Answer answers status with body.
func Answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Message is the message the tests send.
var Message = verify.SMS{To: "+8613800138000", Text: "Your code is 482913.", BizKey: verify.ModifyMobile, Code: "482913"}
