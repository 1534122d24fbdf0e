package channel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/outbox"
)

// The errors of attempts that end a delivery without sending.
var (
	reasonDeleted  = deskkit.Textf("channel deleted")
	reasonDisabled = deskkit.Textf("channel disabled")
)

// housekeepingEvery is how often Run purges the delivery log, and
// purgeBatch how many rows one purge statement deletes.
const (
	housekeepingEvery = time.Hour
	purgeBatch        = 1000
)

// Run delivers the published events until ctx is done: it claims due
// deliveries of every tenant (with the other processes running Run on the
// same database, each delivery by one of them), makes Config.Concurrency
// attempts at once and records each, retrying failures on
// Config.RetrySchedule. On PostgreSQL over bun's pgdriver it LISTENs for
// the publishers' NOTIFY, so that a committed event is attempted at once;
// it also polls every second. Every hour it purges what is older than
// Config.LogRetention from the delivery log, and the test and resend
// throttles' closed windows (Purge).
//
// When ctx is done Run claims nothing new, waits for the attempts in
// flight (each bounded by Config.Timeout) and records them, and returns
// nil. A process that dies instead leaves its claimed deliveries to be
// attempted again, by any process, when their lease ends. Run returns an
// error at once if it is already running on this registry.
//
// Attempts and retries. Run claims due deliveries in batches (on
// PostgreSQL with FOR UPDATE SKIP LOCKED, so that replicas share the
// queue and each delivery is attempted by one of them), up to
// Config.BatchSize per claim and Config.Concurrency attempts at a time,
// each under a lease of twice Config.Timeout plus a minute: a process
// that dies mid-attempt loses its deliveries when the lease ends, and
// another makes the attempt again. Outcomes are recorded in flushes,
// every 5 ms or 100 outcomes, each one transaction for all of them; a
// process that dies between an attempt and its flush has that attempt
// made again when its lease ends. On PostgreSQL a claim commits without
// waiting for the disk (the one write whose loss is harmless): a crash of
// PostgreSQL itself may forget the claims of its last few hundred
// milliseconds, and those deliveries are attempted again. Delivery is
// therefore at least once, and receivers drop duplicates by webhook-id. A
// flush that loses its database connection (a restart, a failover, a
// network blip) is recorded again on a fresh connection within a few
// seconds and within the lease, so that a blip costs neither a duplicate
// nor a lease's delay; only a database down for longer than that leaves
// the flush's deliveries to be attempted again when their leases end.
//
// A replica claims ahead: claimed deliveries wait in it for an attempt to
// end, as many as its attempts at once at first, doubling while claims
// come back full up to BatchSize, so that a backlog is claimed in larger
// batches; they go back to the queue when Run stops, or unattempted if
// one waited until less than half its lease was left.
//
// Fairness. A claim takes every tenant's first due delivery before any
// tenant's second, and within a tenant every channel's first before any
// second, so that no tenant waits behind another's backlog and no channel
// behind another of its tenant's. A channel has at most
// Config.MaxInFlightPerChannel deliveries in flight, counted across every
// process from the leased rows (on PostgreSQL a process leaves out its
// own attempts that ended, their outcomes not yet recorded, so that a
// channel's room is free as soon as an attempt ends; the other processes
// count them until recorded), so that a hanging endpoint holds that many
// attempts, not all of them; and one tenant's deliveries hold at most
// Config.TenantConcurrency of a process's attempts, so that another
// tenant's event finds one free while a tenant's endpoints hang. The cap
// adapts between a floor and a ceiling with the channel's answers
// (Config.MaxInFlightPerChannel and InFlightCeiling say how), a
// Retry-After pauses the whole channel, and a rate limit spaces its sends
// (Input.RateLimit): shared by every process, shown in Channel. A lease
// counts toward its channel's cap for twice Config.Timeout plus 5 s after
// its claim (a claimed delivery waits for a slot at most one attempt's
// time): a killed process holds its channels' caps no longer than its
// attempts could have run. The cap holds also while several processes
// claim at the same instant: on PostgreSQL one claim at a time takes from
// a channel, the others skip it until it has committed. On SQLite (one
// process) the claim ranks every due delivery; on PostgreSQL it steps
// through the channels that have pending deliveries with one index probe
// each, so its cost follows that number of channels, not the queue's
// length.
//
// Sending. Success is, per type: a 2xx reply for a webhook (a 3xx is a
// failure: redirects are never followed); errcode 0 for the robots; for
// e-mail, the mail server's acceptance of every address. An e-mail
// attempt that some addresses did not take succeeded for those: the next
// attempt goes only to the addresses still owed (and still on the
// channel), so that a retry does not mail the others twice. An address
// the SSRF guard refuses fails the delivery at once, as does a channel
// that was deleted or disabled (its deliveries end FAILED, "channel
// deleted" or "channel disabled"). The outbound client keeps
// Config.Concurrency idle connections per host alive. A worker keeps the
// channels it opened (decrypted) across batches, up to a few thousand:
// each claim reads only their versions, in the claim's own statement, and
// the batch reads and decrypts again only a channel changed since, so a
// change to a channel (its address, secret, enabled) is seen at the next
// claim. A batch builds each event's message once.
//
// Wake-up. On PostgreSQL over bun's pgdriver, Run LISTENs for the
// publishers' NOTIFY, sent at commit (on Config.ListenDB if set; with
// Config.PlainStatements and no ListenDB it does not listen); a lost listener connection is
// logged and established again. Every process also polls every second,
// and a publish wakes its own process's worker directly (again 20 and 200
// ms later when it publishes in a transaction, whose commit comes after):
// on SQLite that and the poll are the only wake-ups.
//
// Scaling. Every process running Run on the database shares its queue:
// claims skip each other's rows, so throughput grows with replicas until
// the database is the bound. examples/server/README.md ("Event channels in
// detail") gives what a delivery costs the database and the throughput
// measured with one, two and four replicas.
func (r *ChannelRegistry) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("channel: Run is already running on this registry")
	}
	defer r.running.Store(false)
	if reg, err := outbox.RegisterGauges(r.db, r.cfg.MeterProvider, r.cfg.Now); err != nil {
		// Metrics never stop deliveries.
		r.cfg.Logger.ErrorContext(ctx, "channel: outbox gauges", slog.Any("error", err))
	} else {
		defer func() { _ = reg.Unregister() }()
	}
	var wg sync.WaitGroup
	if ldb := r.listenDB(); ldb != nil {
		wg.Go(func() { outbox.Listen(ctx, ldb, r.cfg.Logger, r.worker) })
	}
	wg.Go(func() { r.kicks(ctx) })
	wg.Go(func() { r.housekeeping(ctx) })
	r.worker.Run(ctx)
	wg.Wait()
	return nil
}

