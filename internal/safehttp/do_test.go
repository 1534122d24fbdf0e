package safehttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskkit/deskkit"
)

// fakeResolver answers from a table and counts lookups; it never sends a
// packet.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr // successive answers per host; the last repeats
	calls   map[string]int
}

var _ Resolver = (*fakeResolver)(nil)

func newResolver(host string, answers ...[]netip.Addr) *fakeResolver {
	return &fakeResolver{answers: map[string][][]netip.Addr{host: answers}, calls: map[string]int{}}
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	as, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := r.calls[host]
	r.calls[host]++
	if i >= len(as) {
		i = len(as) - 1
	}
	return as[i], nil
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// countingListener is a TCP listener on 127.0.0.1 that reports the remote
// address of each connection it accepts, in order, and closes it.
type countingListener struct {
	ln       net.Listener
	accepted chan string
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{ln: ln, accepted: make(chan string, 100)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			cl.accepted <- conn.RemoteAddr().String()
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return cl
}

func (cl *countingListener) port() int { return cl.ln.Addr().(*net.TCPAddr).Port }

// assertNoneAccepted proves that no connection reached the listener: it
// connects once itself and, since a listener accepts in order, finds its
// own connection to be the first accepted.
func (cl *countingListener) assertNoneAccepted(t *testing.T) {
	t.Helper()
	conn, err := net.Dial("tcp4", cl.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	own := conn.LocalAddr().String()
	conn.Close()
	for from := range cl.accepted {
		if from == own {
			return
		}
		t.Errorf("the listener accepted a connection from %s", from)
	}
}

func newRequest(t *testing.T, method, rawURL string, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, rawURL, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// doWithin runs c.Do(req) and fails the test if it has not returned within
// bound, so that a broken timeout fails fast instead of hanging the run.
func doWithin(t *testing.T, c *Client, req *http.Request, bound time.Duration) (*Reply, error) {
	t.Helper()
	type result struct {
		reply *Reply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := c.Do(req)
		done <- result{reply, err}
	}()
	select {
	case r := <-done:
		return r.reply, r.err
	case <-time.After(bound):
		t.Fatalf("Do(%s) still running after %s", req.URL, bound)
		return nil, nil
	}
}

// serverPort is the port of an httptest server.
func serverPort(t *testing.T, srv *httptest.Server) int {
	t.Helper()
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

func TestDoRefusesLiteralSpellingsBeforeConnecting(t *testing.T) {
	cl := newCountingListener(t)
	c := New(Config{Resolver: newResolver("unused.test")})
	p := cl.port()
	for _, u := range []string{
		"http://127.0.0.1:%d/",
		"http://127.1:%d/",
		"http://127.0.1:%d/",
		"http://2130706433:%d/",
		"http://0x7f000001:%d/",
		"http://0x7f.0.0.1:%d/",
		"http://0177.0.0.1:%d/",
		"http://0177.1:%d/",
		"http://127.0.0.1.:%d/",
		"http://[::ffff:127.0.0.1]:%d/",
		"http://[::ffff:7f00:1]:%d/",
		"http://[::1]:%d/",
		"http://localhost:%d/",
		"http://LOCALHOST.:%d/",
		"http://hook.localhost:%d/",
		"https://127.1:%d/",
	} {
		rawURL := fmt.Sprintf(u, p)
		reply, err := c.Do(newRequest(t, http.MethodPost, rawURL, "{}"))
		var be *BlockedError
		if !errors.As(err, &be) || reply != nil {
			t.Errorf("Do(%s) = %v, %v; want a *BlockedError", rawURL, reply, err)
		}
	}
	cl.assertNoneAccepted(t)
}

func TestDoRefusesNamesResolvingToBlockedAddresses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		private bool
		answer  []netip.Addr
		want    string // the address the refusal names
	}{
		{"private", false, addrs("10.0.0.1"), "10.0.0.1"},
		{"loopback", false, addrs("127.0.0.1"), "127.0.0.1"},
		{"mapped loopback", false, addrs("::ffff:127.0.0.1"), "127.0.0.1"},
		{"IPv6 loopback", false, addrs("::1"), "::1"},
		{"metadata", false, addrs("169.254.169.254"), "169.254.169.254"},
		{"metadata with private allowed", true, addrs("169.254.169.254"), "169.254.169.254"},
		{"IPv6 metadata with private allowed", true, addrs("fd00:ec2::254"), "fd00:ec2::254"},
		{"Alibaba metadata with private allowed", true, addrs("100.100.100.200"), "100.100.100.200"},
		{"Azure wireserver", false, addrs("168.63.129.16"), "168.63.129.16"},
		{"NAT64 loopback", false, addrs("64:ff9b::7f00:1"), "64:ff9b::7f00:1"},
		{"all blocked", false, addrs("10.0.0.1", "127.0.0.1", "::1", "192.168.1.1"), "10.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dialled []netip.AddrPort
			c := New(Config{AllowPrivateNetworks: tc.private, Resolver: newResolver("evil.test", tc.answer)})
			c.testConnect = func(_ context.Context, ap netip.AddrPort) (net.Conn, error) {
				dialled = append(dialled, ap)
				return nil, errors.New("test: not dialling")
			}
			_, err := c.Do(newRequest(t, http.MethodPost, "http://evil.test:8080/hook?key=SECRET", "{}"))
			var be *BlockedError
			if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) {
				t.Fatalf("Do = %v, want a *BlockedError", err)
			}
			if be.Host != "evil.test" || be.Addr != netip.MustParseAddr(tc.want) {
				t.Errorf("BlockedError{Host: %q, Addr: %s}, want evil.test, %s", be.Host, be.Addr, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error text %q holds the URL's query", err)
			}
			if len(dialled) != 0 {
				t.Errorf("dialled %v", dialled)
			}
		})
	}
}

// A name with a public and a blocked address: only the public one is
// dialled, and the test stands in for it with a loopback server rather
// than sending a packet to it.
func TestDoDialsOnlyAllowedAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	for _, answer := range [][]netip.Addr{
		addrs("10.0.0.1", "8.8.8.8", "127.0.0.1"),
		addrs("8.8.8.8", "169.254.169.254"),
		addrs("::1", "::ffff:8.8.8.8"),
	} {
		var dialled []string
		c := New(Config{Resolver: newResolver("mixed.test", answer)})
		c.testConnect = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
			dialled = append(dialled, ap.String())
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		}
		reply, err := c.Do(newRequest(t, http.MethodGet, "http://mixed.test:9443/", ""))
		if err != nil {
			t.Fatalf("%v: Do: %v", answer, err)
		}
		if string(reply.Body) != "ok" {
			t.Errorf("%v: body %q", answer, reply.Body)
		}
		if len(dialled) != 1 || dialled[0] != "8.8.8.8:9443" {
			t.Errorf("%v: dialled %v, want only 8.8.8.8:9443", answer, dialled)
		}
	}
}

