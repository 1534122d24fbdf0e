package console

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// via sends a request to the console's server over loopback with the
// headers h, as a proxy at 127.0.0.1 (or a client there) would, following
// no redirect.
func (f *fixture) via(method, path string, form url.Values, h http.Header, cookies ...*http.Cookie) answer {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	client := f.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{res, string(b)}
}

func cookieNamed(a answer, name string) *http.Cookie {
	for _, c := range a.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// signInVia signs in with token through the proxy headers h and returns
// the answer.
func (f *fixture) signInVia(token string, h http.Header) answer {
	f.t.Helper()
	return f.via(http.MethodPost, "/console/signin", url.Values{"token": {token}, "next": {"/console/"}}, h)
}

// TestBehindTrustedProxy: behind a TLS-terminating proxy listed in
// TrustedProxies, the session cookie is Secure and named __Host- when the
// proxy says https (X-Forwarded-Proto or Forwarded proto=), so are the
// language and flash cookies, and sign-in attempts are counted per client
// address the proxy gives, not all under the proxy's. Real requests over
// loopback, the proxy at 127.0.0.1. Both databases.
func TestBehindTrustedProxy(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.Secret, c.TrustedProxies = testSecret, []string{"127.0.0.1", "::1"} }, false)
		https := http.Header{"X-Forwarded-For": {"198.51.100.1"}, "X-Forwarded-Proto": {"https"}}
		a := f.signInVia(f.token, https)
		ck := cookieNamed(a, "__Host-deskkit-console")
		if a.StatusCode != http.StatusSeeOther || ck == nil || !ck.Secure || !ck.HttpOnly {
			t.Fatalf("sign-in through an https proxy: %d, session cookie %+v, cookies %v", a.StatusCode, ck, a.Cookies())
		}
		if home := f.via(http.MethodGet, "/console/", nil, https, ck); home.StatusCode != http.StatusOK {
			t.Errorf("home with the __Host- cookie through the proxy: %d", home.StatusCode)
		}
		// Forwarded, RFC 7239, and a portal link.
		fwd := http.Header{"Forwarded": {`for="[2001:db8::7]:4711";proto=https;by=_proxy`}}
		p := f.via(http.MethodPost, "/console/portal", url.Values{"t": {f.mint(9)}}, fwd)
		if ck := cookieNamed(p, "__Host-deskkit-console"); p.StatusCode != http.StatusSeeOther || ck == nil || !ck.Secure {
			t.Errorf("portal link through Forwarded proto=https: %d, cookies %v", p.StatusCode, p.Cookies())
		}
		// The language switch's cookie and a flash are Secure too.
		lang := f.via(http.MethodGet, "/console/signin?lang=zh-CN", nil, https)
		if ck := cookieNamed(lang, LanguageCookie); ck == nil || !ck.Secure {
			t.Errorf("language cookie through the https proxy: %v", lang.Cookies())
		}
		out := f.via(http.MethodPost, "/console/signout", url.Values{"csrf": {f.csrfVia(ck, https)}}, https, ck)
		if flash := cookieNamed(out, "__Host-deskkit-flash"); out.StatusCode != http.StatusSeeOther || flash == nil || !flash.Secure {
			t.Errorf("sign-out's flash through the https proxy: %d %v", out.StatusCode, out.Cookies())
		}
		// Through the proxy over plain http: no Secure cookie.
		plain := f.signInVia(f.token, http.Header{"X-Forwarded-For": {"198.51.100.1"}, "X-Forwarded-Proto": {"http"}})
		if ck := cookieNamed(plain, "deskkit-console"); ck == nil || ck.Secure {
			t.Errorf("sign-in through the proxy over http: %v", plain.Cookies())
		}

		// The limits count each client the proxy names.
		for i := range 20 {
			if a := f.signInVia("wrong", http.Header{"X-Forwarded-For": {"198.51.100.20"}}); a.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong token %d: %d", i+1, a.StatusCode)
			}
		}
		if a := f.signInVia("wrong", http.Header{"X-Forwarded-For": {"198.51.100.20"}}); a.StatusCode != http.StatusTooManyRequests {
			t.Errorf("21st attempt of one client through the proxy: %d, want 429", a.StatusCode)
		}
		// Another client behind the same proxy is not refused; its entry
		// is the rightmost untrusted one, what it wrote before is not read.
		if a := f.signInVia(f.token, http.Header{"X-Forwarded-For": {"198.51.100.20, 198.51.100.21, 127.0.0.1"}}); a.StatusCode != http.StatusSeeOther {
			t.Errorf("another client behind the proxy: %d, want 303", a.StatusCode)
		}
		// A client that forges Forwarded while the proxy writes
		// X-Forwarded-For is counted under the proxy's address, not under
		// the address it names (nor its own): its attempts never spend
		// another client's.
		for range 20 {
			f.signInVia("wrong", http.Header{"X-Forwarded-For": {"198.51.100.30"}, "Forwarded": {"for=198.51.100.31"}})
		}
		if a := f.signInVia("wrong", http.Header{"X-Forwarded-For": {"198.51.100.31"}}); a.StatusCode != http.StatusUnauthorized {
			t.Errorf("the client a forger named: %d, want 401", a.StatusCode)
		}
		if a := f.signInVia("wrong", http.Header{"X-Forwarded-For": {"198.51.100.30"}}); a.StatusCode != http.StatusUnauthorized {
			t.Errorf("the forger's own address: %d, want 401", a.StatusCode)
		}
	})
}

// csrfVia reads the CSRF token of a signed-in page through headers h.
func (f *fixture) csrfVia(ck *http.Cookie, h http.Header) string {
	f.t.Helper()
	a := f.via(http.MethodGet, "/console/", nil, h, ck)
	m := csrfField.FindStringSubmatch(a.body)
	if m == nil {
		f.t.Fatalf("no CSRF token (%d)", a.StatusCode)
	}
	return m[1]
}

// TestSpoofedProxyHeaders: from a peer that is not a trusted proxy,
// Forwarded, X-Forwarded-For and X-Forwarded-Proto are not read: a client
// that writes another address in each attempt is counted under its own,
// and one that claims https gets no __Host- cookie. Both databases.
func TestSpoofedProxyHeaders(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, func(c *Config) { c.TrustedProxies = []string{"10.0.0.0/8"} }, false)
		a := f.signInVia(f.token, http.Header{"X-Forwarded-Proto": {"https"}, "Forwarded": {"proto=https"}})
		if ck := cookieNamed(a, "deskkit-console"); a.StatusCode != http.StatusSeeOther || ck == nil || ck.Secure {
			t.Errorf("https claimed by a client: %d %v", a.StatusCode, a.Cookies())
		}
		for i := range 20 { // the valid sign-in above cost the address nothing
			spoof := http.Header{
				"X-Forwarded-For": {"203.0.113." + string(rune('0'+i%10)) + ", 10.0.0.1"},
				"Forwarded":       {"for=203.0.113.1" + string(rune('0'+i%10))},
			}
			if a := f.signInVia("wrong", spoof); a.StatusCode != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d", i+1, a.StatusCode)
			}
		}
		if a := f.signInVia("wrong", http.Header{"X-Forwarded-For": {"192.0.2.99"}}); a.StatusCode != http.StatusTooManyRequests {
			t.Errorf("21st attempt with yet another spoofed address: %d, want 429", a.StatusCode)
		}
	})
}
