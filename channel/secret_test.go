package channel_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/notify"
)

// syncBuffer is a log's output, written by several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hookRequest is one request a webhook receiver got, as it got it.
type hookRequest struct {
	header http.Header
	body   []byte
}

// hookReceiver is a webhook's far end that keeps every request.
type hookReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []hookRequest
}

func startHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.reqs = append(h.reqs, hookRequest{r.Header.Clone(), b})
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.Close)
	return h
}

// since returns the requests from the n-th on.
func (h *hookReceiver) since(n int) []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.reqs[n:]...)
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reqs)
}

// check is one request verified with one secret, as a receiver does, and
// whether it must verify.
type check struct {
	phase  string
	req    hookRequest
	secret string // an HMAC secret (whsec_), or an ed25519 public key (whpk_)
	ok     bool
}

// hmac reports whether c checks an HMAC signature ("v1,") rather than an
// ed25519 one ("v1a,").
func (c check) hmac() bool { return strings.HasPrefix(c.secret, "whsec_") }

// verifyV1a verifies a request as a receiver of Standard Webhooks'
// asymmetric signatures does, written from the specification: the
// public key is "whpk_" and the base64 of an ed25519 public key; the
// signed content is webhook-id, ".", webhook-timestamp, "." and the body;
// webhook-signature holds space-separated "version,signature" pairs, of
// which the "v1a" ones are base64 ed25519 signatures, and one that
// verifies is enough; a timestamp more than 5 minutes from now is
// refused.
func verifyV1a(publicKey string, h http.Header, body []byte, now time.Time) error {
	raw, ok := strings.CutPrefix(publicKey, "whpk_")
	if !ok {
		return errors.New("not a whpk_ key")
	}
	pub, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return errors.New("not an ed25519 public key")
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return errors.New("missing headers")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp out of tolerance")
	}
	msg := []byte(id + "." + ts + "." + string(body))
	for _, part := range strings.Fields(h.Get("webhook-signature")) {
		version, sig, _ := strings.Cut(part, ",")
		if version != "v1a" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && ed25519.Verify(ed25519.PublicKey(pub), msg, b) {
			return nil
		}
	}
	return errors.New("No matching signature found")
}

// verifyInGo verifies checks with the Go Standard Webhooks library (HMAC)
// and verifyV1a (ed25519).
func verifyInGo(t *testing.T, checks []check) {
	t.Helper()
	for _, c := range checks {
		var err error
		if c.hmac() {
			wh, werr := standardwebhooks.NewWebhook(c.secret)
			if werr != nil {
				t.Fatal(werr)
			}
			err = wh.Verify(c.req.body, c.req.header)
		} else {
			err = verifyV1a(c.secret, c.req.header, c.req.body, time.Now())
		}
		if (err == nil) != c.ok {
			t.Errorf("%s: Go says %v with %.12s..., want ok=%v", c.phase, err, c.secret, c.ok)
		}
	}
}