// Every new connection resolves and checks again, so a name that turns
// into 127.0.0.1 after a first, harmless answer (DNS rebinding) is refused.
func TestDoRebindingRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	res := newResolver("rebind.test", addrs("8.8.8.8"), addrs("127.0.0.1"))
	c := New(Config{Resolver: res})
	var dialled []string
	c.testConnect = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		dialled = append(dialled, ap.String())
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}
	if _, err := c.Do(newRequest(t, http.MethodGet, "http://rebind.test/", "")); err != nil {
		t.Fatalf("first Do: %v", err)
	}
	_, err := c.Do(newRequest(t, http.MethodGet, "http://rebind.test/", ""))
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("second Do = %v, want blocked", err)
	}
	if len(dialled) != 1 || dialled[0] != "8.8.8.8:80" {
		t.Errorf("dialled %v, want only 8.8.8.8:80", dialled)
	}
}

// The socket-level check is wired into the real dialer: connect with a
// blocked address (skipping the checks before it) never connects.
func TestConnectChecksAtTheSocket(t *testing.T) {
	cl := newCountingListener(t)
	c := New(Config{})
	ap := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cl.port()))
	conn, err := c.connect(t.Context(), ap)
	if !errors.Is(err, ErrBlocked) {
		if conn != nil {
			conn.Close()
		}
		t.Fatalf("connect(%s) = %v, want blocked", ap, err)
	}
	cl.assertNoneAccepted(t)
}

