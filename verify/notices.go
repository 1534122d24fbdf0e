package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/outbox"
	"github.com/deskkit/deskkit/verify/texts"
)

// noticeKind is the kind of the outbox's deliveries of notices, and the
// type of their events (an event of its own, never a public type: nothing
// subscribes to it).
const noticeKind = "verify.notice"

// noticeSchedule is the delay before each attempt to send a notice to an
// old address: the first at once after the change commits, the others
// after each failure the sender says may pass later (noticeRetry), each
// spread by +-10 %. Five attempts over about two and a half hours; a
// notice that fails all of them, or fails for good, is dropped with an
// error in the log.
var noticeSchedule = []time.Duration{0, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}

// noticeMaxRetryAfter bounds the wait a throttled notice's provider asks
// for (sms.Error.RetryAfter): it lengthens a delay of the schedule to at
// most this, so that the last attempt comes at most about 8 hours after
// the change, not a day later as the outbox's own bound would allow.
const noticeMaxRetryAfter = 2 * time.Hour

const (
	// noticeTimeout bounds one attempt: the sender's own timeout (10 s
	// for the SMTP mailer and the SMS senders) and then some.
	noticeTimeout = 30 * time.Second
	// noticeLease is how long a claimed notice stays its worker's: longer
	// than an attempt can take, so that only a dead worker's notice is
	// sent again.
	noticeLease = 2 * time.Minute
	// noticeConcurrency: notices are few (one per contact change).
	noticeConcurrency = 4
)

// notice is what a notice delivery carries, as JSON in its payload.
type notice struct {
	Kind   Kind   `json:"kind"`
	BizKey BizKey `json:"bizKey"`
	// Address is the old address, where the notice goes.
	Address string `json:"address"`
	// NewAddress is the new address, masked as the notice shows it.
	NewAddress string `json:"newAddress"`
	// Locale is the language of the notice ("zh-CN"): that of the
	// request that made the change; absent, English, with SMS.Locale "".
	Locale string `json:"locale,omitempty"`
}

// enqueueNotice writes the notice of a change to the user's old address
// into the outbox, through tx, the change's transaction.
func (v *Verifier) enqueueNotice(ctx context.Context, tx bun.Tx, u User, n notice) error {
	payload, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("verify: notice: %w", err)
	}
	now := v.cfg.Now()
	ev := outbox.Event{
		TenantID: u.TenantID,
		ID:       deskkit.NewEventID(),
		Type:     noticeKind,
		Time:     now,
		Title:    "Notice of a changed " + noticePurpose(n.Kind).String(),
		Data:     json.RawMessage("{}"),
	}
	// A notice is rare (one per contact change): its statement is not
	// prepared, so its Enqueuer is made for it alone.
	e := outbox.NewEnqueuer(v.db, noticeKind, outbox.OneTarget)
	if _, _, err := e.Enqueue(ctx, tx, ev, []any{u.ID, string(payload)}, now, noticeSchedule[0]); err != nil {
		return fmt.Errorf("verify: notice: %w", err)
	}
	return nil
}

// newNoticeWorker returns a worker of the notices, whose handler adds
// each notice sent to sent if it is not nil.
func (v *Verifier) newNoticeWorker(sent *atomic.Int64) (*outbox.Worker, error) {
	return outbox.NewWorker(v.db, outbox.Config{
		PlainStatements: v.cfg.PlainStatements,
		Kind:            noticeKind,
		Handler:         noticeHandler{v: v, sent: sent},
		Concurrency:     noticeConcurrency,
		Lease:           noticeLease,
		Schedule:        noticeSchedule,
		Now:             v.cfg.Now,
		Logger:          v.cfg.Logger,

		MeterProvider:  v.cfg.MeterProvider,
		TracerProvider: v.cfg.TracerProvider,
		SpanName:       "verify.notice",
	})
}

// noticeCommitted gets a notice that a change committed sent: if Run runs
// in this process, its worker is woken and the change answers at once;
// otherwise the notice is claimed and sent now, before the change
// answers, as a worker would (so never twice). On PostgreSQL the NOTIFY
// of the enqueue wakes the workers of other processes as well.
func (v *Verifier) noticeCommitted(ctx context.Context) {
	if v.runs.Load() > 0 {
		v.notices.Wake()
		return
	}
	if _, err := v.notices.RunOnce(ctx); err != nil {
		v.cfg.Logger.ErrorContext(ctx, "verify: send notices", slog.Any("error", err))
	}
}

