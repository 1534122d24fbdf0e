package channel

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit/internal/clocktest"
)

// fakeLanguages is a TenantLanguage hook over a map, counting its calls
// per tenant; a tenant in fail answers an error, and while gate is not
// nil every call waits for it to close.
type fakeLanguages struct {
	mu    sync.Mutex
	langs map[int64]string
	fail  map[int64]bool
	calls map[int64]int
	gate  chan struct{}
	// started gets one value per call, when it begins (nil: none sent).
	started chan int64
}

func newFakeLanguages(langs map[int64]string) *fakeLanguages {
	return &fakeLanguages{langs: langs, fail: map[int64]bool{}, calls: map[int64]int{}}
}

func (f *fakeLanguages) TenantLanguage(ctx context.Context, tenantID int64) (string, error) {
	f.mu.Lock()
	f.calls[tenantID]++
	gate, started := f.gate, f.started
	f.mu.Unlock()
	if started != nil {
		started <- tenantID
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[tenantID] {
		return "", errors.New("directory: read tenant locale: connection refused")
	}
	return f.langs[tenantID], nil
}

func (f *fakeLanguages) set(tenantID int64, lang string, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.langs[tenantID], f.fail[tenantID] = lang, fail
}

func (f *fakeLanguages) count(tenantID int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[tenantID]
}

// countingHandler is a slog.Handler that counts the records it gets.
type countingHandler struct {
	mu sync.Mutex
	n  int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(context.Context, slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// langSetup is a languageCache over a fake hook, a test clock and a
// counting logger.
type langSetup struct {
	c     *languageCache
	hook  *fakeLanguages
	clock *clocktest.Clock
	logs  *countingHandler
}

const testTTL = time.Minute

func newLangSetup(t *testing.T, ttl time.Duration, langs map[int64]string) *langSetup {
	t.Helper()
	s := &langSetup{hook: newFakeLanguages(langs), clock: clocktest.New(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)), logs: &countingHandler{}}
	cfg := (&Config{TenantLanguage: s.hook.TenantLanguage, TenantLanguageTTL: ttl, Now: s.clock.Now, Logger: slog.New(s.logs)}).withDefaults()
	s.c = newLanguageCache(cfg)
	t.Cleanup(s.c.lookups.Wait)
	return s
}

// get asks the cache for tenants and waits for the lookups it started in
// the background, so that the next get sees what they read.
func (s *langSetup) get(tenants ...int64) map[int64]language.Tag {
	out := s.c.languages(context.Background(), tenants)
	s.c.lookups.Wait()
	return out
}

func (s *langSetup) want(t *testing.T, got map[int64]language.Tag, want map[int64]language.Tag) {
	t.Helper()
	for id, tag := range want {
		if got[id] != tag {
			t.Errorf("tenant %d: %v, want %v (all: %v)", id, got[id], tag, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func (s *langSetup) calls(t *testing.T, tenantID int64, want int) {
	t.Helper()
	if n := s.hook.count(tenantID); n != want {
		t.Errorf("tenant %d: the hook was called %d times, want %d", tenantID, n, want)
	}
}

var zh = language.SimplifiedChinese

// Within the TTL a tenant's language is asked once, however many batches
// and deliveries of the tenant; "" and an unknown tag are English, an
// Accept-Language value the best match.
func TestLanguageCacheHit(t *testing.T) {
	s := newLangSetup(t, testTTL, map[int64]string{10: "zh-CN,zh;q=0.9", 20: "", 30: "fr"})
	for range 5 {
		s.want(t, s.get(10, 20, 10, 30, 10), map[int64]language.Tag{10: zh, 20: language.English, 30: language.English})
		s.clock.Advance(testTTL / 10)
	}
	for _, id := range []int64{10, 20, 30} {
		s.calls(t, id, 1)
	}
}

// A language older than the TTL is asked again before a batch uses it: a
// change shows in the first batch after the TTL.
func TestLanguageCacheExpiry(t *testing.T) {
	s := newLangSetup(t, testTTL, map[int64]string{10: "en"})
	s.want(t, s.get(10), map[int64]language.Tag{10: language.English})
	s.hook.set(10, "zh-CN", false)
	s.clock.Advance(testTTL / 4)
	s.want(t, s.get(10), map[int64]language.Tag{10: language.English}) // within the TTL, not yet refreshing
	s.calls(t, 10, 1)
	s.clock.Advance(testTTL) // past the TTL, the refresh point never used
	s.want(t, s.get(10), map[int64]language.Tag{10: zh})
	s.calls(t, 10, 2)
}

// From half the TTL a batch starts the next lookup and goes on with the
// language it has, without waiting for the hook; the lookup's answer
// serves a whole TTL from when it began.
func TestLanguageCacheRefresh(t *testing.T) {
	s := newLangSetup(t, testTTL, map[int64]string{10: "en"})
	s.get(10)
	s.hook.set(10, "zh-CN", false)
	s.clock.Advance(testTTL / 2)
	// The hook now blocks: a batch that waited for it would not return.
	gate := make(chan struct{})
	started := make(chan int64, 1)
	s.hook.mu.Lock()
	s.hook.gate, s.hook.started = gate, started
	s.hook.mu.Unlock()
	got := s.c.languages(context.Background(), []int64{10})
	s.want(t, got, map[int64]language.Tag{10: language.English})
	if id := <-started; id != 10 {
		t.Fatalf("refreshed tenant %d", id)
	}
	// A batch while the refresh runs neither waits nor starts another.
	s.want(t, s.c.languages(context.Background(), []int64{10}), map[int64]language.Tag{10: language.English})
	close(gate)
	s.c.lookups.Wait()
	s.calls(t, 10, 2)
	s.want(t, s.get(10), map[int64]language.Tag{10: zh})
	// The refresh began at TTL/2: its answer serves until 1.5 TTL, and is
	// refreshed again from TTL.
	s.clock.Advance(testTTL/2 - time.Second)
	s.get(10)
	s.calls(t, 10, 2)
	s.clock.Advance(time.Second)
	s.want(t, s.get(10), map[int64]language.Tag{10: zh})
	s.calls(t, 10, 3)
}

// A failed lookup means English for a tenant never read, and the language
// last read for one read before; it is logged once for a row of failures,
// and tried again after languageRetry, in the background: batches do not
// wait for a failing hook.
func TestLanguageCacheError(t *testing.T) {
	s := newLangSetup(t, testTTL, map[int64]string{10: "zh-CN", 20: "zh-CN"})
	s.hook.set(10, "", true)
	s.want(t, s.get(10, 20), map[int64]language.Tag{10: language.English, 20: zh})
	if n := s.logs.count(); n != 1 {
		t.Fatalf("%d log records after the first failure, want 1", n)
	}
	// Within languageRetry: not asked again.
	s.clock.Advance(languageRetry - time.Second)
	s.want(t, s.get(10), map[int64]language.Tag{10: language.English})
	s.calls(t, 10, 1)
	// After it: asked again, still failing, not logged again.
	s.clock.Advance(time.Second)
	s.want(t, s.get(10), map[int64]language.Tag{10: language.English})
	s.calls(t, 10, 2)
	if n := s.logs.count(); n != 1 {
		t.Errorf("%d log records after the second failure, want 1", n)
	}
	// It answers: the next batch after the retry has the language.
	s.hook.set(10, "zh-CN", false)
	s.clock.Advance(languageRetry)
	s.get(10)
	s.want(t, s.get(10), map[int64]language.Tag{10: zh})
	s.calls(t, 10, 3)

	// Tenant 20, read before, keeps its language while its lookups fail,
	// past the TTL.
	s.hook.set(20, "", true)
	s.clock.Advance(testTTL + time.Second)
	s.want(t, s.get(20), map[int64]language.Tag{20: zh})
	s.clock.Advance(testTTL)
	s.want(t, s.get(20), map[int64]language.Tag{20: zh})
	s.calls(t, 20, 3)
	if n := s.logs.count(); n != 2 {
		t.Errorf("%d log records after tenant 20's failures, want 2", n)
	}
	// Fixed, then failing again: logged again.
	s.hook.set(20, "en", false)
	s.clock.Advance(languageRetry)
	s.get(20)
	s.want(t, s.get(20), map[int64]language.Tag{20: language.English})
	s.hook.set(20, "", true)
	s.clock.Advance(testTTL)
	s.get(20)
	if n := s.logs.count(); n != 3 {
		t.Errorf("%d log records after tenant 20 failed again, want 3", n)
	}
}

// Batches that miss a tenant at once make one call of the hook, and all
// get its answer. In a synctest bubble, so that the test knows every
// batch is waiting before the hook answers.
func TestLanguageCacheConcurrentMisses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLangSetup(t, testTTL, map[int64]string{10: "zh-CN", 20: "en"})
		gate := make(chan struct{})
		s.hook.gate = gate
		const batches = 8
		results := make(chan map[int64]language.Tag, batches)
		var wg sync.WaitGroup
		for range batches {
			wg.Go(func() { results <- s.c.languages(context.Background(), []int64{10, 20, 10}) })
		}
		synctest.Wait() // every batch waits, the two lookups on the gate
		s.calls(t, 10, 1)
		s.calls(t, 20, 1)
		if len(results) != 0 {
			t.Fatal("a batch went on before the lookup it missed")
		}
		close(gate)
		wg.Wait()
		close(results)
		for got := range results {
			s.want(t, got, map[int64]language.Tag{10: zh, 20: language.English})
		}
		s.calls(t, 10, 1)
		s.calls(t, 20, 1)
	})
}

// Lookups run at most languageLookups at once, whatever the batch.
func TestLanguageCacheBoundsLookups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLangSetup(t, testTTL, map[int64]string{})
		gate := make(chan struct{})
		s.hook.gate = gate
		tenants := make([]int64, 3*languageLookups)
		for i := range tenants {
			tenants[i] = int64(i + 1)
		}
		done := make(chan map[int64]language.Tag, 1)
		go func() { done <- s.c.languages(context.Background(), tenants) }()
		synctest.Wait()
		called := 0
		for _, id := range tenants {
			called += s.hook.count(id)
		}
		if called != languageLookups {
			t.Errorf("%d calls of the hook at once, want %d", called, languageLookups)
		}
		close(gate)
		if got := <-done; len(got) != len(tenants) {
			t.Errorf("%d languages, want %d", len(got), len(tenants))
		}
	})
}

