package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The receiver's paths: a webhook under hookPath answers 204 at once; one
// under hangPath holds the request until the client gives up (its
// context is done), as an endpoint that hangs does.
const (
	hookPath = "/hook/"
	hangPath = "/hang/"
)

// receiver is the loopback endpoint every system posts to. It records the
// first arrival of each message, keyed by path and webhook-id (one event
// goes to several channels with one webhook-id, each channel with a path
// of its own), and counts every arrival and the bytes of the bodies.
type receiver struct {
	srv  *http.Server
	base string // "http://127.0.0.1:PORT"

	mu       sync.Mutex
	first    map[string]time.Time // path + " " + webhook-id -> first arrival
	byTenant map[string]int64     // "t" and a tenant -> messages seen at least once

	unique   atomic.Int64 // messages seen at least once
	arrivals atomic.Int64 // requests, repeats included
	bytes    atomic.Int64 // body bytes of the requests

	// behaviour, if set, answers the requests under its prefix: the
	// endpoint under test of an adaptive scenario (adaptive.go).
	behaviour atomic.Pointer[behaviour]
}

// startReceiver listens on a free loopback port and serves until close.
func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: listen on loopback: %w", err)
	}
	r := &receiver{first: map[string]time.Time{}, byTenant: map[string]int64{}, base: "http://" + ln.Addr().String()}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("receiver: %v\n", err)
		}
	}()
	return r, nil
}

// ServeHTTP records the request and answers it.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	n, _ := drain(req)
	r.arrivals.Add(1)
	r.bytes.Add(n)
	key := req.URL.Path + " " + req.Header.Get("webhook-id")
	r.mu.Lock()
	if _, seen := r.first[key]; !seen {
		r.first[key] = now
		r.byTenant[tenantOf(req.URL.Path)]++
		r.unique.Add(1)
	}
	r.mu.Unlock()
	if bh := r.behaviour.Load(); bh != nil && strings.HasPrefix(req.URL.Path, bh.prefix) {
		bh.serve(w, req, now)
		return
	}
	if strings.HasPrefix(req.URL.Path, hangPath) {
		<-req.Context().Done()
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// drain reads the request body to its end and returns its length.
func drain(req *http.Request) (int64, error) {
	var buf [4096]byte
	var n int64
	for {
		m, err := req.Body.Read(buf[:])
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
}

// reset forgets every arrival, before a new scenario.
func (r *receiver) reset() {
	r.mu.Lock()
	clear(r.first)
	clear(r.byTenant)
	r.unique.Store(0)
	r.mu.Unlock()
	r.arrivals.Store(0)
	r.bytes.Store(0)
}

// firstArrival returns when the message id first arrived at path.
func (r *receiver) firstArrival(path, id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.first[path+" "+id]
	return t, ok
}

// bytesPerRequest is the mean body size of the requests since reset.
func (r *receiver) bytesPerRequest() float64 {
	n := r.arrivals.Load()
	if n == 0 {
		return 0
	}
	return float64(r.bytes.Load()) / float64(n)
}

// tenantOf returns the tenant segment of a channel's path ("t3" of
// "/hook/t3/c1"; see channelPath).
func tenantOf(path string) string {
	_, rest, _ := strings.Cut(path[1:], "/")
	seg, _, _ := strings.Cut(rest, "/")
	return seg
}

// uniqueOf returns how many messages of tenant arrived at least once.
func (r *receiver) uniqueOf(tenant int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byTenant[fmt.Sprintf("t%d", tenant)]
}

// waitUnique waits until at least n messages arrived, polling every few
// milliseconds, or ctx ends.
func (r *receiver) waitUnique(ctx context.Context, n int64) error {
	return waitFor(ctx, func() (bool, error) { return r.unique.Load() >= n, nil })
}

// close stops the server; requests held on hanging paths end with it.
func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil {
		_ = r.srv.Close()
	}
}

// pollInterval is how often waits look at the state they wait for.
const pollInterval = 2 * time.Millisecond

// waitFor calls done every pollInterval until it reports true or an error,
// or ctx ends.
func waitFor(ctx context.Context, done func() (bool, error)) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
