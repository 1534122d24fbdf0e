package verify

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/internal/outbox"
	"github.com/deskkit/deskkit/internal/telemetry"
	"github.com/deskkit/deskkit/verify/texts"
)

// Errors the Verifier returns: deskkit's classes, and its own, each also
// matching its class (errors.Is(ErrCodeExpired, deskkit.ErrInvalid)
// holds) and given an error key of its own by httpapi.
var (
	ErrUnauthenticated = deskkit.ErrUnauthenticated // the principal is not valid
	ErrNotFound        = deskkit.ErrNotFound        // the principal's user or tenant is gone
	ErrInvalid         = deskkit.ErrInvalid         // wrapped by every *deskkit.InputError
	ErrConflict        = deskkit.ErrConflict        // a username or address another user has
	ErrRateLimited     = deskkit.ErrRateLimited     // a send or failure limit; *deskkit.RateLimitError

	// ErrCodeWrong: the code does not match; the message says how many
	// attempts are left.
	ErrCodeWrong = deskkit.NewError(deskkit.ErrInvalid, "verify: wrong code",
		"verificationCode is wrong")
	// ErrCodeExpired: the code matched a code that has expired.
	ErrCodeExpired = deskkit.NewError(deskkit.ErrInvalid, "verify: code expired",
		"verificationCode has expired: request a new code")
	// ErrCodeMissing: no usable code was sent for this bizKey and address
	// (never, or it was used, or its send failed). For a code a check used
	// up the message says so, and for BIND_* that its link secret is the proof.
	ErrCodeMissing = deskkit.NewError(deskkit.ErrInvalid, "verify: no code",
		"no code is waiting for this bizKey and address: request one first")
	// ErrCodeExhausted: the code had MaxAttempts wrong checks and is dead.
	ErrCodeExhausted = deskkit.NewError(deskkit.ErrRateLimited, "verify: code exhausted",
		"verificationCode had too many wrong attempts: request a new code")
	// ErrTooManyFailures: the user had Config.FailuresPerDay wrong checks
	// today; it comes with a *deskkit.RateLimitError giving the wait.
	ErrTooManyFailures = deskkit.NewError(deskkit.ErrRateLimited, "verify: too many failed checks",
		"too many wrong codes today: try again later")
	// ErrSendFailed: the SMS gateway or mail server did not accept the
	// message. No usable code is left, and the send's limits are given
	// back (once the database takes it).
	ErrSendFailed = deskkit.NewError(deskkit.ErrUnavailable, "verify: send failed",
		"the message could not be sent: try again later")
	// ErrSendThrottled: the SMS provider refused the message for its rate
	// limits (sms.Error.Throttled). It also matches ErrSendFailed, and is
	// a deskkit.RetryAfterer with the provider's wait.
	ErrSendThrottled = deskkit.NewError(deskkit.ErrUnavailable, "verify: send throttled",
		"the SMS provider is throttling messages: try again later")
	// ErrAddressTaken: another user of the tenant has the address. No code
	// is sent; the attempt counts toward the limits.
	ErrAddressTaken = deskkit.NewError(deskkit.ErrConflict, "verify: address taken",
		"the address belongs to another user")
	// ErrAlreadyBound: BIND_* for a user who has an address of that kind.
	ErrAlreadyBound = deskkit.NewError(deskkit.ErrConflict, "verify: address already bound",
		"you have an address of this kind already: use MODIFY_MOBILE or MODIFY_EMAIL")
	// ErrNotBound: MODIFY_* for a user who has no address of that kind.
	ErrNotBound = deskkit.NewError(deskkit.ErrConflict, "verify: no address to modify",
		"you have no address of this kind to modify: use BIND_MOBILE or BIND_EMAIL")
	// ErrLinkSecret: the link secret is unknown, expired, used, or was not
	// won for this user, bizKey and (for a change) current address.
	ErrLinkSecret = deskkit.NewError(deskkit.ErrForbidden, "verify: link secret refused",
		"linkSecret is not valid: check a code sent to your current address to get one")
)

// Fixed rules of codes and link secrets.
const (
	CodeDigits    = 6
	MaxAttempts   = 5 // wrong checks a code survives
	LinkSecretTTL = 10 * time.Minute
	MaxCodeTTL    = 10 * time.Minute
)

// Defaults of Config.
const (
	DefaultCodeTTL               = 5 * time.Minute
	DefaultResendInterval        = 60 * time.Second
	DefaultSendsPerHour          = 10 // per user and address
	DefaultSendsPerDay           = 20 // per user
	DefaultSendsPerAddressPerDay = 30 // per address, all tenants: above DefaultSendsPerDay
	DefaultFailuresPerDay        = 20 // per user
	MinSecretLength              = 32
)

