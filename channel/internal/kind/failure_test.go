package kind_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/kind/kindtest"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// httpKind is one of the kinds that speak HTTP, as its tests reach it.
type httpKind struct {
	kind   kind.Kind
	who    string // how Reasons name the far end
	path   string // address path and query under the far end's URL
	secret func(t *testing.T) string
}

var httpKinds = []httpKind{
	{kind: kindtest.KindWebhook, who: "the webhook", path: "/hook", secret: func(t *testing.T) string {
		s, err := notify.NewWebhookSecret()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{kind: kindtest.KindWeCom, who: "WeCom", path: "/cgi-bin/webhook/send?key=KEY", secret: func(*testing.T) string { return "" }},
	{kind: kindtest.KindDingTalk, who: "DingTalk", path: "/robot/send?access_token=TOKEN", secret: func(*testing.T) string { return "SECabc" }},
}

// TestHTTPFailures answers each kind's request with each kind of failure
// a far end can give, and checks what Send makes of it.
func TestHTTPFailures(t *testing.T) {
	const tenMB = 10 << 20
	big := strings.Repeat("x", tenMB)
	tests := []struct {
		name    string
		handler func(target string) func(http.ResponseWriter, *http.Request, <-chan struct{})
		// want is the failure for kind k; nil for success.
		want func(k httpKind, target string) *notify.Failure
	}{{
		name: "302 redirect is not followed",
		handler: func(target string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				http.Redirect(w, r, target+"/elsewhere", http.StatusFound)
			}
		},
		want: func(k httpKind, target string) *notify.Failure {
			return &notify.Failure{Status: 302, Reason: deskkit.Plain(k.who + " answered a redirect (302 to " + target + "/***), which is not followed: use the final URL")}
		},
	}, {
		// The Location's path and query may carry a token, as the
		// address's may: the reason shows them masked, as a non-admin
		// sees the address.
		name: "308 to a URL with a token",
		handler: func(target string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				w.Header().Set("Location", target+"/moved/t0k3n12345?sig=abc%2Bdef")
				w.WriteHeader(http.StatusPermanentRedirect)
			}
		},
		want: func(k httpKind, target string) *notify.Failure {
			return &notify.Failure{Status: 308, Reason: deskkit.Plain(k.who + " answered a redirect (308 to " + target + "/***), which is not followed: use the final URL")}
		},
	}, {
		name: "308 without Location",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return kindtest.Answer(http.StatusPermanentRedirect, "")
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 308, Reason: deskkit.Plain(k.who + " answered a redirect (308), which is not followed: use the final URL")}
		},
	}, {
		name: "400",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return kindtest.Answer(400, "bad")
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 400, Reason: deskkit.Plain(k.who + " answered 400 Bad Request")}
		},
	}, {
		name: "410",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return kindtest.Answer(410, "")
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 410, Reason: deskkit.Plain(k.who + " answered 410 Gone")}
		},
	}, {
		name: "429 with Retry-After seconds",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusTooManyRequests)
			}
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 429, Reason: deskkit.Plain(k.who + " answered 429 Too Many Requests"), Retryable: true, RetryAfter: 30 * time.Second}
		},
	}, {
		name: "500",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return kindtest.Answer(500, "oops")
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 500, Reason: deskkit.Plain(k.who + " answered 500 Internal Server Error"), Retryable: true}
		},
	}, {
		name: "503 with Retry-After date",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
				w.Header().Set("Retry-After", kindtest.FixedNow.Add(2*time.Minute).Format(http.TimeFormat))
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 503, Reason: deskkit.Plain(k.who + " answered 503 Service Unavailable"), Retryable: true, RetryAfter: 2 * time.Minute}
		},
	}, {
		name: "599, a status without a name",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return kindtest.Answer(599, "")
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 599, Reason: deskkit.Plain(k.who + " answered 599"), Retryable: true}
		},
	}, {
		// Read up to the client's bound: the webhook succeeds on its
		// status, a robot's answer is not its JSON.
		name: "10 MB reply",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return kindtest.Answer(200, big)
		},
		want: func(k httpKind, _ string) *notify.Failure {
			if k.kind == kindtest.KindWebhook {
				return nil
			}
			return &notify.Failure{Status: 200, Reason: deskkit.Plain(k.who + " answered 200 OK but not with a robot's JSON errcode: is the address a " + k.who + " robot?")}
		},
	}, {
		name: "10 MB error reply",
		handler: func(string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
			return kindtest.Answer(502, big)
		},
		want: func(k httpKind, _ string) *notify.Failure {
			return &notify.Failure{Status: 502, Reason: deskkit.Plain(k.who + " answered 502 Bad Gateway"), Retryable: true}
		},
	}}
	for _, k := range httpKinds {
		for _, tt := range tests {
			t.Run(k.kind.Info().Type+"/"+tt.name, func(t *testing.T) {
				target := kindtest.StartFarEnd(t, kindtest.Answer(200, `{"errcode":0}`))
				far := kindtest.StartFarEnd(t, tt.handler(target.URL))
				err := kindtest.NewSender(t).Send(context.Background(),
					kindtest.Dest{Kind: k.kind, Name: "ops", Address: far.URL + k.path, Secret: k.secret(t)}, kindtest.Message())
				want := tt.want(k, target.URL)
				got := kindtest.AsFailure(t, err)
				if diff := cmp.Diff(want, got, kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
				if got != nil && (got.Err != nil || !errors.Is(err, notify.ErrFailed) || errors.Is(err, notify.ErrBlocked) ||
					!errors.Is(err, deskkit.ErrUnavailable)) {
					t.Errorf("Send = %v (Err %v): want a failure of the far end's answer, matching ErrFailed only", err, got.Err)
				}
				if got != nil && got.ClientMessage() != got.Reason.String() {
					t.Errorf("ClientMessage() = %q, want the Reason %q", got.ClientMessage(), got.Reason)
				}
				if n := len(far.Requests()); n != 1 {
					t.Errorf("far end received %d requests, want 1 (no retry inside Send)", n)
				}
				if n := len(target.Requests()); n != 0 {
					t.Errorf("redirect target received %d requests, want 0", n)
				}
			})
		}
	}
}

