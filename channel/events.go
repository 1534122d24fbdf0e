package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/outbox"
	"github.com/deskkit/deskkit/internal/telemetry"
)

// outboxKind is the channel deliveries' kind in the outbox; a delivery's
// target id is the channel's id.
const outboxKind = "channel"

// EventChannelDisabled is the type of the event the registry publishes
// when a channel is disabled.
const EventChannelDisabled = "channel.disabled"

// MaxSubscriptions bounds Input.Events.
const MaxSubscriptions = 50

// ChannelDisabledData is the data of a channel.disabled event.
type ChannelDisabledData struct {
	TenantID  int64  `json:"tenantId,omitempty"` // set by Publish
	ChannelID int64  `json:"channelId"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	// Actor is the user who disabled the channel by hand; nil when the
	// registry disabled it for its failures.
	Actor *deskkit.Actor `json:"actor"`
	// Cause says which of deskkit's causes Reason states: "user" (an
	// admin disabled the channel: actor), "gone" (its webhook answered 410
	// Gone) or "failures" (its deliveries failed for too long:
	// failingSeconds, attempts and lastError, the last attempt's error as
	// recorded). Absent from events published before deskkit kept it.
	Cause          string `json:"cause,omitempty"`
	FailingSeconds int64  `json:"failingSeconds,omitempty"`
	Attempts       int    `json:"attempts,omitempty"`
	LastError      string `json:"lastError,omitempty"`
}

// The causes of ChannelDisabledData.Cause.
const (
	causeUser     = "user"
	causeGone     = "gone"
	causeFailures = "failures"
)

// disableCause is why a channel is disabled.
type disableCause struct {
	cause     string
	userID    int64         // causeUser
	failing   time.Duration // causeFailures: how long deliveries failed
	attempts  int           // causeFailures
	lastError deskkit.Text  // causeFailures: the last attempt's error, as recorded
}

// text is the reason c states, as a message: the last attempt's error of
// a channel disabled for its failures is the message it is, so that a
// reader in another language reads it, the far end's words inside, in
// theirs. Its English is the event's data's reason and the reason an
// older deskkit reads.
func (c disableCause) text() deskkit.Text {
	switch c.cause {
	case causeGone:
		return deskkit.Textf("the webhook answered 410 Gone: the receiver asked for no more deliveries")
	case causeFailures:
		return deskkit.Textf("deliveries failed for %s (%d attempts); the last: %s", deskkit.DurationText(c.failing), c.attempts, c.lastError)
	}
	return deskkit.Textf("disabled by user %d", c.userID)
}

// data is d with c's fields.
func (c disableCause) data(d ChannelDisabledData) ChannelDisabledData {
	d.Cause = c.cause
	if c.cause == causeFailures {
		d.FailingSeconds = int64(c.failing / time.Second)
		d.Attempts = c.attempts
		d.LastError = c.lastError.String()
	}
	return d
}

// EventTypes returns the event types the registry itself publishes, which
// New registers: channel.disabled, channel.failing, channel.secret.revealed
// and channel.secret.rotated. A new slice each time.
func EventTypes() []deskkit.EventType {
	return append([]deskkit.EventType{{
		Name:    EventChannelDisabled,
		Service: deskkit.ServiceChannel,
		About: deskkit.Textf("An event channel was disabled, by an admin or automatically because deliveries to it kept failing. " +
			"It receives no events until an admin enables it again. The tenant's other channels get this event."),
		Example: ChannelDisabledData{
			TenantID: 1, ChannelID: 7, Name: "Ops webhook",
			Reason: "deliveries failed for 5 days (12 attempts); the last: the webhook answered 503 Service Unavailable",
			Cause:  causeFailures, FailingSeconds: 5 * 24 * 60 * 60, Attempts: 12, LastError: "the webhook answered 503 Service Unavailable",
		},
	}, failingEventType}, secretEventTypes()...)
}

// disabledTexts are the heading and body of channel.disabled, published
// by a channel's name and actor (nil: deskkit itself), for reason, the
// cause's message, which a user's disable does not repeat: the body names
// the user, by name when the host's directory knows it.
func disabledTexts(name string, actor *deskkit.Actor, reason deskkit.Text) (title, text deskkit.Text) {
	title = deskkit.Textf("Channel %q was disabled", clipRunes(name, 100))
	switch {
	case actor != nil && actor.Name != "":
		return title, deskkit.Textf("Disabled by %s. It gets no events until an admin enables it again.", clipRunes(actor.Name, 100))
	case actor != nil:
		return title, deskkit.Textf("Disabled by user %d. It gets no events until an admin enables it again.", actor.ID)
	}
	return title, deskkit.Textf("Disabled by deskkit: %s. It gets no events until an admin enables it again.", reason)
}

// eventMessages is an event's Heading and Body as the outbox keeps them
// (outbox.Event.Messages), each a deskkit.Text's JSON: its key and
// arguments.
type eventMessages struct {
	Title deskkit.Text `json:"title"`
	Text  deskkit.Text `json:"text,omitzero"`
}

// fit cuts s to n characters, "…" the last.
func fit(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// RegisterEventTypes adds types to the registry's catalogue, which
// subscriptions are checked against and Publish accepts. The catalogue is
// the host's code: the composition root registers every service's types
// (trash.EventTypes(), ...) and the host's own when it starts, before it
// builds the services that publish through the registry (trash.New and
// verify.New refuse a registry that lacks their types) and before it
// serves, so that every process of a deployment holds the same catalogue
// and every tenant sees the same one; the registry's own types
// (EventTypes) are registered by New. Nothing registers a type at run
// time: Publish refuses a type that is not registered.
//
// Errors: a *deskkit.InputError naming "type" for a name that is not 1 to
// MaxEventTypeBytes of a-z, 0-9, ".", "_" and "-", or that is already
// registered (also twice in types); naming "service" for a Service that
// is not "" nor 1 to 40 of a-z, 0-9, "_" and "-"; naming "example" for
// an Example that does not encode as a JSON object; naming "schema" for
// a Schema that is no JSON object. Nothing is registered then.
func (r *ChannelRegistry) RegisterEventTypes(types ...deskkit.EventType) error {
	r.typesMu.Lock()
	defer r.typesMu.Unlock()
	seen := map[string]bool{}
	for _, t := range types {
		if !validEventType(t.Name) {
			return deskkit.Invalid("type", "%q must be 1 to %d of a-z, 0-9, \".\", \"_\" and \"-\", such as task.trashed", t.Name, MaxEventTypeBytes)
		}
		if _, dup := r.types[t.Name]; dup || seen[t.Name] {
			return deskkit.Invalid("type", "%q is already registered", t.Name)
		}
		if err := checkCatalogueEntry(t); err != nil {
			return err
		}
		seen[t.Name] = true
	}
	for _, t := range types {
		r.types[t.Name] = t
	}
	return nil
}

// checkCatalogueEntry checks what the catalogue shows of t beside its
// name: its service, example and schema.
func checkCatalogueEntry(t deskkit.EventType) error {
	if t.Service != "" && !validService(t.Service) {
		return deskkit.Invalid("service", "%q of type %q must be 1 to 40 of a-z, 0-9, \"_\" and \"-\", such as trash", t.Service, t.Name)
	}
	if t.Example != nil {
		b, err := json.Marshal(t.Example)
		if err != nil || len(b) == 0 || b[0] != '{' {
			return deskkit.Invalid("example", "of type %q must encode as a JSON object", t.Name)
		}
	}
	if t.Schema != nil {
		var m map[string]any
		if err := json.Unmarshal(t.Schema, &m); err != nil || m == nil {
			return deskkit.Invalid("schema", "of type %q must be a JSON Schema: a JSON object", t.Name)
		}
	}
	return nil
}

// validService reports whether s is 1 to 40 of a-z, 0-9, "_" and "-".
func validService(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// EventTypes returns the registry's catalogue, sorted by name: a copy, so
// that a caller that changes it changes nothing else. Each type has a
// description and example data, for GET /api/v1/event/types.
func (r *ChannelRegistry) EventTypes() []deskkit.EventType {
	r.typesMu.RLock()
	out := make([]deskkit.EventType, 0, len(r.types))
	for _, t := range r.types {
		out = append(out, t)
	}
	r.typesMu.RUnlock()
	slices.SortFunc(out, func(a, b deskkit.EventType) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// KnowsEventType reports whether name is in the registry's catalogue:
// whether Publish accepts an event of that type. It makes the registry a
// deskkit.EventTypeChecker, through which trash.New and verify.New refuse
// a registry that lacks their types (register them first).
func (r *ChannelRegistry) KnowsEventType(name string) bool {
	return r != nil && r.registered(name)
}

var _ deskkit.EventTypeChecker = (*ChannelRegistry)(nil)

func (r *ChannelRegistry) registered(name string) bool {
	r.typesMu.RLock()
	defer r.typesMu.RUnlock()
	_, ok := r.types[name]
	return ok
}

// maxListedTypes bounds the names an error message lists.
const maxListedTypes = 50

// unregistered is Publish's error for a type that is not in the
// catalogue: it lists the registered types, so that the caller sees what
// it may publish.
func (r *ChannelRegistry) unregistered(name string) error {
	types := r.EventTypes()
	names := make([]string, 0, min(len(types), maxListedTypes))
	for _, t := range types[:min(len(types), maxListedTypes)] {
		names = append(names, t.Name)
	}
	var more any = ""
	if n := len(types) - len(names); n > 0 {
		more = deskkit.Textf(" and %d more", n)
	}
	return deskkit.Invalid("type", "%q is not a registered event type; the registered types are %s%s (GET /api/v1/event/types describes them)",
		name, strings.Join(names, ", "), more)
}

// normalizeEvents checks a subscription against the catalogue and returns
// it as stored: duplicates dropped, in the order given; nil for every
// event.
func (r *ChannelRegistry) normalizeEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, nil
	}
	if len(events) > MaxSubscriptions {
		return nil, deskkit.Invalid("events", "must list at most %d event types or prefixes", MaxSubscriptions)
	}
	r.typesMu.RLock()
	defer r.typesMu.RUnlock()
	out := make([]string, 0, len(events))
	for i, e := range events {
		if slices.Contains(out, e) {
			continue
		}
		prefix, wild := strings.CutSuffix(e, "*")
		switch {
		case wild && strings.HasSuffix(prefix, ".") && validEventType(prefix):
			if !r.matchesRegistered(prefix) {
				return nil, deskkit.Invalid("events", "entry %d (%q) matches no registered event type; GET /api/v1/event/types lists them", i+1, clip(e))
			}
		case validEventType(e):
			if _, ok := r.types[e]; !ok {
				return nil, deskkit.Invalid("events", "entry %d (%q) is not a registered event type; GET /api/v1/event/types lists them", i+1, clip(e))
			}
		default:
			return nil, deskkit.Invalid("events", "entry %d (%q) must be an event type such as task.trashed or a prefix ending in \".*\" such as task.*; an empty list means every event", i+1, clip(e))
		}
		out = append(out, e)
	}
	return out, nil
}

// matchesRegistered reports whether a registered type starts with prefix;
// the caller holds typesMu.
func (r *ChannelRegistry) matchesRegistered(prefix string) bool {
	for n := range r.types {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// clip cuts a quoted input to a length fit for an error message.
func clip(s string) string {
	if len(s) > 110 {
		s = s[:100] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// The tenant's enabled channels subscribed to an event type (the
// arguments: tenant, type, type), as an outbox.Enqueuer's targets: a
// channel without a subscription takes every event; an entry is a type, or
// a prefix ending in "*" ("task.*") that the type starts with (but for the
// "*"). The outbox runs it inside its insert: on PostgreSQL a publish is
// one statement.
const (
	postgresTargets = `SELECT c.id AS id, NULL AS payload FROM deskkit_channels AS c
WHERE c.tenant_id = ? AND c.enabled AND (c.events IS NULL OR EXISTS (
  SELECT 1 FROM json_array_elements_text(c.events::json) AS p (v)
  WHERE p.v = ? OR (right(p.v, 1) = '*' AND left(?, length(p.v) - 1) = left(p.v, -1))))`
	sqliteTargets = `SELECT c.id AS id, NULL AS payload FROM deskkit_channels AS c
WHERE c.tenant_id = ? AND c.enabled AND (c.events IS NULL OR EXISTS (
  SELECT 1 FROM json_each(c.events) AS p
  WHERE p.value = ? OR (substr(p.value, -1) = '*'
    AND substr(?, 1, length(p.value) - 1) = substr(p.value, 1, length(p.value) - 1))))`
)

// exceptTarget leaves one channel out of the targets (publishesExcept).
const exceptTarget = "\nAND c.id <> ?"

// encodeEvents is a subscription as stored: NULL for every event.
func encodeEvents(events []string) *string {
	if len(events) == 0 {
		return nil
	}
	b, _ := json.Marshal(events)
	s := string(b)
	return &s
}

// decodeEvents reads a stored subscription; never nil.
func decodeEvents(s *string) ([]string, error) {
	if s == nil || *s == "" {
		return []string{}, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(*s), &out); err != nil {
		return nil, fmt.Errorf("channel: stored subscription: %w", err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

var _ deskkit.Publisher = (*ChannelRegistry)(nil)

// Publish writes ev, published in tenant tenantID, and one delivery per
// enabled channel of the tenant whose subscription takes ev.Type, through
// db: the caller's transaction, so that the event exists exactly when the
// caller's change does (or the database itself, for an event outside any
// transaction: Publish then writes the event and its deliveries in a
// transaction of its own, so that a publish that fails half-way leaves
// nothing for a retry with the same id to skip). The deliveries are made
// by Run, in this process or any other sharing the database, from
// Config.RetrySchedule's first delay on.
// An event whose id the tenant already published adds nothing: publishing
// is idempotent on ev.ID. ev.ID "" gets a new id, ev.Time zero the
// registry's clock; ev.Data's "tenantId" is set to tenantID. A top-level
// key of ev.Data that differs from a key deskkit sets ("tenantId", and
// "actor" of the services' events) in case alone ("TenantID", "ACTOR") is
// refused: a receiver that matches keys without case, as Go's
// encoding/json and .NET do, would read it in place of deskkit's.
// "tenantId" is set at the top level: the data's own top-level
// "tenantId" is replaced, nested objects are kept as they are. Keys are
// compared as encoding/json decodes them (escapes resolved) and folds
// them (strings.EqualFold, Unicode simple folding). The event's id is
// also the webhook-id of every attempt.
//
// Publish does no network I/O and calls back into nothing: on PostgreSQL
// it is one statement, which chooses the tenant's subscribed channels,
// writes the event and its deliveries, and NOTIFYs the workers, who are
// woken at commit; on SQLite two. This process's worker is also woken
// directly. On PostgreSQL the statement is prepared once per connection
// of the pool (Config.PlainStatements says what that saves, and when to
// turn it off).
//
// An event with a Heading is stored with its Heading and Body as messages
// (key and arguments) and their English as its title and text; each
// delivery writes it in the receiving tenant's language (see
// deskkit.Event and Config.TenantLanguage).
//
// Errors: a *deskkit.InputError naming the field of a malformed event
// (tenantID, id, type, title, text, body, data; title and text for a
// Heading and Body whose English breaks their bounds), "data" for a key that folds
// to a key deskkit sets (its message names the key), or "type" for a
// type nobody registered (RegisterEventTypes; its message lists the
// registered types); the database's errors. Nothing is written then, and
// the caller rolls back.
func (r *ChannelRegistry) Publish(ctx context.Context, db bun.IDB, tenantID int64, ev deskkit.Event) error {
	ctx, call := r.ops.Start(ctx, "channel.Publish", "")
	err := r.publish(ctx, db, tenantID, ev, 0)
	call.End(err)
	if err == nil {
		switch db.(type) {
		case bun.Tx, *bun.Tx:
			r.reads.Pending(tenantID) // the caller commits it, later
		default:
			r.reads.Wrote(ctx, tenantID)
		}
	}
	return err
}

// publish is Publish, leaving out the tenant's channel except (none if 0).
func (r *ChannelRegistry) publish(ctx context.Context, db bun.IDB, tenantID int64, ev deskkit.Event, except int64) error {
	if err := deskkit.CheckID("tenantID", tenantID); err != nil {
		return err
	}
	msg, err := r.message(ev)
	if err != nil {
		return err
	}
	if !r.registered(msg.Type) {
		return r.unregistered(msg.Type)
	}
	if msg.Data, err = withTenant(msg.Data, tenantID); err != nil {
		return err
	}
	var messages json.RawMessage
	if !ev.Heading.IsZero() {
		if messages, err = json.Marshal(eventMessages{ev.Heading, ev.Body}); err != nil {
			return fmt.Errorf("channel: publish: messages: %w", err)
		}
	}
	var isNew, queued bool
	switch db.(type) {
	case bun.Tx, *bun.Tx:
		isNew, queued, err = r.enqueue(ctx, db, tenantID, msg, messages, except)
	default:
		// Holding no connection yet, Publish may take one to prepare its
		// statement; inside the transaction it may not (see Transactions
		// in the package doc). A failure costs only the plain query.
		r.prepare(ctx)
		// Outside a transaction, the event and its deliveries commit
		// together in one of Publish's own: written one by one (SQLite
		// writes them in two statements), a failure between them would
		// leave an event without deliveries, which a retry with the same
		// id would find published and add nothing to.
		err = deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
			n, q, err := r.enqueue(ctx, tx, tenantID, msg, messages, except)
			isNew, queued = n, q
			return err
		})
	}
	if err != nil {
		return err
	}
	if isNew {
		// msg.Type is registered: the series are the catalogue's.
		if r.published.Enabled(ctx) {
			r.published.Add(ctx, 1, metric.WithAttributes(telemetry.EventType.String(msg.Type)))
		}
	}
	if queued {
		r.wake(db)
	}
	return nil
}

// enqueue writes msg, with its messages (eventMessages' JSON, or nil),
// and its deliveries to the tenant's subscribed channels through db, a
// transaction, and reports whether the event was new and whether any
// delivery was queued.
func (r *ChannelRegistry) enqueue(ctx context.Context, db bun.IDB, tenantID int64, msg notify.Message, messages json.RawMessage, except int64) (isNew, queued bool, err error) {
	e, args := r.publishes, []any{tenantID, msg.Type, msg.Type}
	if except != 0 {
		e, args = r.publishesExcept, append(args, except)
	}
	isNew, n, err := e.Enqueue(ctx, db, outbox.Event{
		TenantID: tenantID, ID: msg.ID, Type: msg.Type, Time: msg.Time,
		Title: msg.Title, Text: msg.Text, Data: msg.Data, Messages: messages,
	}, args, r.cfg.Now(), r.cfg.RetrySchedule[0])
	if err != nil {
		return false, false, fmt.Errorf("channel: publish: %w", err)
	}
	return isNew, n > 0, nil
}

// prepare prepares Publish's statement on PostgreSQL, unless that is done
// or Config.PlainStatements is set; the caller holds no connection of the
// pool (Run, or a Publish given the database rather than a transaction).
// Until it succeeds, a publish inside a transaction runs the statement
// unprepared, so a failure is only logged, and after one it is tried again
// a minute later at the earliest (a pooler that keeps no prepared
// statements would fail every try).
func (r *ChannelRegistry) prepare(ctx context.Context) {
	if !r.pg || r.cfg.PlainStatements {
		return
	}
	now := r.cfg.Now().UnixMilli()
	if failed := r.prepareFailed.Load(); failed != 0 && now-failed < time.Minute.Milliseconds() {
		return
	}
	if err := r.publishes.Prepare(ctx); err != nil && ctx.Err() == nil {
		r.prepareFailed.Store(now)
		r.cfg.Logger.WarnContext(ctx, "channel: publish runs its statement unprepared", slog.Any("error", err))
	}
}

// setKeys are the keys of an event's data that deskkit sets: "tenantId",
// which Publish sets in every event, and "actor", in the services'
// events (deskkit.Actor).
var setKeys = [...]string{"tenantId", "actor"}

// withTenant checks the top-level keys of data, a JSON object as
// json.Marshal writes it, and returns it with "tenantId" set to tenantID.
// Only the top level is merged, so only its keys are checked: a nested
// "TenantID" is the host's own and shadows nothing.
func withTenant(data json.RawMessage, tenantID int64) (json.RawMessage, error) {
	id := strconv.FormatInt(tenantID, 10)
	if mayHoldSetKey(data) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, deskkit.Invalid("data", "must encode as a JSON object") // message() checked it
		}
		var bad, of string // the least offending key, for a stable message
		for k := range m {
			for _, set := range setKeys {
				if k != set && strings.EqualFold(k, set) && (bad == "" || k < bad) {
					bad, of = k, set
				}
			}
		}
		if bad != "" {
			return nil, deskkit.Invalid("data", "key %q differs only in case from %q, which deskkit sets: receivers that match keys without case would read it in place of deskkit's; rename it", bad, of)
		}
		if _, ok := m["tenantId"]; ok {
			m["tenantId"] = json.RawMessage(id)
			b, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("channel: publish: data: %w", err)
			}
			return b, nil
		}
	}
	// Most events: splice, without decoding the object.
	inner := bytes.TrimSpace(data[1:])
	out := make([]byte, 0, len(data)+len(id)+14)
	out = append(out, `{"tenantId":`...)
	out = append(out, id...)
	if len(inner) > 0 && inner[0] != '}' {
		out = append(out, ',')
	}
	return append(out, inner...), nil
}

// mayHoldSetKey reports whether data, JSON as json.Marshal writes it, may
// hold a key "tenantId" or one that folds to a key deskkit sets but is not
// it; false means that none of its keys, at any depth, is either. Without
// a backslash, a key is its bytes between quotes; and the letters of
// setKeys fold only to ASCII letters (unicode.SimpleFold; a test checks
// it), so a key that folds to one is that key's bytes in another case.
// The services' events, which hold "actor" as it is and no "tenantId",
// take the splice without decoding.
func mayHoldSetKey(data []byte) bool {
	if bytes.IndexByte(data, '\\') >= 0 {
		return true
	}
	// Every key follows a quote: look after each.
	for i := bytes.IndexByte(data, '"'); i >= 0; {
		rest := data[i+1:]
		for _, k := range setKeys {
			if len(rest) > len(k) && rest[len(k)] == '"' && asciiEqualFold(rest[:len(k)], k) &&
				(k == "tenantId" || string(rest[:len(k)]) != k) {
				return true
			}
		}
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// asciiEqualFold reports whether b is s, ASCII letters compared without
// case.
func asciiEqualFold(b []byte, s string) bool {
	for i := range len(s) {
		x, y := b[i], s[i]
		if x|0x20 != y|0x20 || (x|0x20) < 'a' || (x|0x20) > 'z' {
			if x != y {
				return false
			}
		}
	}
	return true
}

// wake wakes this process's worker after a publish: at once, and, when
// db is a transaction whose commit is still to come, again shortly after
// (see Run), since a worker woken before the commit does not see the
// rows. Not while the worker's LISTEN holds (PostgreSQL): the commit's
// NOTIFY wakes it then, and a wake before the commit would only make a
// claim that finds nothing.
func (r *ChannelRegistry) wake(db bun.IDB) {
	if r.worker.Listening() {
		return
	}
	if _, ok := db.(*bun.DB); ok {
		r.worker.Wake()
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}