// How codes, secrets and limits work, in detail (Config's doc comment
// below says the contract):
//
// # Codes and secrets
//
// A code is 6 digits from crypto/rand, valid CodeTTL. It is stored only as
// an HMAC-SHA256 of the code and its context (tenant, user, kind, bizKey,
// address) under a key derived with HKDF from the server secret, compared
// only as such keyed hashes (so the time a comparison takes tells nothing
// about the code), never logged and never returned by the API. A new code
// for the same user, bizKey and address replaces the old one. A successful
// check uses the code up by a guarded update, so of two concurrent checks
// one wins. A code shorter than 6 digits (a JSON number loses leading
// zeros) is padded back. A link secret is 256 random bits, stored as its
// SHA-256 with the keyed hash of the code whose check won it, valid
// LinkSecretTTL, good once.
//
// # Limits
//
// Every limit is kept in the database and taken by one atomic statement (an
// upsert guarded by the limit), so it holds across server replicas and
// parallel requests:
//
//   - one code per (user, bizKey, address) per ResendInterval;
//   - SendsPerHour codes per (user, address) an hour;
//   - SendsPerAddressPerDay codes per address a day, from all users of all
//     tenants together;
//   - SendsPerDay codes per user a day, refused sends included: a send
//     refused for an address another user holds counts toward the user's
//     day only (counting it against the address would let anyone block its
//     holder's codes);
//   - MaxAttempts wrong checks per code, counted before the comparison,
//     then the code is dead (ErrCodeExhausted);
//   - FailuresPerDay wrong checks per user across codes
//     (ErrTooManyFailures). A check holds this limit's row before it
//     compares (checks of one user queue there, and none compares once the
//     limit is reached) and takes a unit only for a wrong code.
//
// Windows are fixed and open with their first event: "10 an hour" is at
// most 10 in the hour that starts with the first of them. Checks of an
// expired, unknown or dead code are refused without counting as failures:
// they compare nothing. A send refused by a limit answers a
// *deskkit.RateLimitError with the time to wait.
//
// The interval and the hour are each user's own, so one user's sends never
// block another's codes. The address's day is what keeps many accounts, or
// many tenants, from flooding one phone or mailbox (SMS pumping): it is one
// count per address across every tenant, kept under an HMAC-SHA256 of the
// address (e-mail folded to lower case) with a key derived by HKDF from the
// server secret, so the table shared by tenants holds no address and
// nothing to join one tenant's rows to another's. A rotation of the secret
// starts those counts afresh. The cap has no exception, not even for the
// user who holds the address: an address in a host's directory is not
// always proved (an administrator may set it), so holders made up for the
// purpose could otherwise flood it SendsPerDay a day each. With
// SendsPerAddressPerDay above SendsPerDay, using up an address's day takes
// at least two accounts; examples/server/README.md (Trash and verification
// in detail) works out an attacker's budget with the defaults.

// Config holds the Verifier's optional settings; nil means all defaults.
//
// Every limit is kept in the database and taken by one atomic statement,
// so it holds across replicas and parallel requests. Windows are fixed and
// open with their first event; a refused send answers a
// *deskkit.RateLimitError with the wait. The address's day counts its
// holder too.
type Config struct {
	// PreviousSecret is the secret before the last rotation, if any:
	// codes in flight still pass a check. Drop it after MaxCodeTTL.
	PreviousSecret []byte
	// CodeTTL is how long a code is valid: DefaultCodeTTL if 0, at most
	// MaxCodeTTL.
	CodeTTL time.Duration
	// The limits; each is its Default* constant if 0.
	ResendInterval        time.Duration // one code per (user, bizKey, address) within it
	SendsPerHour          int           // codes per (user, address) an hour
	SendsPerAddressPerDay int           // codes per address a day, all users of all tenants; above SendsPerDay, or one account uses it up
	SendsPerDay           int           // codes per user a day, refused sends included
	FailuresPerDay        int           // wrong codes per user a day, across codes
	// Templates override the English messages of some bizKeys, Notice
	// the notice to the old address after a change (see package
	// verify/texts, which says which language a message is in).
	Templates map[BizKey]texts.Template
	Notice    *texts.Template
	// Locales holds the templates of other languages, by BCP 47 tag
	// ("zh-CN", "ja"): an entry for zh-CN overrides the shipped ones field
	// by field; another tag adds a language. SMS.Locale is the chosen
	// one ("en", "zh-CN"), "" without a language in the context.
	Locales map[string]LocaleTemplates
	// Messages writes the templates' Purpose ("change your mobile
	// number") in their language: the shipped catalogues if nil, or a
	// host's with the purposes of the languages it adds.
	Messages *deskkit.Messages
	// AppName is the sender's name in messages; "deskkit" if "".
	AppName string
	// Publisher, if set, gets the events of contact changes (EventTypes)
	// inside the change's transaction. New fails if it is a
	// deskkit.EventTypeChecker that lacks one of the types.
	Publisher deskkit.Publisher
	// Logger gets failed notices; slog.Default if nil. Codes and secrets
	// are never logged.
	Logger *slog.Logger
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// MeterProvider and TracerProvider (the global ones if nil) record,
	// under the scope github.com/deskkit/deskkit/verify, a span per
	// operation ("verify.SendSMS", ...; status Error on failure, with
	// deskkit.result); the counters deskkit.verify.codes.sent (per SendSMS
	// or SendEmail call) and deskkit.verify.codes.checked (per CheckSMS or
	// CheckEmail call), by deskkit.channel (sms, email) and deskkit.result
	// ("ok", or httpapi's error key: too_many_requests, ...); and
	// deskkit.verify.rate_limited, per refusal of a limit, by deskkit.limit
	// (resend_interval, per_hour, per_address_per_day, per_day,
	// failures_per_day). A notice's attempt is a span "verify.notice" and
	// counts in the outbox's deskkit.deliveries with deskkit.channel.type
	// verify.notice.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// PlainStatements is for a db that goes through a pooler keeping no
	// session, such as PgBouncer in transaction mode: the notice worker
	// prepares no statement (its claim and flush keep their plans in
	// functions Migrate defines), and Run LISTENs only on ListenDB. db must
	// then set no session parameter of its own, and Migrate runs on a
	// direct connection (it holds a session's advisory lock).
	PlainStatements bool
	// ListenDB, if set, is a direct pool to the PostgreSQL of db that Run
	// LISTENs on for committed notices. Without it, Run listens on db,
	// or with PlainStatements not at all: its worker then finds the
	// notices of other processes by its once-a-second look.
	ListenDB *bun.DB
}

