package outbox

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// proxy forwards TCP connections to target until drop closes those it
// holds (a lost connection, as a network or a server restart loses it).
// While refusing is above 0, it closes each new connection at once instead
// (a server still restarting), counting down.
type proxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	conns    []net.Conn
	refusing int
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			refuse := p.refusing > 0
			if refuse {
				p.refusing--
			}
			p.mu.Unlock()
			if refuse {
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(up, c); up.Close() })
			wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
		}
	})
	t.Cleanup(func() { ln.Close(); p.drop(); wg.Wait() })
	return p
}

func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// cut drops every connection and refuses the next n.
func (p *proxy) cut(n int) {
	p.mu.Lock()
	p.refusing = n
	p.mu.Unlock()
	p.drop()
}

// restore refuses no more connections and reports whether all those cut
// was to refuse came.
func (p *proxy) restore() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	came := p.refusing == 0
	p.refusing = 0
	return came
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// awaitWake waits for a wake-up of w, at most 10 s.
func awaitWake(t *testing.T, w *Worker, what string) {
	t.Helper()
	select {
	case <-w.wake:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up %s", what)
	}
}

// TestListenReconnects: a lost listener connection is logged and
// established again, workers are woken for what they may have missed, and
// the next commit wakes them as before.
func TestListenReconnects(t *testing.T) {
	dsn := dbtest.RequirePostgres(t)
	db := dbtest.OpenPostgres(t)
	migrated(t, db)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	// The listener's pool reaches PostgreSQL through the proxy; its search
	// path does not matter to LISTEN and NOTIFY.
	via := dbtest.OpenSchema(u.String(), "public")
	defer via.Close()

	w := newWorker(t, db, newScript(), clocktest.New(t0))
	var logs logBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Listen(ctx, via, slog.New(slog.NewJSONHandler(&logs, nil)), w)
		close(done)
	}()
	defer func() { cancel(); <-done }()

	awaitWake(t, w, "when the listener started")
	if got := w.listening.Load(); got != 1 {
		t.Errorf("the worker counts %d listeners once the LISTEN holds; want 1", got)
	}
	p.drop()
	awaitWake(t, w, "when the listener connection was established again")
	// The lost connection no longer counts, the new one does.
	if got := w.listening.Load(); got != 1 {
		t.Errorf("the worker counts %d listeners after the reconnection; want 1", got)
	}
	enqueue(t, db, event("msg_after"), t0)
	awaitWake(t, w, "after a commit, on the new connection")
	cancel()
	<-done
	if got := w.listening.Load(); got != 0 {
		t.Errorf("the worker counts %d listeners after Listen returned; want 0", got)
	}
	for _, want := range []string{"listener connection lost", "listener connection established again"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}