// TestHTTPUnreachable covers the sends that get no reply at all.
func TestHTTPUnreachable(t *testing.T) {
	for _, k := range httpKinds {
		t.Run(k.kind.Info().Type, func(t *testing.T) {
			target := func(address string) kindtest.Dest {
				return kindtest.Dest{Kind: k.kind, Name: "ops", Address: address + k.path, Secret: k.secret(t)}
			}

			t.Run("a reply that never comes", func(t *testing.T) {
				far := kindtest.StartFarEnd(t, func(_ http.ResponseWriter, r *http.Request, done <-chan struct{}) {
					select {
					case <-r.Context().Done():
					case <-done:
					}
				})
				s := kindtest.NewSender(t)
				const limit = 300 * time.Millisecond
				s.HTTP = safehttp.New(safehttp.Config{AllowPrivateNetworks: true, Timeout: limit})
				start := time.Now()
				err := s.Send(context.Background(), target(far.URL), kindtest.Message())
				took := time.Since(start)
				f := kindtest.AsFailure(t, err)
				if f == nil || !strings.HasPrefix(f.Reason.String(), "timed out after ") || !f.Retryable || f.Status != 0 {
					t.Fatalf("Send = %#v, want a retryable timeout", f)
				}
				d, perr := time.ParseDuration(strings.TrimPrefix(f.Reason.String(), "timed out after "))
				if perr != nil || d < limit || d > took+10*time.Millisecond {
					t.Errorf("Reason %q: want the wait, at least %v and about %v", f.Reason, limit, took)
				}
				if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, notify.ErrFailed) {
					t.Errorf("Send = %v, want it to match context.DeadlineExceeded and ErrFailed", err)
				}
			})

			t.Run("connection refused", func(t *testing.T) {
				err := kindtest.NewSender(t).Send(context.Background(), target(kindtest.ClosedURL(t)), kindtest.Message())
				want := &notify.Failure{Reason: deskkit.Plain("connection refused"), Retryable: true}
				if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
				if !errors.Is(err, notify.ErrFailed) {
					t.Errorf("Send = %v, want it to match ErrFailed", err)
				}
			})

			t.Run("cancelled by the caller", func(t *testing.T) {
				far := kindtest.StartFarEnd(t, kindtest.Answer(200, `{"errcode":0}`))
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				err := kindtest.NewSender(t).Send(ctx, target(far.URL), kindtest.Message())
				want := &notify.Failure{Reason: deskkit.Plain("the send was cancelled"), Retryable: true}
				if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Send = %v, want it to match context.Canceled", err)
				}
			})

			t.Run("host name not found", func(t *testing.T) {
				s := kindtest.NewSender(t)
				s.HTTP = safehttp.New(safehttp.Config{AllowPrivateNetworks: true, Resolver: kindtest.MapResolver{}})
				err := s.Send(context.Background(), target("http://nowhere.test"), kindtest.Message())
				want := &notify.Failure{Reason: deskkit.Plain("the host name nowhere.test was not found")}
				if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
			})

			t.Run("connection closed before an answer", func(t *testing.T) {
				far := kindtest.StartFarEnd(t, func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					_ = conn.Close()
				})
				err := kindtest.NewSender(t).Send(context.Background(), target(far.URL), kindtest.Message())
				want := &notify.Failure{Reason: deskkit.Plain("the connection was closed before an answer"), Retryable: true}
				if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
			})

			t.Run("TLS certificate not trusted", func(t *testing.T) {
				srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
					t.Error("request reached a server whose certificate is not trusted")
				}))
				srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
				t.Cleanup(srv.Close)
				err := kindtest.NewSender(t).Send(context.Background(), target(srv.URL), kindtest.Message())
				want := &notify.Failure{Reason: deskkit.Plain("the server's TLS certificate is not trusted or not valid for its name")}
				if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
			})

			t.Run("https to a plain HTTP server", func(t *testing.T) {
				far := kindtest.StartFarEnd(t, kindtest.Answer(200, `{"errcode":0}`))
				err := kindtest.NewSender(t).Send(context.Background(), target(strings.Replace(far.URL, "http:", "https:", 1)), kindtest.Message())
				want := &notify.Failure{Reason: deskkit.Plain("the server does not speak TLS: use http:// or the right port")}
				if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
			})

			t.Run("resolver failing", func(t *testing.T) {
				s := kindtest.NewSender(t)
				s.HTTP = safehttp.New(safehttp.Config{AllowPrivateNetworks: true, Resolver: failingResolver{}})
				err := s.Send(context.Background(), target("http://flaky.test"), kindtest.Message())
				want := &notify.Failure{Reason: deskkit.Plain("the host name could not be resolved"), Retryable: true}
				if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
					t.Errorf("Send (-want +got):\n%s", diff)
				}
			})

			// Without AllowPrivateNetworks the guard refuses loopback,
			// literal or resolved, before any packet is sent.
			blocked := safehttp.New(safehttp.Config{Resolver: kindtest.MapResolver{
				"hooks.example.test": {netip.MustParseAddr("127.0.0.1")},
				"meta.example.test":  {netip.MustParseAddr("169.254.169.254")},
			}})
			far := kindtest.StartFarEnd(t, kindtest.Answer(200, `{"errcode":0}`))
			port := far.URL[strings.LastIndex(far.URL, ":"):]
			// The reason names the kind of network, and how development
			// opens loopback, never the resolved address.
			const loopback = "address is loopback (this server itself), which channels may not reach" + safehttp.AllowHint
			for _, b := range []struct{ name, address, reason string }{
				{"literal loopback", far.URL, loopback},
				{"name resolving to loopback", "http://hooks.example.test" + port, loopback},
				{"name resolving to cloud metadata", "http://meta.example.test" + port,
					"address is a cloud metadata endpoint (AWS, GCP, Azure, OCI, DigitalOcean, OpenStack instance metadata), which channels may never reach, not even in development"},
				{"short loopback spelling", "http://127.1" + port, loopback},
				{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]" + port, loopback},
			} {
				address, reason := b.address, b.reason
				t.Run("blocked: "+b.name, func(t *testing.T) {
					s := kindtest.NewSender(t)
					s.HTTP = blocked
					err := s.Send(context.Background(), target(address), kindtest.Message())
					want := &notify.Failure{Reason: deskkit.Plain(reason)}
					if diff := cmp.Diff(want, kindtest.AsFailure(t, err), kindtest.IgnoreErr); diff != "" {
						t.Errorf("Send (-want +got):\n%s", diff)
					}
					if !errors.Is(err, notify.ErrBlocked) || !errors.Is(err, safehttp.ErrBlocked) || !errors.Is(err, deskkit.ErrInvalid) ||
						errors.Is(err, notify.ErrFailed) || errors.Is(err, deskkit.ErrUnavailable) {
						t.Errorf("Send = %v, want it to match ErrBlocked and deskkit.ErrInvalid only", err)
					}
					if n := len(far.Requests()); n != 0 {
						t.Errorf("the far end received %d requests, want 0", n)
					}
				})
			}
		})
	}
}