// withDefaults returns a copy of c (nil: of the zero Config) with the
// defaults filled in. New calls it, then validate on the copy, as every
// constructor of the module does.
func (c *Config) withDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.CodeTTL == 0 {
		out.CodeTTL = DefaultCodeTTL
	}
	if out.ResendInterval == 0 {
		out.ResendInterval = DefaultResendInterval
	}
	if out.SendsPerHour == 0 {
		out.SendsPerHour = DefaultSendsPerHour
	}
	if out.SendsPerDay == 0 {
		out.SendsPerDay = DefaultSendsPerDay
	}
	if out.SendsPerAddressPerDay == 0 {
		out.SendsPerAddressPerDay = DefaultSendsPerAddressPerDay
	}
	if out.FailuresPerDay == 0 {
		out.FailuresPerDay = DefaultFailuresPerDay
	}
	if out.AppName == "" {
		out.AppName = "deskkit"
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Messages == nil {
		// The shipped catalogues: NewMessages fails only on a host's.
		out.Messages, _ = deskkit.NewMessages()
	}
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	switch {
	case c.CodeTTL < time.Second || c.CodeTTL > MaxCodeTTL:
		return fmt.Errorf("verify: CodeTTL must be between 1s and %s", MaxCodeTTL)
	case c.ResendInterval < 0:
		return errors.New("verify: ResendInterval must not be negative")
	case c.SendsPerHour < 0 || c.SendsPerDay < 0 || c.SendsPerAddressPerDay < 0 || c.FailuresPerDay < 0:
		return errors.New("verify: SendsPerHour, SendsPerDay, SendsPerAddressPerDay and FailuresPerDay must not be negative")
	case c.PreviousSecret != nil && len(c.PreviousSecret) < MinSecretLength:
		return fmt.Errorf("verify: PreviousSecret must be at least %d bytes", MinSecretLength)
	}
	return checkPublisher(c.Publisher)
}

// checkPublisher refuses a publisher that says (deskkit.EventTypeChecker)
// it does not know one of the Verifier's event types: an operation that
// publishes would otherwise fail at its publish. A publisher that cannot
// say is taken on trust.
func checkPublisher(p deskkit.Publisher) error {
	if name := deskkit.UnknownEventType(p, EventTypes()); name != "" {
		return fmt.Errorf("verify: the publisher does not know event type %s: call ChannelRegistry.RegisterEventTypes(verify.EventTypes()...) before verify.New", name)
	}
	return nil
}

// Verifier sends and checks verification codes for the current user, and
// changes the user's profile and contact addresses. It is safe for
// concurrent use, also by several processes sharing one database.
type Verifier struct {
	db       *bun.DB
	postgres bool // else SQLite: no data-modifying WITH
	dir      Directory
	sms      SMSSender
	mail     deskkit.Mailer
	cfg      Config
	codeKeys [][]byte // current key first, then the previous secret's
	// addressKey keys the hash that names an address in the limit all
	// tenants share; from the current secret only, so a rotation starts
	// those counts afresh.
	addressKey []byte
	templates  templates
	// notices is the worker that sends notices (Run); a change wakes it.
	notices *outbox.Worker
	runs    atomic.Int32 // Runs running
	// settles holds the outcomes of sends that the database could not
	// take at the time, for Run to record.
	settles *settleQueue

	ops telemetry.Ops
	tel instruments
}

