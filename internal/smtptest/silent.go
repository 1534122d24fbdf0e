package smtptest

import (
	"net"
	"sync"
	"testing"
)

// StartSilent listens on 127.0.0.1 and accepts connections but never says
// a word, as a server that hangs before its greeting: a client can only
// be stopped by its own deadline. Each accepted connection is announced on
// accepted, so that a test can act once the client is waiting. The
// listener and its connections are closed when t ends.
func StartSilent(t testing.TB) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	stop := make(chan struct{})
	var (
		wg    sync.WaitGroup
		conns []net.Conn // the accept loop's until wg is done
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case ch <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		_ = ln.Close()
		wg.Wait()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), ch
}
