package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The plain Go client posts the backlog's messages straight to the
// receiver, with the same bodies and headers, at a given concurrency: the
// I/O limit of the machine, which no queue can beat.

// poster sends messages as deskkit sends a webhook: a POST of the body with
// Standard Webhooks' headers, signed at the attempt's time; any 2xx is
// success. River's jobs and the plain client use it.
type poster struct{ http *http.Client }

// loopbackClient returns a poster that keeps conns idle connections and
// dials loopback addresses only.
func loopbackClient(conns int) *poster {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: loopbackOnly}
	return &poster{http: &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// loopbackOnly refuses to dial anything but a loopback address: the bench
// never sends a packet elsewhere.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("bench: refusing to dial %s: not a loopback address", address)
	}
	return nil
}

// send posts m, signed with a signer of m.Secret from signers (built once
// per secret).
func (p *poster) send(ctx context.Context, signers *sync.Map, m message) error {
	s, ok := signers.Load(m.Secret)
	if !ok {
		wh, err := newSigner(m.Secret)
		if err != nil {
			return err
		}
		s, _ = signers.LoadOrStore(m.Secret, wh)
	}
	now := time.Now()
	sig, err := s.(*standardwebhooks.Webhook).Sign(m.ID, now, m.Body)
	if err != nil {
		return fmt.Errorf("sign %s: %w", m.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "deskkit")
	req.Header.Set("webhook-id", m.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := p.http.Do(req)
	if err != nil {
		return fmt.Errorf("post %s: %w", m.ID, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post %s: the receiver answered %s", m.ID, resp.Status)
	}
	return nil
}

// runPlain posts every message with concurrency goroutines and returns the
// time it took.
func runPlain(ctx context.Context, msgs []message, concurrency int) (time.Duration, error) {
	p := loopbackClient(concurrency)
	defer p.http.CloseIdleConnections()
	var signers sync.Map
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(msgs)) && failed.Load() == nil; i = next.Add(1) - 1 {
				if err := p.send(ctx, &signers, msgs[i]); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		return 0, fmt.Errorf("plain client: %w", *err)
	}
	return elapsed, nil
}