func TestDoUnknownName(t *testing.T) {
	c := New(Config{Resolver: newResolver("known.test", addrs("8.8.8.8"))})
	_, err := c.Do(newRequest(t, http.MethodGet, "http://unknown.test/", ""))
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || errors.Is(err, ErrBlocked) {
		t.Errorf("Do = %v, want the resolver's *net.DNSError", err)
	}
}

func TestDoBadURL(t *testing.T) {
	c := loose(Config{})
	for _, u := range []string{"ftp://127.0.0.1/x", "file:///etc/passwd", "/relative", "http:///nohost", "http://:80/"} {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		req := &http.Request{Method: http.MethodGet, URL: parsed, Header: http.Header{}}
		_, err = c.Do(req)
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "url" {
			t.Errorf("Do(%s) = %v, want an InputError for url", u, err)
		}
	}
}

// loose returns a client for loopback test servers. Unless the test gives
// one, its resolver knows no name, so no test can send a DNS query.
func loose(cfg Config) *Client {
	cfg.AllowPrivateNetworks = true
	if cfg.Resolver == nil {
		cfg.Resolver = &fakeResolver{}
	}
	return New(cfg)
}

func TestDoReachesLoopbackWhenAllowed(t *testing.T) {
	type seen struct {
		method, path, ua, ct, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.UserAgent(), r.Header.Get("Content-Type"), string(b)}
		w.Header().Set("X-Answer", "42")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"errcode":0}`)
	}))
	defer srv.Close()
	c := loose(Config{})
	req := newRequest(t, http.MethodPost, srv.URL+"/hook?key=k", `{"a":1}`)
	req.Header.Set("Content-Type", "application/json")
	reply, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Status != http.StatusAccepted || string(reply.Body) != `{"errcode":0}` || reply.Truncated || reply.Header.Get("X-Answer") != "42" {
		t.Errorf("reply %+v", reply)
	}
	s := <-got
	want := seen{"POST", "/hook?key=k", "deskkit", "application/json", `{"a":1}`}
	if s != want {
		t.Errorf("server saw %+v, want %+v", s, want)
	}

	// Other private spellings of the same server are reached too.
	port := serverPort(t, srv)
	for _, u := range []string{"http://127.1:%d/", "http://2130706433:%d/", "http://[::ffff:127.0.0.1]:%d/", "http://localhost:%d/"} {
		rawURL := fmt.Sprintf(u, port)
		if _, err := c.Do(newRequest(t, http.MethodPost, rawURL, "{}")); err != nil {
			t.Errorf("Do(%s): %v", rawURL, err)
			continue
		}
		if s := <-got; s.path != "/" {
			t.Errorf("Do(%s): server saw %+v", rawURL, s)
		}
	}
}

func TestDoUserAgent(t *testing.T) {
	ua := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ua <- r.UserAgent() }))
	defer srv.Close()

	if _, err := loose(Config{UserAgent: "acme-notifier/1"}).Do(newRequest(t, http.MethodGet, srv.URL, "")); err != nil {
		t.Fatal(err)
	}
	if got := <-ua; got != "acme-notifier/1" {
		t.Errorf("User-Agent %q, want the configured one", got)
	}
	req := newRequest(t, http.MethodGet, srv.URL, "")
	req.Header.Set("User-Agent", "caller/2")
	if _, err := loose(Config{}).Do(req); err != nil {
		t.Fatal(err)
	}
	if got := <-ua; got != "caller/2" {
		t.Errorf("User-Agent %q, want the request's own", got)
	}
}

func TestDoDoesNotFollowRedirects(t *testing.T) {
	var targetHits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { targetHits.Add(1) })
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		reply, err := loose(Config{}).Do(newRequest(t, method, srv.URL+"/hook", "{}"))
		if err != nil {
			t.Fatal(err)
		}
		if reply.Status != http.StatusTemporaryRedirect || reply.Header.Get("Location") != "/target" {
			t.Errorf("%s: reply %d Location %q, want 307 /target", method, reply.Status, reply.Header.Get("Location"))
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the redirect target was hit %d times", n)
	}
}

func TestDoTruncatesLongReplies(t *testing.T) {
	const tenMB = 10 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(tenMB))
		for i := 0; i < tenMB/len(chunk); i++ {
			if _, err := w.Write(chunk); err != nil {
				return // the client hung up, as it should
			}
		}
	}))
	defer srv.Close()
	reply, err := loose(Config{}).Do(newRequest(t, http.MethodGet, srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Truncated || len(reply.Body) != DefaultMaxReplyBytes || !bytes.Equal(reply.Body, chunk) {
		t.Errorf("reply of %d bytes, truncated %v; want the first %d bytes and Truncated", len(reply.Body), reply.Truncated, DefaultMaxReplyBytes)
	}
}

// A server that sends 1 MB of a 10 MB reply and then stalls: Do returns
// with what it needs and does not wait for the rest (if it did, it would
// fail with a timeout).
func TestDoDoesNotReadTheRest(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(10<<20))
		w.Write(bytes.Repeat([]byte("x"), 1<<20))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	reply, err := doWithin(t, loose(Config{Timeout: 5 * time.Second}), newRequest(t, http.MethodGet, srv.URL, ""), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Truncated || len(reply.Body) != DefaultMaxReplyBytes {
		t.Errorf("reply of %d bytes, truncated %v", len(reply.Body), reply.Truncated)
	}
}

func TestDoMaxReplyBytesEdge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Query().Get("say"))
	}))
	defer srv.Close()
	c := loose(Config{MaxReplyBytes: 5})
	for _, tc := range []struct {
		say, body string
		truncated bool
	}{
		{"", "", false},
		{"1234", "1234", false},
		{"12345", "12345", false},
		{"123456", "12345", true},
	} {
		reply, err := c.Do(newRequest(t, http.MethodGet, srv.URL+"/?say="+tc.say, ""))
		if err != nil {
			t.Fatal(err)
		}
		if string(reply.Body) != tc.body || reply.Truncated != tc.truncated {
			t.Errorf("reply to %q: %q truncated %v, want %q %v", tc.say, reply.Body, reply.Truncated, tc.body, tc.truncated)
		}
	}
}

// stallServer answers after the given part of the exchange and then never
// goes on, until the test ends.
func stallServer(t *testing.T, sendHeaders bool) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sendHeaders {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv
}

func TestDoTimeout(t *testing.T) {
	// A TCP server that accepts and never says anything, not even HTTP.
	silent, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			held.Add(1)
			go func() {
				defer held.Done()
				<-done
				conn.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		silent.Close()
		close(done)
		held.Wait()
	})

	const timeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name, url, wantText string
	}{
		{"no answer", stallServer(t, false).URL + "/?key=SECRET", "no answer within 200ms"},
		{"headers then stall", stallServer(t, true).URL + "/?key=SECRET", "status 200"},
		{"silent TCP", "http://" + silent.Addr().String() + "/?key=SECRET", "no answer within 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			reply, err := doWithin(t, loose(Config{Timeout: timeout}), newRequest(t, http.MethodPost, tc.url, "{}"), 10*time.Second)
			elapsed := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) || reply != nil {
				t.Fatalf("Do = %v, %v; want DeadlineExceeded", reply, err)
			}
			if elapsed < timeout || elapsed > 5*time.Second {
				t.Errorf("Do returned after %s, want about %s", elapsed, timeout)
			}
			if !strings.Contains(err.Error(), tc.wantText) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error text %q: want %q in it and no query", err, tc.wantText)
			}
		})
	}
}

func TestDoHonoursRequestContext(t *testing.T) {
	srv := stallServer(t, false)
	c := loose(Config{}) // the 10 s default: the request's deadline comes first

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req := newRequest(t, http.MethodGet, srv.URL, "").WithContext(ctx)
	_, err := doWithin(t, c, req, 5*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within") {
		t.Errorf("Do with an expiring context = %v, want DeadlineExceeded saying so", err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	req = newRequest(t, http.MethodGet, srv.URL, "").WithContext(ctx)
	if _, err := doWithin(t, c, req, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a cancelled context = %v, want Canceled", err)
	}
}

func TestDoConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = loose(Config{}).Do(newRequest(t, http.MethodPost, "http://user:pw@"+addr+"/services/PATHTOKEN/send?access_token=SECRET#frag", "{}"))
	if err == nil || errors.Is(err, ErrBlocked) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do = %v, want a transport error", err)
	}
	text := err.Error()
	if !strings.Contains(text, "http://"+addr) || strings.Contains(text, "SECRET") || strings.Contains(text, "pw") || strings.Contains(text, "PATHTOKEN") {
		t.Errorf("error text %q: want the scheme and host alone, without path, query and password", text)
	}
	if !strings.Contains(text, "refused") {
		t.Errorf("error text %q does not say the connection was refused", text)
	}
}

func TestDoIgnoresProxyEnvironment(t *testing.T) {
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "from the proxy")
	}))
	defer proxy.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "from the target")
	}))
	defer target.Close()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	// A name rather than 127.0.0.1, which proxy settings always skip.
	c := loose(Config{Resolver: newResolver("hooks.test", addrs("127.0.0.1"))})
	if tr := c.http.Transport.(*http.Transport); tr.Proxy != nil {
		t.Error("the transport has a Proxy function")
	}
	rawURL := fmt.Sprintf("http://hooks.test:%d/", serverPort(t, target))
	reply, err := c.Do(newRequest(t, http.MethodGet, rawURL, ""))
	if err != nil {
		t.Fatal(err)
	}
	if string(reply.Body) != "from the target" || proxied.Load() != 0 {
		t.Errorf("body %q, %d proxied requests; want the target's answer and none", reply.Body, proxied.Load())
	}
}

func TestDoHTTPS(t *testing.T) {
	proto := make(chan int, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto <- r.ProtoMajor
		io.WriteString(w, "secure")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := loose(Config{})
	// Trust the test server's certificate; nothing else changes.
	c.http.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	reply, err := c.Do(newRequest(t, http.MethodPost, srv.URL, "{}"))
	if err != nil {
		t.Fatal(err)
	}
	if string(reply.Body) != "secure" {
		t.Errorf("body %q", reply.Body)
	}
	if p := <-proto; p != 2 {
		t.Errorf("HTTP/%d, want HTTP/2 through the guarded dialer", p)
	}
}

func TestDoConcurrent(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, r.URL.Query().Get("n"))
	}))
	defer srv.Close()
	c := loose(Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/?n=%d", srv.URL, i), nil)
			if err != nil {
				errs <- err
				return
			}
			reply, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			if string(reply.Body) != fmt.Sprint(i) {
				errs <- fmt.Errorf("request %d got %q", i, reply.Body)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := hits.Load(); n != 32 {
		t.Errorf("%d requests reached the server, want 32", n)
	}
}

// A first address that never completes a connection gets its share of the
// timeout, not all of it: the second address is still tried in time.
func TestDoSharesDialTime(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := New(Config{Resolver: newResolver("two.test", addrs("8.8.8.8", "8.8.4.4")), Timeout: 400 * time.Millisecond})
	c.minDialShare = 10 * time.Millisecond
	var dialled []string
	c.testConnect = func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		dialled = append(dialled, ap.String())
		if ap.Addr() == netip.MustParseAddr("8.8.8.8") {
			<-ctx.Done() // a host that drops every packet
			return nil, ctx.Err()
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}
	reply, err := c.Do(newRequest(t, http.MethodGet, "http://two.test/", ""))
	if err != nil || string(reply.Body) != "ok" {
		t.Fatalf("Do = %v, %v; want the second address's answer", reply, err)
	}
	if want := []string{"8.8.8.8:80", "8.8.4.4:80"}; !slices.Equal(dialled, want) {
		t.Errorf("dialled %v, want %v", dialled, want)
	}
}
