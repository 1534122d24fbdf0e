package channel

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
)

// cacheSize bounds the opened channels a registry keeps for its worker;
// beyond it the least recently used go. One is a channel's decrypted
// address and secret, its parsed target and its redactions: a few KB at
// most, so a full cache stays within some MB.
const cacheSize = 4096

// opened is a channel as the worker sends to it: stored (decrypted), its
// sender's target parsed once (Prepared), and the texts redact masks in
// what its far end answers, listed once, at the first reply to mask; or
// why it could not be opened. Many attempts read it at once; nothing but
// that first mask changes it once it is cached.
type opened struct {
	storedChannel
	tenantID int64
	// version is deskkit_channels.version of the row it was opened from.
	version int64
	kind    kind.Kind
	target  notify.Target
	err     error

	listed     sync.Once
	redactions []string
}

// redact is redact(text, o.storedChannel), with the redactions listed
// once for every attempt to o: most replies are empty (a 204), so the
// list is made at the first that is not.
func (o *opened) redact(text string) string {
	if text == "" {
		return ""
	}
	o.listed.Do(func() { o.redactions = redactions(o.storedChannel) })
	return mask(text, o.redactions)
}

// parts are o's redactions and then sigs (a request's signatures): what
// an attempt's exchange masks.
func (o *opened) parts(sigs []string) []string {
	o.listed.Do(func() { o.redactions = redactions(o.storedChannel) })
	out := slices.Concat(o.redactions, sigs)
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// channelCache keeps the channels the worker opened, across batches, by
// tenant and id, each with the version it was opened at. Every statement
// that changes what a delivery uses (type, name, address, secret,
// enabled) adds 1 to the row's version, so a cached channel whose row has
// another version is stale, and is opened again at the next claim. The
// zero value is an empty cache of cacheSize entries; it is safe for
// concurrent use.
type channelCache struct {
	mu    sync.Mutex
	max   int // cacheSize if 0
	items map[channelKey]*list.Element
	lru   list.List // of *opened, the most recently used first

	// decrypted counts the rows opened (decrypted) for the worker: what
	// the cache saves is what it does not count.
	decrypted atomic.Int64

	// failing holds the channels whose failure clock ran (a failed
	// attempt counted, failed_attempts not 0) when a batch last read
	// their versions, or since this worker counted a failure of theirs:
	// only their successes reset the clock (Recorded). A clock another
	// replica started after the read is reset by the first success of a
	// batch read after it, a batch later.
	failing map[channelKey]bool
}

// setFailing records whether k's failure clock runs (see failing).
func (c *channelCache) setFailing(k channelKey, failing bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !failing {
		delete(c.failing, k)
		return
	}
	if c.failing == nil {
		c.failing = map[channelKey]bool{}
	}
	c.failing[k] = true
}

// isFailing reports whether k's failure clock ran when last seen.
func (c *channelCache) isFailing(k channelKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failing[k]
}

// get returns the channel k cached at version with enabled as given, and
// marks it used; nil when the cache holds none or another version.
func (c *channelCache) get(k channelKey, version int64, enabled bool) *opened {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil
	}
	o := e.Value.(*opened)
	// Enabled is checked too, for a row changed by hand without its
	// version: the worker must never send to a disabled channel.
	if o.version != version || o.Enabled != enabled {
		return nil
	}
	c.lru.MoveToFront(e)
	return o
}

// put caches o, unless the cache holds its channel at a later version (a
// parallel Open read it after a change), and evicts the least recently
// used beyond the bound.
func (c *channelCache) put(o *opened) {
	k := channelKey{o.tenantID, o.ID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[channelKey]*list.Element{}
	}
	if e, ok := c.items[k]; ok {
		if e.Value.(*opened).version <= o.version {
			e.Value = o
		}
		c.lru.MoveToFront(e)
		return
	}
	c.items[k] = c.lru.PushFront(o)
	limit := c.max
	if limit <= 0 {
		limit = cacheSize
	}
	for c.lru.Len() > limit {
		last := c.lru.Back()
		old := last.Value.(*opened)
		delete(c.items, channelKey{old.tenantID, old.ID})
		c.lru.Remove(last)
	}
}

// drop forgets the channel k: it was deleted.
func (c *channelCache) drop(k channelKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.failing, k)
	if e, ok := c.items[k]; ok {
		delete(c.items, k)
		c.lru.Remove(e)
	}
}