// TestSecretRotation verifies every request of a webhook through a
// rotation as receivers do, with the Go and the npm Standard Webhooks
// libraries: before it, with the first secret; during the overlap, with
// each of the two secrets (both signatures, the new one first); after it,
// with the new secret alone; and after a rotation given its secret with no
// overlap, with that one alone. Deliveries, tests and the registry's own
// events alike. The clock is the real time, so that the libraries' check
// of the timestamp holds (the overlap is two minutes; the libraries allow
// five).
func TestSecretRotation(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := channel.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
		var logs syncBuffer
		r, err := channel.New(db, sendSecret, nil, &channel.Config{
			AllowPrivateNetworks: true, Now: clock.Now, RetrySchedule: shortSchedule,
			Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RegisterEventTypes(hostTypes...); err != nil {
			t.Fatal(err)
		}
		ann := deskkit.Principal{UserID: 1, TenantID: 10, Admin: true}
		hook := startHookReceiver(t)
		added, err := r.Add(ctx, ann, channel.Input{Type: "WEBHOOK", Name: "ops", Address: hook.URL + "/hook"})
		if err != nil {
			t.Fatal(err)
		}
		first := added.Secret
		var checks []check
		// deliver publishes an event and runs the worker, and tests the
		// channel too.
		deliver := func() []hookRequest {
			t.Helper()
			n := hook.count()
			if err := r.Publish(ctx, db, 10, newEvent("task.trashed")); err != nil {
				t.Fatal(err)
			}
			for {
				k, err := channel.RunOnce(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if k == 0 {
					break
				}
			}
			if _, err := r.Test(ctx, ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "ops", Address: hook.URL + "/hook"}); err != nil {
				t.Fatalf("test: %v", err)
			}
			reqs := hook.since(n)
			if len(reqs) < 2 {
				t.Fatalf("%d requests, want a delivery and a test at least", len(reqs))
			}
			return reqs
		}
		expect := func(phase string, reqs []hookRequest, signatures int, secrets map[string]bool) {
			t.Helper()
			for _, q := range reqs {
				if n := len(strings.Fields(q.header.Get("webhook-signature"))); n != signatures {
					t.Errorf("%s: %d signatures (%q), want %d", phase, n, q.header.Get("webhook-signature"), signatures)
				}
				for s, ok := range secrets {
					checks = append(checks, check{phase, q, s, ok})
				}
			}
		}

		expect("before the rotation", deliver(), 1, map[string]bool{first: true})

		two := 2 * time.Minute
		rotated, err := r.RotateSecret(ctx, ann, added.ID, channel.SecretRotation{Overlap: &two})
		if err != nil {
			t.Fatal(err)
		}
		second := rotated.Secret
		if _, err := notify.ParseWebhookSecret(second); err != nil || second == first {
			t.Fatalf("rotated to %q (%v): want a new whsec_ secret", second, err)
		}
		until := clock.Now().Add(two)
		if rotated.PreviousSecretUntil == nil || !rotated.PreviousSecretUntil.Equal(until) || rotated.ChannelID != added.ID {
			t.Errorf("rotation's answer: %+v, want the old secret until %v", rotated, until)
		}
		if got, err := r.Get(ctx, ann, added.ID); err != nil || got.PreviousSecretUntil == nil || !got.PreviousSecretUntil.Equal(until) {
			t.Errorf("get during the overlap: %+v, %v; want previousSecretUntil %v", got, err, until)
		}
		during := deliver()
		// Both signatures, the new one first: each verifies with its own
		// secret alone.
		sigs := strings.Fields(during[0].header.Get("webhook-signature"))
		for i, s := range []string{second, first} {
			h := during[0].header.Clone()
			h.Set("webhook-signature", sigs[min(i, len(sigs)-1)])
			wh, _ := standardwebhooks.NewWebhook(s)
			if err := wh.Verify(during[0].body, h); err != nil {
				t.Errorf("signature %d of the overlap does not verify with the %s secret: %v", i+1, []string{"new", "old"}[i], err)
			}
		}
		other, _ := notify.NewWebhookSecret()
		expect("during the overlap", during, 2, map[string]bool{first: true, second: true, other: false})

		revealed, err := r.RevealSecret(ctx, ann, added.ID)
		if err != nil || revealed.Secret != second || revealed.PreviousSecretUntil == nil {
			t.Errorf("reveal during the overlap: %+v, %v; want the new secret and the overlap's end", revealed, err)
		}

		clock.Advance(two + time.Second)
		if got, _ := r.Get(ctx, ann, added.ID); got.PreviousSecretUntil != nil {
			t.Errorf("previousSecretUntil %v after the overlap", got.PreviousSecretUntil)
		}
		expect("after the overlap", deliver(), 1, map[string]bool{second: true, first: false})
		if _, err := r.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := db.NewSelect().Table("deskkit_channels").ColumnExpr("count(*)").
			Where("previous_secret_enc IS NOT NULL OR previous_secret_until_ms IS NOT NULL").Scan(ctx, &left); err != nil || left != 0 {
			t.Errorf("after Purge, %d rows keep a previous secret (%v)", left, err)
		}

		// A secret the client gives, no overlap: the old one stops at once.
		third, _ := notify.NewWebhookSecret()
		zero := time.Duration(0)
		rotated, err = r.RotateSecret(ctx, ann, added.ID, channel.SecretRotation{Secret: third, Overlap: &zero})
		if err != nil || rotated.Secret != third || rotated.PreviousSecretUntil != nil {
			t.Fatalf("rotation to a given secret without overlap: %+v, %v", rotated, err)
		}
		expect("after a rotation without overlap", deliver(), 1, map[string]bool{third: true, second: false})

		// The checks, with the Go library.
		verifyInGo(t, checks)
		// And with the npm library, run by node.
		verifyWithNode(t, checks)

		// The registry's events reached the webhook, and no request, log
		// line or event carries a secret.
		var types []string
		for _, q := range hook.since(0) {
			var ev struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal(q.body, &ev); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(ev.Type, "channel.secret.") {
				types = append(types, ev.Type)
				if a, _ := ev.Data["actor"].(map[string]any); a == nil || a["id"] != float64(1) || ev.Data["channelId"] != float64(added.ID) {
					t.Errorf("%s: data %v, want the channel and the actor", ev.Type, ev.Data)
				}
			}
			for _, s := range []string{first, second, third} {
				if bytes.Contains(q.body, []byte(strings.TrimPrefix(s, "whsec_"))) {
					t.Errorf("a request's body holds a secret: %s", q.body)
				}
			}
		}
		if want := "channel.secret.rotated channel.secret.revealed channel.secret.rotated"; strings.Join(types, " ") != want {
			t.Errorf("the webhook got %v, want %s", types, want)
		}
		out := logs.String()
		for _, s := range []string{first, second, third} {
			if strings.Contains(out, strings.TrimPrefix(s, "whsec_")) {
				t.Errorf("the log holds a secret:\n%s", out)
			}
		}
		if strings.Contains(out, "v1,") {
			t.Errorf("the log holds a signature:\n%s", out)
		}
		for _, line := range []string{`"msg":"channel: signing secret revealed"`, `"msg":"channel: signing secret rotated"`} {
			if !strings.Contains(out, line) {
				t.Errorf("no log line %s in:\n%s", line, out)
			}
		}
	})
}

