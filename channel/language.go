package channel

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/text/language"
)

// DefaultTenantLanguageTTL is Config.TenantLanguageTTL's default.
const DefaultTenantLanguageTTL = time.Minute

const (
	// languageRetry is how soon a failed lookup of a tenant's language is
	// made again (the TTL if that is shorter).
	languageRetry = 5 * time.Second
	// languageTimeout bounds one call of Config.TenantLanguage.
	languageTimeout = 10 * time.Second
	// languageLookups is how many calls of Config.TenantLanguage run at
	// once, so that a batch of many new tenants does not take as many of
	// the host's connections.
	languageLookups = 4
)

// languageCache keeps each tenant's language, as Config.TenantLanguage
// told it, for the worker: Open asks it for a batch's tenants, and it
// calls the hook only for a tenant it has not seen, or whose language is
// older than the TTL (see Languages in the package documentation).
//
// A tenant's entry is read by a lookup, a call of the hook in a goroutine
// of its own, one at a time per tenant (the batches that need it wait for
// that one call). A lookup that began at b serves until b+ttl; from
// b+ttl/2 a batch that uses the entry starts the next lookup without
// waiting for it, so that a tenant with events more often than every half
// TTL never waits on the hook after its first batch. A lookup that fails
// keeps the language the entry had (English if none) and is logged when
// the tenant's lookups start failing; while they fail, batches use that
// language without waiting, and the next lookup starts at most every
// languageRetry. Entries not used for two TTLs are dropped.
type languageCache struct {
	ttl   time.Duration // negative: no cache
	now   func() time.Time
	ask   func(ctx context.Context, tenantID int64) (string, error)
	match func(string) language.Tag
	log   *slog.Logger

	slots chan struct{} // languageLookups
	// lookups are the lookups running, for tests.
	lookups sync.WaitGroup

	mu      sync.Mutex
	entries map[int64]*langEntry
	swept   time.Time
}

// langEntry is one tenant's language in a languageCache.
type langEntry struct {
	tag   language.Tag
	known bool // a lookup has ended: tag is what it said, or kept
	// expires is when tag must be looked up again before a batch uses
	// it; refresh is from when a batch starts the next lookup and goes
	// on with tag.
	expires, refresh time.Time
	// failing is whether the last lookup failed.
	failing bool
	used    time.Time
	// done is closed when the lookup running ends; nil when none runs.
	done chan struct{}
}

func newLanguageCache(c *Config) *languageCache {
	msgs := c.Messages
	return &languageCache{
		ttl: c.TenantLanguageTTL, now: c.Now, ask: c.TenantLanguage, log: c.Logger,
		// A delivery has no request: its reader is the tenant, whose one
		// setting the hook gives, matched by the rule of every request
		// (deskkit.Messages.Match).
		match: func(lang string) language.Tag { return msgs.Match(lang) },
		slots: make(chan struct{}, languageLookups), entries: map[int64]*langEntry{},
	}
}

// languages returns the language of each of tenants (a tenant may be
// listed more than once), waiting only for the lookups of tenants it has
// no current language of, or until ctx is done (then what it has, English
// if nothing).
func (c *languageCache) languages(ctx context.Context, tenants []int64) map[int64]language.Tag {
	out := make(map[int64]language.Tag, 4)
	if c.ttl < 0 {
		for _, id := range tenants {
			if _, ok := out[id]; !ok {
				out[id], _ = c.lookup(ctx, id)
			}
		}
		return out
	}
	type wait struct {
		id   int64
		done chan struct{}
	}
	var waits []wait
	now := c.now()
	c.mu.Lock()
	c.sweep(now)
	for _, id := range tenants {
		if _, ok := out[id]; ok {
			continue
		}
		e := c.entries[id]
		if e == nil {
			e = &langEntry{}
			c.entries[id] = e
		}
		e.used = now
		if e.known && (e.failing || now.Before(e.expires)) {
			out[id] = e.tag
			if e.done == nil && !now.Before(e.refresh) {
				c.start(ctx, id, e)
			}
			continue
		}
		if e.done == nil {
			c.start(ctx, id, e)
		}
		out[id] = language.English // until the wait below
		waits = append(waits, wait{id, e.done})
	}
	c.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w.done:
		case <-ctx.Done():
		}
		c.mu.Lock()
		if e := c.entries[w.id]; e != nil && e.known {
			out[w.id] = e.tag
		}
		c.mu.Unlock()
	}
	return out
}

// start starts a lookup of tenant id's language into e; c.mu is held.
func (c *languageCache) start(ctx context.Context, id int64, e *langEntry) {
	done := make(chan struct{})
	e.done = done
	ctx = context.WithoutCancel(ctx) // a batch that stops waiting leaves it to the next
	c.lookups.Go(func() {
		c.slots <- struct{}{}
		began := c.now()
		tag, err := c.lookup(ctx, id)
		<-c.slots
		c.mu.Lock()
		defer c.mu.Unlock()
		// The sweep leaves an entry whose lookup runs: e is still c's.
		e.done = nil
		close(done)
		if err != nil {
			if !e.known {
				e.tag, e.known = tag, true
			}
			e.failing = true
			e.refresh = began.Add(min(languageRetry, c.ttl))
			return
		}
		e.tag, e.known, e.failing = tag, true, false
		e.expires, e.refresh = began.Add(c.ttl), began.Add(c.ttl/2)
	})
}

// lookup calls the hook for tenant id, within languageTimeout, and
// returns the language it names, English for "" or when it fails. A
// failure is logged when it is the first of a row of failures: the
// uncached path (no TTL) logs every one, as it has no row.
func (c *languageCache) lookup(ctx context.Context, id int64) (language.Tag, error) {
	ctx, cancel := context.WithTimeout(ctx, languageTimeout)
	defer cancel()
	lang, err := c.ask(ctx, id)
	if err != nil {
		if c.logFailure(id) {
			msg := "channel: the tenant's language; English, or the language last read, until it answers"
			if c.ttl < 0 {
				msg = "channel: the tenant's language; English instead"
			}
			c.log.WarnContext(ctx, msg, slog.Int64("tenant", id), slog.Any("error", err))
		}
		return language.English, err
	}
	if lang == "" {
		return language.English, nil
	}
	return c.match(lang), nil
}

// logFailure says whether a failed lookup of tenant id is to be logged:
// it is when the tenant's last lookup did not fail.
func (c *languageCache) logFailure(id int64) bool {
	if c.ttl < 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[id]
	return e == nil || !e.failing
}

// sweep drops, at most once a TTL, the entries not used for two TTLs
// whose lookup is not running; c.mu is held.
func (c *languageCache) sweep(now time.Time) {
	if now.Sub(c.swept) < c.ttl {
		return
	}
	c.swept = now
	for id, e := range c.entries {
		if e.done == nil && now.Sub(e.used) >= 2*c.ttl {
			delete(c.entries, id)
		}
	}
}

// size is how many tenants c holds, for tests.
func (c *languageCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