// How New checks the schema, in detail (the doc comment below says the contract):
//
// New checks, after its arguments, that Migrate has run: one catalog query
// for the Verifier's and the outbox's tables, bounded by 5 seconds of its
// own (New takes no context). A missing table is an error naming the call
// that creates it ("verify.New: table deskkit_verify_codes does not exist:
// run verify.Migrate(ctx, db) first"); a database that does not answer in
// time, or fails, is an error of its own that wraps the database's
// (context.DeadlineExceeded for the bound) and says nothing of migrating.

// New returns a Verifier over db, whose schema Migrate has created, with
// the host's user directory, the senders of SMS and e-mail, and secret, the
// server secret (at least MinSecretLength random bytes) from which the key
// that hashes codes is derived. New checks that Migrate has run, in at
// most 5 seconds: a missing table is an error naming verify.Migrate.
func New(db *bun.DB, dir Directory, sms SMSSender, mail deskkit.Mailer, secret []byte, cfg *Config) (*Verifier, error) {
	switch {
	case db == nil:
		return nil, errors.New("verify: db is required")
	case dir == nil:
		return nil, errors.New("verify: dir is required")
	case sms == nil || mail == nil:
		return nil, errors.New("verify: an SMSSender and a Mailer are required (logsender.Sender is both)")
	case len(secret) < MinSecretLength:
		return nil, fmt.Errorf("verify: secret must be at least %d bytes", MinSecretLength)
	}
	d, err := migrate.DialectOf(db)
	if err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	ts, err := newTemplates(c.Templates, c.Notice, c.Locales)
	if err != nil {
		return nil, err
	}
	if err := migrate.Check(db, "verify.New", "verify.Migrate", tables, outbox.Migrations, migrations); err != nil {
		return nil, err
	}
	if c.ListenDB != nil && !d.Postgres {
		return nil, errors.New("verify: Config.ListenDB is for PostgreSQL; SQLite has no LISTEN")
	}
	v := &Verifier{db: db, postgres: d.Postgres, dir: dir, sms: sms, mail: mail, cfg: *c, templates: ts, settles: newSettleQueue()}
	v.ops, v.tel = newTelemetry(*c)
	for _, s := range [][]byte{secret, c.PreviousSecret} {
		if s == nil {
			continue
		}
		key, err := hkdf.Key(sha256.New, s, nil, "deskkit verify code v1", 32)
		if err != nil {
			return nil, fmt.Errorf("verify: derive key: %w", err)
		}
		v.codeKeys = append(v.codeKeys, key)
	}
	v.addressKey, err = hkdf.Key(sha256.New, secret, nil, "deskkit verify address v1", 32)
	if err != nil {
		return nil, fmt.Errorf("verify: derive key: %w", err)
	}
	if v.notices, err = v.newNoticeWorker(nil); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return v, nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// tables are the tables Migrate creates, which New checks for.
var tables = slices.Concat([]string{"deskkit_verify_codes", "deskkit_verify_links", "deskkit_verify_limits"}, outbox.Tables)

// What Migrate moves, in detail (the doc comment below says the contract):
//
// Before the outbox, notices were kept in a table of their own, read
// without claiming, so that the send after the commit, a ticker and every
// replica could each send the same notice; Migrate moves the notices still
// in that table into the outbox, their attempts counted, and drops it.

// Migrate creates or updates the Verifier's tables (deskkit_verify_codes,
// _links, _limits and the deskkit_verify_migrations bookkeeping) and the
// module's outbox (the deskkit_outbox_ tables), which keeps the notices to
// old addresses. It is safe to run from several processes at once.
func Migrate(ctx context.Context, db *bun.DB) error {
	if err := outbox.Migrate(ctx, db); err != nil {
		return err
	}
	return migrate.Run(ctx, db, migrations.Table, migrations.FS)
}

// migrations is what Migrate applies after the outbox's, and New checks.
var migrations = migrate.Set{Table: "deskkit_verify_migrations", FS: migrationFiles}

// now is the clock in Unix milliseconds, the unit of the tables.
func (v *Verifier) now() int64 { return v.cfg.Now().UnixMilli() }

// user returns the principal's user, checking the principal first.
func (v *Verifier) user(ctx context.Context, p deskkit.Principal) (User, error) {
	if !p.Valid() {
		return User{}, ErrUnauthenticated
	}
	u, err := v.dir.User(ctx, p.TenantID, p.UserID)
	if err != nil {
		return User{}, fmt.Errorf("verify: read user %d: %w", p.UserID, err)
	}
	return u, nil
}