// verifyWithNode verifies checks with the npm standardwebhooks package
// (channel/testdata/standardwebhooks, whose node_modules .ci/run installs
// with npm ci), and the ed25519 ones, which that package does not take,
// with node's own crypto, as verify.js does from the specification: where it is not installed, the test installs it in a
// temporary folder, and skips if it cannot, unless DESKKIT_REQUIRE_POSTGRES
// is set (CI), where it fails.
func verifyWithNode(t *testing.T, checks []check) {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv(dbtest.EnvRequirePostgres) != "" {
			t.Fatalf("the npm Standard Webhooks library: "+format, args...)
		}
		t.Skipf("the npm Standard Webhooks library: "+format+" (CI runs it: .ci/run installs it)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "standardwebhooks"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil {
		tmp := t.TempDir()
		for _, f := range []string{"package.json", "package-lock.json", "verify.js"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		npm.Dir = tmp
		if out, err := npm.CombinedOutput(); err != nil {
			unavailable("npm ci in %s: %v\n%s", tmp, err, out)
		}
		dir = tmp
	}
	type nodeCase struct {
		Secret    string            `json:"secret,omitempty"`
		PublicKey string            `json:"publicKey,omitempty"`
		Body      string            `json:"body"`
		Headers   map[string]string `json:"headers"`
	}
	cases := make([]nodeCase, len(checks))
	for i, c := range checks {
		h := map[string]string{}
		for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			h[k] = c.req.header.Get(k)
		}
		cases[i] = nodeCase{Body: string(c.req.body), Headers: h}
		if c.hmac() {
			cases[i].Secret = c.secret
		} else {
			cases[i].PublicKey = c.secret
		}
	}
	in, _ := json.Marshal(cases)
	cmd := exec.Command(node, filepath.Join(dir, "verify.js"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.js: %v\n%s", err, stderr.String())
	}
	var results []*string
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(checks) {
		t.Fatalf("node verify.js answered %s (%v), want %d results", out, err, len(checks))
	}
	for i, c := range checks {
		got := results[i]
		switch {
		case c.ok && got != nil:
			t.Errorf("%s: node refuses %.12s...: %s", c.phase, c.secret, *got)
		case !c.ok && got == nil:
			t.Errorf("%s: node takes %.12s..., which must not sign", c.phase, c.secret)
		case !c.ok && *got != "No matching signature found":
			t.Errorf("%s: node refuses for another reason than the signature: %s", c.phase, *got)
		}
	}
}

// TestSecretRevealRotateRefusals: who may reveal and rotate, of which
// channels, with what; a refused rotation changes nothing; the default
// overlap is a day.
func TestSecretRevealRotateRefusals(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "hook", f.recv.URL+"/hook", nil)
		mail := f.add(t, f.ann, "EMAIL", "mail", "a@example.com", nil)
		bob := deskkit.Principal{UserID: 3, TenantID: 10}
		week := channel.MaxSecretOverlap + time.Second
		neg := -time.Second
		bad := []struct {
			name  string
			p     deskkit.Principal
			id    int64
			rot   channel.SecretRotation
			field string
			is    error
		}{
			{"not an admin", bob, hook.ID, channel.SecretRotation{}, "", channel.ErrForbidden},
			{"another tenant's", f.eve, hook.ID, channel.SecretRotation{}, "", channel.ErrNotFound},
			{"no such channel", f.ann, hook.ID + 100, channel.SecretRotation{}, "", channel.ErrNotFound},
			{"an e-mail channel", f.ann, mail.ID, channel.SecretRotation{}, "id", nil},
			{"id 0", f.ann, 0, channel.SecretRotation{}, "id", nil},
			{"a secret not whsec_", f.ann, hook.ID, channel.SecretRotation{Secret: "SEC123"}, "secret", nil},
			{"a short secret", f.ann, hook.ID, channel.SecretRotation{Secret: "whsec_AAAA"}, "secret", nil},
			{"the current secret", f.ann, hook.ID, channel.SecretRotation{Secret: hook.Secret}, "secret", nil},
			{"an overlap over 7 days", f.ann, hook.ID, channel.SecretRotation{Overlap: &week}, "overlap", nil},
			{"a negative overlap", f.ann, hook.ID, channel.SecretRotation{Overlap: &neg}, "overlap", nil},
		}
		for _, c := range bad {
			_, err := f.r.RotateSecret(ctx, c.p, c.id, c.rot)
			if c.is != nil && !errors.Is(err, c.is) || c.field != "" && !isInputError(err, c.field) {
				t.Errorf("rotate, %s: %v", c.name, err)
			}
			if c.rot == (channel.SecretRotation{}) {
				_, err := f.r.RevealSecret(ctx, c.p, c.id)
				if c.is != nil && !errors.Is(err, c.is) || c.field != "" && !isInputError(err, c.field) {
					t.Errorf("reveal, %s: %v", c.name, err)
				}
			}
		}
		if got, err := f.r.RevealSecret(ctx, f.ann, hook.ID); err != nil || got.Secret != hook.Secret || got.PreviousSecretUntil != nil {
			t.Errorf("reveal after the refusals: %+v, %v; want the secret of the add", got, err)
		}

		// An Authorizer may allow a reveal without a rotation.
		r2, err := channel.New(db, sendSecret, nil, &channel.Config{AllowPrivateNetworks: true, Now: f.clock.Now,
			Logger:     slog.New(slog.DiscardHandler),
			Authorizer: allowOnly{channel.ActionRevealSecret}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r2.RegisterEventTypes(hostTypes...); err != nil {
			t.Fatal(err)
		}
		if got, err := r2.RevealSecret(ctx, bob, hook.ID); err != nil || got.Secret != hook.Secret {
			t.Errorf("reveal by a user the Authorizer allows: %+v, %v", got, err)
		}
		if _, err := r2.RotateSecret(ctx, bob, hook.ID, channel.SecretRotation{}); !errors.Is(err, channel.ErrForbidden) {
			t.Errorf("rotate by a user the Authorizer allows only reveals: %v", err)
		}

		// The default overlap is a day.
		rot, err := f.r.RotateSecret(ctx, f.ann, hook.ID, channel.SecretRotation{})
		if want := f.clock.Now().Add(24 * time.Hour); err != nil || rot.PreviousSecretUntil == nil || !rot.PreviousSecretUntil.Equal(want) {
			t.Errorf("rotate without an overlap: %+v, %v; want the old secret until %v", rot, err, want)
		}
	})
}