// A tenant not seen for two TTLs is dropped; one seen is kept.
func TestLanguageCacheDropsIdleTenants(t *testing.T) {
	s := newLangSetup(t, testTTL, map[int64]string{10: "zh-CN", 20: "en"})
	s.get(10, 20)
	for range 4 {
		s.clock.Advance(testTTL / 2)
		s.get(10)
	}
	if n := s.c.size(); n != 1 {
		t.Errorf("%d tenants kept, want 1 (tenant 20 unseen for two TTLs)", n)
	}
	s.want(t, s.get(20), map[int64]language.Tag{20: language.English})
	s.calls(t, 20, 2)
}

// A negative TTL keeps nothing: every batch asks, once per tenant.
func TestLanguageCacheOff(t *testing.T) {
	s := newLangSetup(t, -1, map[int64]string{10: "zh-CN"})
	for range 3 {
		s.want(t, s.get(10, 10), map[int64]language.Tag{10: zh})
	}
	s.calls(t, 10, 3)
	if n := s.c.size(); n != 0 {
		t.Errorf("%d tenants kept, want none", n)
	}
	s.hook.set(10, "", true)
	s.get(10)
	s.get(10)
	if n := s.logs.count(); n != 2 {
		t.Errorf("%d log records, want one per failure", n)
	}
}

// 0 means DefaultTenantLanguageTTL; a negative TTL is kept.
func TestLanguageTTLDefault(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{{0, DefaultTenantLanguageTTL}, {time.Second, time.Second}, {-1, -1}} {
		cfg := (&Config{TenantLanguageTTL: c.in}).withDefaults()
		if cfg.TenantLanguageTTL != c.want {
			t.Errorf("TenantLanguageTTL %v: %v, want %v", c.in, cfg.TenantLanguageTTL, c.want)
		}
		if err := cfg.validate(); err != nil {
			t.Errorf("TenantLanguageTTL %v: %v", c.in, err)
		}
	}
}