func TestFailureError(t *testing.T) {
	under := fmt.Errorf("dial: %w", errors.New("boom"))
	f := &notify.Failure{Reason: deskkit.Plain("connection refused"), Err: under}
	if got, want := f.Error(), "notify: connection refused: dial: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(f, under) {
		t.Error("a Failure does not unwrap to its Err")
	}
	f = &notify.Failure{Reason: deskkit.Plain("the webhook answered 410 Gone"), Status: 410}
	if got, want := f.Error(), "notify: the webhook answered 410 Gone"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// failingResolver answers every lookup with a temporary DNS failure.
type failingResolver struct{}

func (failingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
}

// A relative Location is resolved against the request's URL before it is
// masked: the reason says which scheme and host, never the path or the
// query, which may carry a token.
func TestRedirectRelativeLocation(t *testing.T) {
	far := kindtest.StartFarEnd(t, func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.Header().Set("Location", "/moved/t0k3n12345?sig=abc%2Bdef")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	err := kindtest.NewSender(t).Send(context.Background(), kindtest.Dest{Kind: kindtest.KindWebhook, Name: "ops", Address: far.URL + "/hook?token=s3cr3t", Secret: httpKinds[0].secret(t)}, kindtest.Message())
	f := kindtest.AsFailure(t, err)
	want := "the webhook answered a redirect (307 to " + far.URL + "/***), which is not followed: use the final URL"
	if f == nil || f.Reason.String() != want {
		t.Fatalf("Send = %#v, want the reason %q", f, want)
	}
}

func TestMaskURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://moved.invalid/moved/t0k3n12345?sig=abc%2Bdef": "https://moved.invalid/***",
		"http://127.0.0.1:8080":                                "http://127.0.0.1:8080/***",
		"https://user:pass@host.example/x":                     "https://host.example/***",
		"HTTPS://Host.Example:443/":                            "https://Host.Example:443/***",
		"/relative/t0k3n":                                      "***",
		"not a url at all":                                     "***",
		"http://[::1]:99/x?y=z":                                "http://[::1]:99/***",
		"https://h.example/%zz":                                "***",
	} {
		if got := notify.MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
}