// len is how many channels the cache holds.
func (c *channelCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// versionRow is what Open knows of every channel of a batch, from the
// claim (stateSQL) or read: enough to tell whether its cached copy is
// current.
type versionRow struct {
	TenantID int64 `bun:"tenant_id"`
	ID       int64 `bun:"id"`
	Version  int64 `bun:"version"`
	Enabled  bool  `bun:"enabled"`
	Failing  bool  `bun:"failing"`
}

// versionedRow is a channel's whole row with its tenant and version, for
// the channels of a batch that must be opened again.
type versionedRow struct {
	channelRow `bun:",extend"`
	TenantID   int64 `bun:"tenant_id"`
	Version    int64 `bun:"version"`
}

// stateSQL is the worker's outbox.Config.TargetState: what a batch needs
// of each claimed delivery's channel to tell whether its cached copy is
// current, read by the claim in its own round trip (on PostgreSQL, where
// a read of its own cost a batch one more round trip, through a pooler
// too): "version enabled failing", the last two as 1 or 0, or "gone" for
// a deleted channel. parseState reads it.
const stateSQL = `COALESCE((SELECT CAST(ch.version AS text)` +
	` || CASE WHEN ch.enabled THEN ' 1' ELSE ' 0' END || CASE WHEN ch.failed_attempts <> 0 THEN ' 1' ELSE ' 0' END` +
	` FROM deskkit_channels AS ch WHERE ch.tenant_id = c.tenant_id AND ch.id = c.target_id), 'gone')`

// stateGone is stateSQL's state of a deleted channel.
const stateGone = "gone"

// parseState reads a state of stateSQL of the channel k; ok is false for a
// deleted one.
func parseState(k channelKey, s string) (v versionRow, ok bool, err error) {
	if s == stateGone {
		return versionRow{}, false, nil
	}
	f := strings.Split(s, " ")
	if len(f) == 3 && (f[1] == "0" || f[1] == "1") && (f[2] == "0" || f[2] == "1") {
		if v.Version, err = strconv.ParseInt(f[0], 10, 64); err == nil {
			v.TenantID, v.ID, v.Enabled, v.Failing = k.tenantID, k.id, f[1] == "1", f[2] == "1"
			return v, true, nil
		}
	}
	return versionRow{}, false, fmt.Errorf("channel: the claim's state of channel %d, %q, is not \"version enabled failing\"", k.id, s)
}

// openChannels returns those of keys that name a channel, opened: from the
// cache where the channel's version has not changed, else read and opened
// again. A channel absent from the answer was deleted. claimed holds what
// the claim read of some of keys' channels (stateSQL); the versions of
// the others are read in one query, whatever their tenants (none when the
// worker claimed the batch). The rows of those that changed, if any, are
// read in one more.
func (r *ChannelRegistry) openChannels(ctx context.Context, keys []channelKey, claimed map[channelKey]string) (map[channelKey]*opened, error) {
	chans := make(map[channelKey]*opened, len(keys))
	if len(keys) == 0 {
		return chans, nil
	}
	var current []versionRow
	var unread []channelKey
	for _, k := range keys {
		s, ok := claimed[k]
		if !ok {
			unread = append(unread, k)
			continue
		}
		v, there, err := parseState(k, s)
		if err != nil {
			return nil, err
		}
		if there {
			current = append(current, v)
		}
	}
	if len(unread) > 0 {
		join, args := joinKeys(unread)
		err := r.db.NewSelect().
			ColumnExpr("c.tenant_id, c.id, c.version, c.enabled, c.failed_attempts <> 0 AS failing").
			TableExpr("deskkit_channels AS c").
			Join(join, args...).
			Scan(ctx, &current)
		if err != nil {
			return nil, fmt.Errorf("channel: read versions: %w", err)
		}
	}
	var stale []channelKey
	there := make(map[channelKey]bool, len(current))
	for _, v := range current {
		k := channelKey{v.TenantID, v.ID}
		there[k] = true
		r.chans.setFailing(k, v.Failing)
		if o := r.chans.get(k, v.Version, v.Enabled); o != nil {
			chans[k] = o
		} else {
			stale = append(stale, k)
		}
	}
	for _, k := range keys {
		if !there[k] {
			r.chans.drop(k)
		}
	}
	if len(stale) == 0 {
		return chans, nil
	}
	join, args := joinKeys(stale)
	var rows []versionedRow
	if err := r.db.NewSelect().Model(&rows).Join(join, args...).Scan(ctx); err != nil {
		return nil, fmt.Errorf("channel: read: %w", err)
	}
	for _, row := range rows {
		o := r.open(row)
		r.chans.put(o)
		// This batch sends what it read, even if a parallel Open cached
		// a later version meanwhile: the next batch sees that one.
		chans[channelKey{o.tenantID, o.ID}] = o
	}
	return chans, nil
}

// joinKeys is the JOIN that keeps the rows of deskkit_channels AS c named
// by keys, each matched on its tenant and id together (a tenant never
// reads another's channel of the same id), and its arguments: a VALUES
// list, whose columns are column1 and column2 on both databases, joined
// by the primary key.
func joinKeys(keys []channelKey) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 2*len(keys))
	b.WriteString("JOIN (VALUES ")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?)")
		args = append(args, k.tenantID, k.id)
	}
	b.WriteString(") AS k ON c.id = k.column2 AND c.tenant_id = k.column1")
	return b.String(), args
}

// open decrypts row and prepares its target. A row
// that does not open is an opened with err set: it fails its deliveries,
// not the batch.
func (r *ChannelRegistry) open(row versionedRow) *opened {
	r.chans.decrypted.Add(1)
	s, err := r.openRow(deskkit.Localizer{}, row.TenantID, row.channelRow)
	s.ID, s.Enabled = row.ID, row.Enabled
	o := &opened{storedChannel: s, tenantID: row.TenantID, version: row.Version, err: err}
	if err != nil {
		return o
	}
	// Unprepared, a malformed stored channel fails its send with the
	// error attempt reports.
	o.kind = kindOf(s.Type)
	o.target = s.target(o.kind)
	return o
}