// How Run works, in detail (the doc comment below says the contract):
//
// listenDB is the pool Run listens on: Config.ListenDB, else v's own
// unless Config.PlainStatements is set, else none.
func (v *Verifier) listenDB() *bun.DB {
	if v.cfg.ListenDB != nil {
		return v.cfg.ListenDB
	}
	if v.cfg.PlainStatements {
		return nil
	}
	return v.db
}

// Run sends the notices to old addresses, and records the outcomes of
// code sends that the database could not take when they ended (see
// SendSMS), until ctx is done. It claims each due notice before it sends
// it, so that replicas running Run, and SendNotices, never send one twice
// (see SendNotices), and it looks for due notices when a change commits:
// a change wakes the worker of its own process and answers at once; on
// PostgreSQL (over bun's pgdriver) the outbox's NOTIFY, delivered at
// commit, wakes those of every other process over the same database too
// (LISTEN/NOTIFY); and each worker looks for due notices once a second
// besides. A notice is sent through the SMSSender or the Mailer; success
// is the sender's acceptance. While Run runs, a change answers without waiting
// for its notice; without it, the change sends its notice itself (claimed
// as Run would) before it answers, and a notice whose send failed waits
// for SendNotices. When ctx is done Run claims nothing new, finishes the
// sends in flight (each bounded by 30 s), stops retrying outcomes, and
// returns nil; the error is for what a later version may refuse at the
// start. One Run per process is enough.

// Run sends the notices to old addresses, and records the outcomes of
// code sends that the database could not take (see SendSMS), until ctx is
// done; one per process is enough. It claims each due notice, so none is
// sent twice. A committed change wakes it (on PostgreSQL, by NOTIFY, in
// every process), and it looks once a second besides. While Run runs, a
// change answers without waiting for its notice; without it, the change
// sends its notice itself before it answers. When ctx is done Run
// finishes the sends in flight (each bounded by 30 s) and returns nil.
func (v *Verifier) Run(ctx context.Context) error {
	v.runs.Add(1)
	defer v.runs.Add(-1)
	var wg sync.WaitGroup
	if ldb := v.listenDB(); ldb != nil {
		wg.Go(func() { outbox.Listen(ctx, ldb, v.cfg.Logger, v.notices) })
	}
	wg.Go(func() { v.runSettles(ctx) })
	v.notices.Run(ctx)
	wg.Wait()
	return nil
}

// How notices are claimed and retried, in detail (the doc comment below says the contract):
//
// Every send first claims its notice: on PostgreSQL with FOR UPDATE SKIP
// LOCKED, on SQLite under its single writer, with a lease of 2 minutes (an
// attempt is bounded by 30 s). So of two replicas running Run and a ticker
// calling SendNotices, exactly one sends a notice; only a process that dies
// in the middle of a send leaves its notice to be sent again when the
// lease ends (at least once, never lost).
//
// The schedule: five attempts, at once and then 1 minute, 5 minutes, 30
// minutes and 2 hours after each failure (+-10 %, so that notices that
// failed together are not all sent again at the same instant; a provider's
// RetryAfter, up to 2 hours, waits longer), each logged as a warning; the
// fifth failure drops the notice with an error in the log, and so does the
// first that the sender says is final (an *sms.Error not Retryable, an SMTP
// 5xx): the outbox records it FAILED with the cause. Purge deletes notices
// a day after they were sent or dropped, attempts included.

// SendNotices sends the notices to old addresses that are due now (their
// first send failed and their next is due, or no process ran Run), until
// none is left, and returns how many went out. It claims each notice as
// Run does, so hosts may call it from a scheduler of their own instead of
// running Run, or besides it. Like Run, it first records the outcomes of
// code sends that the database could not take when they ended.
//
// A notice is tried up to five times over about two and a half hours (a
// provider's RetryAfter waits longer), and dropped, logged, after its
// fifth failure or a final one (an *sms.Error not Retryable, an SMTP 5xx).
func (v *Verifier) SendNotices(ctx context.Context) (int, error) {
	ctx, call := v.ops.Start(ctx, "verify.SendNotices", "")
	v.retrySettles(ctx)
	r, err := v.sendNotices(ctx)
	call.End(err)
	return r, err
}

func (v *Verifier) sendNotices(ctx context.Context) (int, error) {
	var sent atomic.Int64
	w, err := v.newNoticeWorker(&sent)
	if err != nil {
		return 0, err
	}
	for {
		n, err := w.RunOnce(ctx)
		if err != nil {
			return int(sent.Load()), fmt.Errorf("verify: send notices: %w", err)
		}
		if n == 0 {
			return int(sent.Load()), nil
		}
	}
}

