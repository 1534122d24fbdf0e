package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// tcpProxy forwards loopback connections to target until cut: then it drops
// every connection and either refuses new ones (closes them at once) or
// blackholes them (accepts and never answers), as a database host that
// went away or a network that drops packets would.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	down      bool
	blackhole bool
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		down, blackhole := p.down, p.blackhole
		if down && blackhole {
			p.conns[c] = struct{}{} // held, unanswered, until restore
		}
		p.mu.Unlock()
		if down {
			if !blackhole {
				c.Close()
			}
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		p.wg.Go(func() { pipe(up, c) })
		p.wg.Go(func() { pipe(c, up) })
	}
}

// dropAll closes every connection the proxy holds.
func (p *tcpProxy) dropAll() {
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// cut drops every connection and refuses (or blackholes) new ones.
func (p *tcpProxy) cut(blackhole bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down, p.blackhole = true, blackhole
	p.dropAll()
}

// restore forwards new connections again; blackholed ones are dropped.
func (p *tcpProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	p.dropAll()
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.dropAll()
	p.mu.Unlock()
	p.wg.Wait()
}

// TestDatabaseOutage is fault 3: with PostgreSQL cut off, the API answered
// 500. Now every API call answers 503 with Retry-After within the request
// deadline, /readyz answers 503, the outage is logged a few times rather
// than once per request, and once the database is back the same app serves
// again, without a restart.
func TestDatabaseOutage(t *testing.T) {
	rawURL := dbtest.Database(t)
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr()

	ctx := context.Background()
	const requestTimeout = time.Second
	db, err := openDBWith(ctx, u.String(), database.Options{MaxOpenConns: 4, DialTimeout: requestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logs lockedBuffer
	a, err := newApp(db, appConfig{
		Logger:         slog.New(slog.NewJSONHandler(&logs, nil)),
		Now:            func() time.Time { return time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC) },
		RequestTimeout: requestTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	token, err := a.demoToken(ctx)
	if err != nil {
		t.Fatal(err)
	}

	type answer struct {
		status     int
		retryAfter string
		key        string
		took       time.Duration
	}
	call := func(method, path string) answer {
		req := httptest.NewRequest(method, path, strings.NewReader(`{"projectId":1,"name":"during the outage"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		a.handler.ServeHTTP(rec, req)
		var env struct {
			Ext struct {
				EKey string `json:"eKey"`
			} `json:"ext"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &env)
		return answer{rec.Code, rec.Header().Get("Retry-After"), env.Ext.EKey, time.Since(start)}
	}
	routes := [][2]string{
		{http.MethodGet, "/api/v1/task/trash/search?targetType=TASK"},
		{http.MethodGet, "/api/v1/task/trash/count?projectId=1"},
		{http.MethodPost, "/api/v1/demo/task"},
		{http.MethodDelete, "/api/v1/task/trash/1"},
		{http.MethodGet, "/readyz"},
	}
	healthy := func(phase string) {
		t.Helper()
		// Bounded: the pool reconnects on the first request that finds
		// its connections gone, so one or two rounds are enough.
		var last answer
		for range 50 {
			if last = call(http.MethodGet, "/readyz"); last.status == http.StatusOK {
				break
			}
		}
		if last.status != http.StatusOK {
			t.Fatalf("%s: /readyz still %d", phase, last.status)
		}
		for _, r := range routes {
			want := http.StatusOK
			if r[0] == http.MethodDelete {
				want = http.StatusNotFound // no entry 1: the database answered
			}
			if got := call(r[0], r[1]); got.status != want {
				t.Errorf("%s: %s %s = %d, want %d", phase, r[0], r[1], got.status, want)
			}
		}
	}
	healthy("before the outage")

	for _, blackhole := range []bool{false, true} {
		phase := map[bool]string{false: "refused", true: "blackholed"}[blackhole]
		logs.Reset()
		proxy.cut(blackhole)

		// Several callers at once, more than the pool holds.
		const rounds = 3
		answers := make(chan answer, rounds*len(routes))
		var wg sync.WaitGroup
		for range rounds {
			for _, r := range routes {
				wg.Go(func() { answers <- call(r[0], r[1]) })
			}
		}
		wg.Wait()
		close(answers)
		n := 0
		for got := range answers {
			n++
			if got.status != http.StatusServiceUnavailable || got.retryAfter == "" {
				t.Errorf("%s: answer %d with Retry-After %q, want 503 with Retry-After", phase, got.status, got.retryAfter)
			}
			// /readyz has no envelope; the API's 503s have their own key.
			if got.key != "" && got.key != httpapi.KeyServiceUnavailable {
				t.Errorf("%s: eKey %q, want %q", phase, got.key, httpapi.KeyServiceUnavailable)
			}
			// Within the deadline (readyTimeout for /readyz), with room for
			// a loaded machine, rather than the 10 s statement timeout or
			// for ever.
			if limit := readyTimeout + time.Second; got.took > limit {
				t.Errorf("%s: answered after %s, want within %s", phase, got.took, limit)
			}
		}
		// One line from the API, one from /readyz: not one a call. The
		// access log leaves 503s to the API's one suppressor.
		if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) > 2 {
			t.Errorf("%s: %d calls logged %d lines, want one each from the API and /readyz:\n%s", phase, n, len(lines), logs.String())
		}
		if strings.Contains(logs.String(), `"status":500`) {
			t.Errorf("%s: a 500 during the outage:\n%s", phase, logs.String())
		}

		proxy.restore()
		healthy("after the " + phase + " outage")
		// The first success logs the end of the outage with the count of
		// 503s left out, rather than the next outage. (Once per
		// OutageLogInterval on this test's fixed clock: the first phase's.)
		if !blackhole && !strings.Contains(logs.String(), `"msg":"service available again"`) {
			t.Errorf("%s: the end of the outage was not logged:\n%s", phase, logs.String())
		}
	}
}