// allowOnly is an Authorizer that allows its actions alone.
type allowOnly []channel.Action

func (a allowOnly) CanManageChannels(_ context.Context, _ deskkit.Principal, act channel.Action) (bool, error) {
	for _, x := range a {
		if x == act {
			return true, nil
		}
	}
	return false, nil
}

// TestSecretRotationAcrossServerSecrets: a webhook rotated with an overlap
// under one server secret is read whole, both of its signing secrets, by a
// registry whose server secret was rotated since and that keeps the old
// one as Config.PreviousSecret: its deliveries carry both signatures.
// Without PreviousSecret, the row opens to nobody.
func TestSecretRotationAcrossServerSecrets(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := channel.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
		registry := func(secret, previous []byte) *channel.ChannelRegistry {
			t.Helper()
			r, err := channel.New(db, secret, nil, &channel.Config{AllowPrivateNetworks: true, Now: clock.Now,
				Logger: slog.New(slog.DiscardHandler), PreviousSecret: previous})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.RegisterEventTypes(hostTypes...); err != nil {
				t.Fatal(err)
			}
			return r
		}
		ann := deskkit.Principal{UserID: 1, TenantID: 10, Admin: true}
		hook := startHookReceiver(t)
		before := registry(sendSecret, nil)
		added, err := before.Add(ctx, ann, channel.Input{Type: "WEBHOOK", Name: "ops", Address: hook.URL + "/hook"})
		if err != nil {
			t.Fatal(err)
		}
		rot, err := before.RotateSecret(ctx, ann, added.ID, channel.SecretRotation{})
		if err != nil {
			t.Fatal(err)
		}

		rotatedServer := []byte("another server secret, of 32 bytes or more")
		after := registry(rotatedServer, sendSecret)
		if err := after.Publish(ctx, db, 10, newEvent("task.trashed")); err != nil {
			t.Fatal(err)
		}
		if _, err := channel.RunOnce(ctx, after); err != nil {
			t.Fatal(err)
		}
		reqs := hook.since(0)
		if len(reqs) != 2 { // the rotation's event and the task's
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		for _, q := range reqs {
			for _, s := range []string{added.Secret, rot.Secret} {
				wh, _ := standardwebhooks.NewWebhook(s)
				if err := wh.Verify(q.body, q.header); err != nil {
					t.Errorf("after the server secret's rotation, a delivery does not verify with %.12s...: %v", s, err)
				}
			}
		}
		if got, err := after.RevealSecret(ctx, ann, added.ID); err != nil || got.Secret != rot.Secret {
			t.Errorf("reveal after the server secret's rotation: %.12s..., %v", got.Secret, err)
		}
		if got, err := registry(rotatedServer, nil).RevealSecret(ctx, ann, added.ID); err == nil || got.Secret != "" {
			t.Errorf("reveal without the previous server secret: %.12s..., %v; want an error", got.Secret, err)
		}
	})
}