// listenDB is the pool Run listens on: Config.ListenDB, else the
// registry's own unless Config.PlainStatements is set (a pooler in
// transaction mode keeps no LISTEN), else none.
func (r *ChannelRegistry) listenDB() *bun.DB {
	if r.cfg.ListenDB != nil {
		return r.cfg.ListenDB
	}
	if r.cfg.PlainStatements {
		return nil
	}
	return r.db
}

// kicks wakes the worker after publishes in a transaction: at once, for a
// commit that came first, and again 20 ms and 200 ms later, for one that
// came after (a worker woken before the commit finds nothing). On
// PostgreSQL the NOTIFY at commit wakes it anyway; on SQLite these and the
// poll are the only wake-ups.
func (r *ChannelRegistry) kicks(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		}
		r.worker.Wake()
		for _, d := range []time.Duration{20 * time.Millisecond, 180 * time.Millisecond} {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
			r.worker.Wake()
		}
	}
}

// housekeeping runs housekeep at once and then every housekeepingEvery.
func (r *ChannelRegistry) housekeeping(ctx context.Context) {
	t := time.NewTicker(housekeepingEvery)
	defer t.Stop()
	for {
		if err := r.housekeep(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.ErrorContext(ctx, "channel: housekeeping", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// housekeep prepares Publish's statement, if that is still to do, and
// purges attempts, finished deliveries and events older than
// Config.LogRetention, in batches of purgeBatch rows, and the test
// throttle's closed windows.
func (r *ChannelRegistry) housekeep(ctx context.Context) error {
	r.prepare(ctx)
	if _, err := outbox.Purge(ctx, r.db, r.cfg.Now().Add(-r.cfg.LogRetention), purgeBatch); err != nil {
		return err
	}
	_, err := r.Purge(ctx)
	return err
}

// runOnce claims one batch of due deliveries and makes and records its
// attempts, for tests.
func (r *ChannelRegistry) runOnce(ctx context.Context) (int, error) { return r.worker.RunOnce(ctx) }

// handler makes the outbox's attempts of kind "channel".
type handler ChannelRegistry

var _ outbox.Handler = (*handler)(nil)

type channelKey struct{ tenantID, id int64 }

type eventKey struct {
	tenantID int64
	id       string
}

// Open takes the versions of the batch's channels from the claim, which
// read them (stateSQL; a batch claimed otherwise has them read, of every
// tenant, in one query), and opens (reads and decrypts) again, in one
// query, only those that changed since an earlier batch opened them (see
// channelCache); it builds each event's message once.
func (h *handler) Open(ctx context.Context, batch []outbox.Delivery) (func(context.Context, outbox.Delivery) outbox.Outcome, error) {
	r := (*ChannelRegistry)(h)
	var keys []channelKey
	seen := map[channelKey]bool{}
	claimed := map[channelKey]string{}
	msgs := map[eventKey]checked{}
	langs := r.tenantLanguages(ctx, batch)
	for _, d := range batch {
		if k := (channelKey{d.TenantID, d.TargetID}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		if d.TargetState != nil {
			claimed[channelKey{d.TenantID, d.TargetID}] = *d.TargetState
		}
		k := eventKey{d.TenantID, d.Event.ID}
		if _, ok := msgs[k]; !ok {
			e := d.Event
			m := notify.Message{ID: e.ID, Type: e.Type, Time: e.Time.UTC(), Title: e.Title, Text: e.Text, Data: e.Data}
			if len(e.Messages) > 0 {
				m = r.renderStored(ctx, m, e.Messages, langs[d.TenantID])
			}
			// Checked once here, not once per channel.
			msgs[k] = checked{m, notify.CheckMessage(m)}
		}
	}
	chans, err := r.openChannels(ctx, keys, claimed)
	if err != nil {
		return nil, err
	}
	attempt := func(ctx context.Context, d outbox.Delivery) outbox.Outcome {
		c, ok := chans[channelKey{d.TenantID, d.TargetID}]
		switch {
		case !ok:
			return outbox.Outcome{Error: reasonDeleted, Final: true}
		case !c.Enabled:
			return outbox.Outcome{Error: reasonDisabled, Final: true}
		case c.err != nil:
			r.cfg.Logger.ErrorContext(ctx, "channel: cannot open a stored channel", slog.Int64("channel", c.ID), slog.Any("error", c.err))
			return outbox.Outcome{Error: deskkit.Textf("the channel's address or secret does not decrypt with the server's secret")}
		}
		m := msgs[eventKey{d.TenantID, d.Event.ID}]
		if m.err != nil {
			// Publish checks what it writes; an event written otherwise
			// is no better at the next attempt.
			return outbox.Outcome{Error: deskkit.Textf("the event is malformed: %s", m.err), Final: true}
		}
		return r.attempt(ctx, c, m.Message, d)
	}
	return func(ctx context.Context, d outbox.Delivery) outbox.Outcome {
		o := attempt(ctx, d)
		if c, ok := chans[channelKey{d.TenantID, d.TargetID}]; ok && c.Type.Quota() > 0 { // a known type
			o.Label = string(c.Type) // the metrics' deskkit.channel.type
		}
		return o
	}, nil
}

// tenantLanguages returns the language of each tenant of batch, from
// the registry's languageCache: Config.TenantLanguage is asked only for
// tenants whose language it has not read within Config.TenantLanguageTTL;
// nil without the hook. Nothing is held while it runs.
func (r *ChannelRegistry) tenantLanguages(ctx context.Context, batch []outbox.Delivery) map[int64]language.Tag {
	if r.langs == nil {
		return nil
	}
	tenants := make([]int64, len(batch))
	for i, d := range batch {
		tenants[i] = d.TenantID
	}
	return r.langs.languages(ctx, tenants)
}

// tenantLanguage is the language of tenantID's messages, from the
// registry's languageCache; zero (English) without Config.TenantLanguage.
func (r *ChannelRegistry) tenantLanguage(ctx context.Context, tenantID int64) language.Tag {
	if r.langs == nil {
		return language.Tag{}
	}
	return r.langs.languages(ctx, []int64{tenantID})[tenantID]
}

// renderStored is render of an event's messages as the outbox stores
// them (eventMessages' JSON); m as stored, its English, when they do not
// decode.
func (r *ChannelRegistry) renderStored(ctx context.Context, m notify.Message, stored json.RawMessage, tag language.Tag) notify.Message {
	var em eventMessages
	if err := json.Unmarshal(stored, &em); err != nil || em.Title.IsZero() {
		r.cfg.Logger.WarnContext(ctx, "channel: read an event's stored messages; sent in English", slog.String("type", m.Type), slog.Any("error", err))
		return m
	}
	return r.render(ctx, m, em, tag)
}

// render writes m's title and text from em in tag's language (English when
// zero), with Config.Messages: a translation longer than an event's bounds
// is cut to them; one that CheckMessage refuses (a title of two lines)
// leaves m as it is, in English.
func (r *ChannelRegistry) render(ctx context.Context, m notify.Message, em eventMessages, tag language.Tag) notify.Message {
	if tag == (language.Tag{}) {
		tag = language.English
	}
	out := m
	out.Title = fit(em.Title.LocalizedMessage(r.cfg.Messages, tag), MaxTitleRunes)
	out.Text = ""
	if !em.Text.IsZero() {
		out.Text = fit(em.Text.LocalizedMessage(r.cfg.Messages, tag), MaxTextRunes)
	}
	out.Lang, out.Messages = tag, r.cfg.Messages
	// The data are m's, checked by its caller: only the words are new.
	words := out
	words.Data = nil
	if err := notify.CheckMessage(words); err != nil {
		r.cfg.Logger.WarnContext(ctx, "channel: render an event; sent in English", slog.String("type", m.Type), slog.String("language", tag.String()), slog.Any("error", err))
		return m
	}
	return out
}

// checked is an event's message and what CheckMessage said of it.
type checked struct {
	notify.Message
	err error
}

// attempt sends msg to c, as its sender's target, once, within the
// timeout, and says what became of it.
func (r *ChannelRegistry) attempt(ctx context.Context, c *opened, msg notify.Message, d outbox.Delivery) outbox.Outcome {
	t := c.target // a copy: Only is this attempt's
	if d.Payload != "" {
		// A retry goes only to the addresses the last attempt did not
		// reach (see Recorded).
		_ = json.Unmarshal([]byte(d.Payload), &t.Only)
	}
	// What an earlier attempt owed is in t.Only now.
	r.remaining.Delete(d.ID)
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	rep, err := c.kind.Send(ctx, r.sender, t, msg)
	// What the reply must not show: the channel's secrets and address,
	// and the request's signatures (a far end that echoes its request).
	sigs := signatures(rep.Request)
	o := outbox.Outcome{StatusCode: rep.Status, Response: mask(c.redact(string(rep.Body)), sigs)}
	o.Exchange, o.Body = c.kept(rep, msg, c.parts(sigs))
	if len(rep.Accepted) > 0 {
		o.Response = "the mail server took the message for " + strings.Join(rep.Accepted, ", ")
	}
	var f *notify.Failure
	var ie *deskkit.InputError
	switch {
	case err == nil:
		o.OK = true
	case errors.As(err, &f):
		// A robot's errmsg may quote its URL, key and all.
		o.Error, o.RetryAfter = c.redactText(f.Reason).MapStrings(func(s string) string { return mask(s, sigs) }), f.RetryAfter
		o.Final = f.Blocked() || c.kind.Classify(f) != kind.Retry
		o.Busy = overloaded(f)
		if len(f.Recipients) > 0 {
			o.Response = strings.TrimSpace(o.Response + "\nnot taken: " + strings.Join(f.Recipients, ", "))
			r.remaining.Store(d.ID, owed{d.Attempt, f.Recipients})
		}
	case errors.As(err, &ie):
		// The stored channel cannot be sent to (a bug, or a row written
		// by hand): no retry helps.
		o.Error, o.Final = deskkit.Textf("the stored channel is malformed: %s", ie), true
	default:
		o.Error = deskkit.Textf("the message could not be sent")
		r.cfg.Logger.ErrorContext(ctx, "channel: send", slog.Int64("channel", c.ID), slog.Any("error", err))
	}
	return o
}

// owed is what an e-mail attempt did not deliver, from the attempt to its
// record (ChannelRegistry.remaining, by delivery id). The record reads it
// without taking it, so that a record retried after a deadlock reads it
// again; the delivery's next attempt or its success removes it.
type owed struct {
	attempt    int
	recipients []string
}

// redact replaces with "***", in text a far end sent or that quotes it (a
// reply's body, a failure's reason), what the channel's address and secret
// hold that the far end might echo, as MaskAddress hides it: the secret;
// for a webhook the address, its path and query together (a server's
// "Cannot POST /hook?token=..."), its query, its path, its long path
// segments (tokens) and each query value; for a robot each query value
// (its key or access_token); an e-mail list whole. Each is masked in every spelling:
// as the address writes it, percent-decoded (path and form decoding), and
// percent-encoded (either case of hex). The longest go first, so that a
// path and query echoed whole become one "***". The worker masks with the
// list it makes once per version of a channel (opened.redact).
func redact(text string, c storedChannel) string {
	if text == "" {
		return ""
	}
	return mask(text, redactions(c))
}

// mask replaces each of parts (redactions: the longest first) in text with
// "***".
func mask(text string, parts []string) string {
	for _, s := range parts {
		if strings.Contains(text, s) {
			text = strings.ReplaceAll(text, s, masked)
		}
	}
	return text
}

// minRedacted is the shortest text redact masks: a shorter part of an
// address ("/", "a=1") is no secret, and masking it would garble replies.
const minRedacted = 4

// redactions are the texts redact masks for c, longest first.
func redactions(c storedChannel) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if len(s) >= minRedacted && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	// spell adds s as written, decoded and encoded.
	spell := func(s string) {
		if len(s) < minRedacted {
			return
		}
		forms := []string{s}
		if d, err := url.PathUnescape(s); err == nil {
			forms = append(forms, d)
		}
		if d, err := url.QueryUnescape(s); err == nil {
			forms = append(forms, d)
		}
		for _, f := range forms[:len(forms):len(forms)] {
			forms = append(forms, url.QueryEscape(f), url.PathEscape(f))
		}
		for _, f := range forms {
			add(f)
			if strings.Contains(f, "%") {
				add(lowerHex(f))
				add(upperHex(f))
			}
		}
	}
	spell(c.Secret)
	spell(strings.TrimPrefix(c.Secret, "whsec_"))
	spell(c.Previous)
	spell(strings.TrimPrefix(c.Previous, "whsec_"))
	spell(c.Key)
	spell(strings.TrimPrefix(c.Key, "whsk_"))
	spell(c.PreviousKey)
	spell(strings.TrimPrefix(c.PreviousKey, "whsk_"))
	for _, part := range kindOf(c.Type).Hidden(c.Address) {
		spell(part)
	}
	// Custom headers' values may be secrets (a token after "Bearer "):
	// each value, and each of its space-separated parts of 16 bytes or
	// more, as a far end might echo it.
	for _, h := range c.Headers {
		spell(h.Value)
		for part := range strings.FieldsSeq(h.Value) {
			if len(part) >= 16 {
				spell(part)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// lowerHex and upperHex write the hex digits of s's percent-escapes in one
// case: "%2B" and "%2b" are the same byte.
func lowerHex(s string) string { return caseHex(s, unicode.ToLower) }
func upperHex(s string) string { return caseHex(s, unicode.ToUpper) }

func caseHex(s string, to func(rune) rune) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = byte(to(rune(b[i+1]))), byte(to(rune(b[i+2])))
			i += 2
		}
	}
	return string(b)
}

// Recorded keeps the channels' failure clocks in the transaction that
// records a flush of attempts: a success resets its channel's clock; a
// failure starts it (if it had not) and counts one more failed attempt,
// and disables the channel when it has failed for Config.DisableAfter with
// at least Config.DisableMinFailures failed attempts, or at once on a
// webhook's 410. An e-mail attempt that some addresses did not take leaves
// those addresses, alone, for the next attempt; a success clears them, so
// that a resend goes to every address. The successes of a flush reset
// their channels in one statement, which changes (and locks) only the
// channels whose clocks run, and which is not sent at all when none of
// the flush's channels had its clock running when its batch was opened
// (the versions its claim read say so) or a failure since: the usual flush
// of a healthy channel costs no statement here. A clock another replica
// started after that read is reset by a success of the next batch. The
// failures are kept channel by channel, in
// the order of the channels' ids, so that two flushes never lock two
// channels in opposite orders.
func (h *handler) Recorded(ctx context.Context, tx bun.Tx, done []outbox.Result) error {
	r := (*ChannelRegistry)(h)
	var (
		reset    []any
		failures []outbox.Result
		// lastOK is where each channel's last success of the flush is: a
		// failure before it was made good by it.
		lastOK = map[channelKey]int{}
	)
	for i, res := range done {
		if res.Outcome.OK {
			lastOK[channelKey{res.Delivery.TenantID, res.Delivery.TargetID}] = i
		}
	}
	for i, res := range done {
		d, o := res.Delivery, res.Outcome
		ok, succeeded := lastOK[channelKey{d.TenantID, d.TargetID}]
		switch {
		case o.OK:
			r.remaining.Delete(d.ID)
			if d.Payload != "" {
				// Every address has the event now: a resend goes to all.
				if err := outbox.SetPayload(ctx, tx, d.ID, ""); err != nil {
					return err
				}
			}
			if k := (channelKey{d.TenantID, d.TargetID}); ok == i && r.chans.isFailing(k) {
				reset = append(reset, bun.Tuple([]any{d.TenantID, d.TargetID}))
			}
		case o.Error.Key() == reasonDeleted.Key() || o.Error.Key() == reasonDisabled.Key():
		default:
			if err := r.keepOwed(ctx, tx, d); err != nil {
				return err
			}
			if !succeeded || i > ok {
				failures = append(failures, res)
			}
		}
	}
	if len(reset) > 0 {
		if _, err := tx.NewUpdate().Table("deskkit_channels").
			Set("failing_since_ms = NULL").
			Set("failed_attempts = 0").
			Set("failing_event_ms = NULL").
			Set("last_failure_status = NULL, last_failure_error = NULL, last_failure_error_json = NULL").
			Where("(tenant_id, id) IN (?) AND failed_attempts <> 0", bun.List(reset)).
			Exec(ctx); err != nil {
			return err
		}
	}
	slices.SortStableFunc(failures, func(a, b outbox.Result) int {
		return cmp.Or(cmp.Compare(a.Delivery.TenantID, b.Delivery.TenantID), cmp.Compare(a.Delivery.TargetID, b.Delivery.TargetID))
	})
	for _, res := range failures {
		if err := r.countFailure(ctx, tx, res.Delivery, res.Outcome); err != nil {
			return err
		}
	}
	return nil
}

// keepOwed leaves, for the next attempt of a failed e-mail delivery, the
// addresses the attempt did not reach.
func (r *ChannelRegistry) keepOwed(ctx context.Context, tx bun.Tx, d outbox.Delivery) error {
	v, ok := r.remaining.Load(d.ID)
	if !ok || v.(owed).attempt != d.Attempt {
		return nil
	}
	b, _ := json.Marshal(v.(owed).recipients)
	return outbox.SetPayload(ctx, tx, d.ID, string(b))
}

// countFailure counts a failed attempt on its channel's failure clock (a
// failure the flush's later success on the channel made good is not
// counted), and disables the channel when the clock says so.
func (r *ChannelRegistry) countFailure(ctx context.Context, tx bun.Tx, d outbox.Delivery, o outbox.Outcome) error {
	now := r.cfg.Now()
	var st []struct {
		Since  int64  `bun:"failing_since_ms"`
		N      int    `bun:"failed_attempts"`
		Type   Type   `bun:"channel_type"`
		Name   string `bun:"name"`
		Raised *int64 `bun:"failing_event_ms"`
	}
	var status *int
	if o.StatusCode != 0 {
		status = &o.StatusCode
	}
	errEnglish, errJSON := outbox.StoredText(o.Error)
	err := tx.NewRaw(`UPDATE deskkit_channels
SET failing_since_ms = COALESCE(failing_since_ms, ?), failed_attempts = failed_attempts + 1,
  last_failure_status = ?, last_failure_error = ?, last_failure_error_json = ?
WHERE tenant_id = ? AND id = ? AND enabled
RETURNING failing_since_ms, failed_attempts, channel_type, name, failing_event_ms`,
		now.UnixMilli(), status, errEnglish, errJSON, d.TenantID, d.TargetID).Scan(ctx, &st)
	if err != nil || len(st) == 0 {
		return err
	}
	r.chans.setFailing(channelKey{d.TenantID, d.TargetID}, true)
	s := st[0]
	failing := now.Sub(time.UnixMilli(s.Since))
	var c disableCause
	switch {
	case kindOf(s.Type).Classify(&notify.Failure{Status: o.StatusCode}) == kind.Disable:
		c = disableCause{cause: causeGone}
	case failing >= r.cfg.DisableAfter && s.N >= r.cfg.DisableMinFailures:
		c = disableCause{cause: causeFailures, failing: failing, attempts: s.N, lastError: o.Error}
	case failing >= r.cfg.FailingAfter && s.Raised == nil:
		return r.raiseFailing(ctx, tx, d.TenantID, d.TargetID, s.Name, time.UnixMilli(s.Since), s.N, o.StatusCode, o.Error)
	default:
		return nil
	}
	_, err = r.disable(ctx, tx, d.TenantID, d.TargetID, c, nil)
	return err
}

// disable disables the tenant's enabled channel id through tx, for cause
// c, by actor (nil: deskkit itself); last is, for a channel disabled for
// its failures, the last attempt's error. Its pending deliveries end
// FAILED ("channel disabled"), and channel.disabled is published to the
// tenant's other enabled channels. It reports false, and does nothing,
// when the channel is not there or already disabled.
//
// The reason is stored as its English (disabled_reason: what an older
// deskkit reads, and the event's reason) and as its key and arguments
// (disabled_reason_json), which List and Get write in their reader's
// language.
func (r *ChannelRegistry) disable(ctx context.Context, tx bun.IDB, tenantID, id int64, c disableCause, actor *deskkit.Actor) (bool, error) {
	now := r.cfg.Now()
	msg := c.text()
	reason := msg.String()
	var by *int64 // disabled_by: the user, or NULL for deskkit itself
	if actor != nil {
		by = &actor.ID
	}
	var names []string
	err := tx.NewRaw(`UPDATE deskkit_channels
SET enabled = FALSE, disabled_reason = ?, disabled_reason_json = ?, disabled_at_ms = ?, version = version + 1,
  disabled_by = ?, failing_event_ms = NULL
WHERE tenant_id = ? AND id = ? AND enabled
RETURNING name`, reason, outbox.TextJSON(msg), now.UnixMilli(), by, tenantID, id).Scan(ctx, &names)
	if err != nil || len(names) == 0 {
		return false, err
	}
	if _, err := outbox.FailPending(ctx, tx, tenantID, outboxKind, id, reasonDisabled, now); err != nil {
		return false, err
	}
	title, text := disabledTexts(names[0], actor, msg)
	err = r.Publish(ctx, tx, tenantID, deskkit.Event{
		ID:      deskkit.NewEventID(),
		Type:    EventChannelDisabled,
		Time:    now,
		Heading: title,
		Body:    text,
		Data:    c.data(ChannelDisabledData{ChannelID: id, Name: names[0], Reason: reason, Actor: actor}),
	})
	return err == nil, err
}

// clipRunes cuts s to n runes.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// overloaded says whether f is a sign that the far end is overloaded or
// out of reach, which halves the channel's in-flight limit: 429, 503 and
// 504, no answer at all that may succeed later (a timeout, a refused or
// reset connection, a mail server's temporary refusal), or a robot's rate
// limit or "busy". Other failures (a 500, a 4xx, a refused address) say
// nothing of the endpoint's load.
func overloaded(f *notify.Failure) bool {
	switch {
	case !f.Retryable:
		return false
	case f.Status == http.StatusTooManyRequests, f.Status == http.StatusServiceUnavailable, f.Status == http.StatusGatewayTimeout:
		return true
	case f.Errcode != 0:
		return true // Retryable robot errcodes are the rate limits and "busy"
	}
	return f.Status == 0
}