// noticeHandler sends notices for the outbox's worker.
type noticeHandler struct {
	v    *Verifier
	sent *atomic.Int64 // nil, or what counts the notices sent
}

func (h noticeHandler) Open(context.Context, []outbox.Delivery) (func(context.Context, outbox.Delivery) outbox.Outcome, error) {
	return h.attempt, nil
}

// attempt sends one notice: success is the sender's acceptance.
func (h noticeHandler) attempt(ctx context.Context, d outbox.Delivery) outbox.Outcome {
	log := h.v.cfg.Logger
	var n notice
	if err := json.Unmarshal([]byte(d.Payload), &n); err != nil || n.Address == "" {
		// Written by nothing but enqueueNotice and the migration.
		log.ErrorContext(ctx, "verify: notice dropped: its payload is malformed", slog.Int64("delivery", d.ID))
		return outbox.Outcome{Error: deskkit.Textf("the notice's payload is malformed"), Final: true}
	}
	ctx, cancel := context.WithTimeout(ctx, noticeTimeout)
	defer cancel()
	err := h.v.deliverNotice(ctx, n)
	if err == nil {
		if h.sent != nil {
			h.sent.Add(1)
		}
		return outbox.Outcome{OK: true}
	}
	attrs := []any{slog.Int64("delivery", d.ID), slog.String("to", mask(n.Kind, n.Address)),
		slog.Int("attempt", d.Attempt), slog.Any("error", err)}
	retry, wait := noticeRetry(err)
	switch {
	case !retry:
		log.ErrorContext(ctx, "verify: notice dropped: the sender refused it for good", attrs...)
		return outbox.Outcome{Error: deskkit.Textf("the sender refused the notice for good, not retried: %s", err.Error()), Final: true}
	case d.Attempt >= len(noticeSchedule):
		log.ErrorContext(ctx, "verify: notice dropped after failed attempts", attrs...)
		return outbox.Outcome{Error: deskkit.Textf("the sender did not accept the notice at any of %d attempts; the last: %s", d.Attempt, err.Error())}
	}
	log.WarnContext(ctx, "verify: notice not sent; it is sent again later", append(attrs, slog.Duration("retryAfter", wait))...)
	return outbox.Outcome{Error: deskkit.Textf("the sender did not accept the notice: %s", err.Error()), RetryAfter: wait}
}

// smtpReply is go-mail's *SendError as the smtp package's Mailer returns it, without
// importing go-mail here.
type smtpReply interface {
	error
	ErrorCode() int // the server's reply code; 0 when it said nothing
	IsTemp() bool
}

// noticeRetry says whether a notice whose sender answered err may be
// accepted at a later attempt, and how long the far end asked to wait:
//
//   - an *sms.Error (from the senders of package sms's subpackages, or a
//     host's sender that returns one) by its Retryable, its RetryAfter bounded by
//     noticeMaxRetryAfter: a refused key, template or number, or a daily
//     limit, ends the notice at once;
//   - an SMTP reply (the smtp package's Mailer) by its code: 4xx is temporary, 5xx
//     final;
//   - any other error, a transport's (a timeout, a refused connection) or
//     one that says nothing of itself (a host's sender), is retried on the schedule, which is bounded:
//     telling an outage from a refusal is not possible there, and a notice
//     of a changed address is worth four more attempts.
func noticeRetry(err error) (bool, time.Duration) {
	if se, ok := errors.AsType[smsRefusal](err); ok {
		retryable, _, wait := se.SMSRefusal()
		return retryable, min(wait, noticeMaxRetryAfter)
	}
	if sr, ok := errors.AsType[smtpReply](err); ok && sr.ErrorCode() != 0 {
		return sr.IsTemp(), 0
	}
	return true, 0
}

// Recorded keeps nothing besides the outbox.
func (noticeHandler) Recorded(context.Context, bun.Tx, []outbox.Result) error {
	return nil
}

func (v *Verifier) deliverNotice(ctx context.Context, n notice) error {
	set := v.templates.forLocale(n.Locale)
	msg, err := set.notice.render(texts.Data{AppName: v.cfg.AppName, BizKey: string(n.BizKey),
		Purpose: noticePurpose(n.Kind).LocalizedMessage(v.cfg.Messages, set.tag), NewAddress: n.NewAddress})
	if err != nil {
		return err
	}
	if n.Kind == KindSMS {
		return v.sms.SendSMS(ctx, SMS{To: n.Address, Text: msg.SMS, BizKey: n.BizKey, NewAddress: n.NewAddress, Locale: n.Locale})
	}
	return v.mail.SendMail(ctx, deskkit.Mail{To: n.Address, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML, BizKey: string(n.BizKey)})
}