// TestSecretRotationEd25519 moves a webhook from HMAC to ed25519, to both,
// and back to HMAC, each by a rotation, and verifies every request as
// receivers do: HMAC signatures with the Go and npm Standard Webhooks
// libraries, ed25519 ("v1a,") ones with verifiers written from the
// specification in Go and in node. During each overlap the old scheme's
// keys sign beside the new ones; after it they do not. The public key is
// shown, the signing key never, and it is stored sealed.
func TestSecretRotationEd25519(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := channel.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
		var logs syncBuffer
		r, err := channel.New(db, sendSecret, nil, &channel.Config{
			AllowPrivateNetworks: true, Now: clock.Now, RetrySchedule: shortSchedule,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RegisterEventTypes(hostTypes...); err != nil {
			t.Fatal(err)
		}
		ann := deskkit.Principal{UserID: 1, TenantID: 10, Admin: true}
		hook := startHookReceiver(t)
		address := hook.URL + "/hook"
		added, err := r.Add(ctx, ann, channel.Input{Type: "WEBHOOK", Name: "ops", Address: address})
		if err != nil {
			t.Fatal(err)
		}
		if added.Signing != channel.SigningHMAC || added.PublicKey != "" {
			t.Errorf("a new webhook signs with %q (public key %q), want hmac alone", added.Signing, added.PublicKey)
		}
		var checks []check
		deliver := func(phase string, signatures int, keys map[string]bool) {
			t.Helper()
			n := hook.count()
			if err := r.Publish(ctx, db, 10, newEvent("task.trashed")); err != nil {
				t.Fatal(err)
			}
			for {
				k, err := channel.RunOnce(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if k == 0 {
					break
				}
			}
			if _, err := r.Test(ctx, ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "ops", Address: address}); err != nil {
				t.Fatalf("%s: test: %v", phase, err)
			}
			reqs := hook.since(n)
			if len(reqs) < 2 {
				t.Fatalf("%s: %d requests", phase, len(reqs))
			}
			for _, q := range reqs {
				if got := len(strings.Fields(q.header.Get("webhook-signature"))); got != signatures {
					t.Errorf("%s: %d signatures (%s), want %d", phase, got, q.header.Get("webhook-signature"), signatures)
				}
				for k, ok := range keys {
					checks = append(checks, check{phase, q, k, ok})
				}
			}
		}
		two := 2 * time.Minute
		rotate := func(signing channel.Signing, overlap time.Duration) channel.SigningSecret {
			t.Helper()
			s, err := r.RotateSecret(ctx, ann, added.ID, channel.SecretRotation{Signing: signing, Overlap: &overlap})
			if err != nil {
				t.Fatalf("rotate to %s: %v", signing, err)
			}
			if s.Signing != signing || (s.Secret != "") != (signing != channel.SigningEd25519) || (s.PublicKey != "") != (signing != channel.SigningHMAC) {
				t.Errorf("rotated to %s: %+v", signing, s)
			}
			if got, err := r.Get(ctx, ann, added.ID); err != nil || got.Signing != signing || got.PublicKey != s.PublicKey {
				t.Errorf("get after the rotation to %s: %+v, %v", signing, got, err)
			}
			return s
		}

		first := added.Secret
		ed := rotate(channel.SigningEd25519, two)
		var sealed string
		if err := db.NewSelect().Table("deskkit_channels").Column("ed25519_key_enc").Scan(ctx, &sealed); err != nil || !strings.HasPrefix(sealed, "v1:") || strings.Contains(sealed, "whsk_") {
			t.Errorf("the signing key is stored as %.20q (%v), want it sealed", sealed, err)
		}
		if _, err := r.RotateSecret(ctx, ann, added.ID, channel.SecretRotation{Signing: channel.SigningEd25519, Secret: first}); !isInputError(err, "secret") {
			t.Errorf("a secret given for ed25519 alone: %v", err)
		}
		if _, err := r.RotateSecret(ctx, ann, added.ID, channel.SecretRotation{Signing: "rsa"}); !isInputError(err, "signing") {
			t.Errorf("an unknown signing: %v", err)
		}
		deliver("HMAC to ed25519, in the overlap", 2, map[string]bool{ed.PublicKey: true, first: true})
		revealed, err := r.RevealSecret(ctx, ann, added.ID)
		if err != nil || revealed.Secret != "" || revealed.PublicKey != ed.PublicKey || revealed.Signing != channel.SigningEd25519 {
			t.Errorf("reveal of an ed25519 webhook: %+v, %v; want its public key alone", revealed, err)
		}
		clock.Advance(two + time.Second)
		deliver("ed25519 after the overlap", 1, map[string]bool{ed.PublicKey: true, first: false})

		both := rotate(channel.SigningBoth, two)
		deliver("ed25519 to both, in the overlap", 3, map[string]bool{both.Secret: true, both.PublicKey: true, ed.PublicKey: true})
		clock.Advance(two + time.Second)
		deliver("both after the overlap", 2, map[string]bool{both.Secret: true, both.PublicKey: true, ed.PublicKey: false})

		back := rotate(channel.SigningHMAC, 0)
		deliver("back to HMAC at once", 1, map[string]bool{back.Secret: true, both.Secret: false, both.PublicKey: false})

		verifyInGo(t, checks)
		verifyWithNode(t, checks)

		// The signing keys: sealed in the database, in no answer, request
		// or log line.
		var stored []struct {
			Key *string `bun:"ed25519_key_enc"`
		}
		if err := db.NewSelect().Table("deskkit_channels").Column("ed25519_key_enc").Scan(ctx, &stored); err != nil {
			t.Fatal(err)
		}
		if len(stored) != 1 || stored[0].Key != nil {
			t.Errorf("after the rotation back to HMAC, the row keeps a key: %v", stored)
		}
		out := logs.String()
		if strings.Contains(out, "whsk_") || strings.Contains(out, "v1a,") {
			t.Errorf("the log shows a signing key or signature:\n%s", out)
		}
		for _, q := range hook.since(0) {
			if bytes.Contains(q.body, []byte("whsk_")) {
				t.Errorf("a request shows a signing key: %s", q.body)
			}
		}
	})
}
