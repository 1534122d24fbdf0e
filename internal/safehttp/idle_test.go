package safehttp

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A client keeps MaxIdleConnsPerHost connections to one host alive: a
// second round of n concurrent requests reuses the first round's n
// connections when n fit, and opens new ones for the rest when not.
func TestIdleConnectionsPerHost(t *testing.T) {
	const n = 8
	for _, c := range []struct {
		idle    int
		wantNew int64 // new connections in the second round
	}{
		{n, 0},
		{0, n - DefaultMaxIdleConnsPerHost}, // the default keeps 4
	} {
		var conns atomic.Int64
		var arrived sync.WaitGroup
		arrived.Add(n)
		release := make(chan struct{})
		var round atomic.Pointer[chan struct{}]
		round.Store(&release)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Hold every request until all n arrived, so that the n
			// requests of a round need n connections at once.
			arrived.Done()
			<-*round.Load()
			w.WriteHeader(http.StatusNoContent)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		client := New(Config{AllowPrivateNetworks: true, Timeout: 10 * time.Second, MaxIdleConnsPerHost: c.idle})
		roundTrip := func() {
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					req, err := http.NewRequest(http.MethodPost, srv.URL+"/hook", nil)
					if err != nil {
						t.Error(err)
						return
					}
					if r, err := client.Do(req); err != nil || r.Status != http.StatusNoContent {
						t.Errorf("Do = %v, %v", r, err)
					}
				})
			}
			arrived.Wait()
			close(*round.Load())
			wg.Wait()
		}
		roundTrip()
		first := conns.Load()
		arrived.Add(n)
		next := make(chan struct{})
		round.Store(&next)
		roundTrip()
		if first != n || conns.Load()-first != c.wantNew {
			t.Errorf("idle %d: %d connections in the first round (want %d), %d new in the second (want %d)",
				c.idle, first, n, conns.Load()-first, c.wantNew)
		}
		srv.Close()
	}
}
