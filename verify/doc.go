// Package verify lets the signed-in user prove that they receive messages
// at an address, and change their profile and contact addresses, the
// latter only with that proof.
//
// # Overview
//
// A Verifier is built by New over the library's tables (Migrate), the
// host's user store (a Directory), a sender of text messages (SMSSender)
// and of e-mail (deskkit.Mailer), and the server secret. The senders here are
// real: SMTPMailer (SMTP through github.com/wneessen/go-mail),
// HTTPSMSSender (a JSON POST to the host's gateway), TwilioSMSSender
// (Twilio's REST API), AliyunSMSSender and TencentSMSSender (Alibaba Cloud
// and Tencent Cloud SMS, which send approved templates; see Template
// providers), and LogSender for development. httpapi mounts a
// Verifier under /api/v1/user/current.
//
// The flow is always send, then check:
//
//	SendSMS / SendEmail   a code for a bizKey goes to an address
//	CheckSMS / CheckEmail the code comes back; the answer is a link secret
//	ChangeMobile / ChangeEmail, or Redeem   the link secret is spent
//
// Every bizKey of the source system's API is accepted (SMSBizKeys, EmailBizKeys), each
// its own namespace of codes: a SIGNIN code never passes a check for
// MODIFY_MOBILE. The Verifier acts on four of them itself; the link
// secret of any other is redeemed by the host for its own flow (a
// password change after PASSWORD_UPDATE) with Redeem, inside the host's
// transaction if it likes.
//
// The package's Example sends a code, checks it for a link secret and
// redeems the secret for a flow of the host's own; ExampleVerifier_Run
// shows a host running the worker that sends notices to old addresses.
// The rules follow.
//
// # Proof before a contact change
//
// Send and check take an address that is the user's own or one no other
// user of the tenant holds; an address held by someone else is
// ErrAddressTaken (409), nothing is sent, and the attempt counts toward
// the user's daily limit, so the endpoint cannot be used to find out who
// holds which address faster than that limit allows.
//
// MODIFY_MOBILE and MODIFY_EMAIL take two proofs: a code sent to the
// current address, checked for a link secret, and a code sent to the new
// address. The change carries both, and is refused (ErrLinkSecret) unless
// the secret was won for this user, this bizKey and the address that is
// the user's current one when the change commits: a secret won by
// checking some other, unheld address proves nothing. The code is checked
// first, in the transaction that spends the secret and writes the new
// address through the Directory, so a typo in the code does not burn the
// secret, and a refused change (an address taken meanwhile) spends
// neither. BIND_MOBILE and BIND_EMAIL are for a user with no address of
// that kind (ErrAlreadyBound otherwise; MODIFY_* without one is
// ErrNotBound): one proof of the new address is enough, either the code
// sent to it, or, when the client checked that code first (send, then
// check, as for every bizKey), the link secret the check answered, since
// the check used the code up. Such a secret passes only for the user and
// tenant it was won by, the same bizKey and the same new address, once;
// a change that is refused leaves it unspent. A client that checked first
// holds both and may send both (the source system's body has both
// fields): the pair passes when the secret is the one that checking this
// very code for this address answered. The secret remembers the keyed
// hash of the code whose check won it, and the change compares the code
// with that hash; it does not check the code again, since the check used
// it up, so the code is consumed once, by the check, and the pair spends
// only the secret. A pair that does not belong together (another code, a
// secret won elsewhere, by another user, unknown, spent or expired) is an
// input error on linkSecret that spends nothing and counts no failure
// (the secret alone would have been proof enough), and a replay is
// refused: ErrAlreadyBound, or, if the address went meanwhile, the spent
// secret. Secrets won before the hash was kept pass alone only. A change
// with a code that a check used up answers ErrCodeMissing with a message
// that says so and points at the link secret. After a change a notice
// goes to the old address.
//
// Mobile numbers are checked against the country (an ISO 3166-1 region)
// with github.com/nyaruka/phonenumbers, must be able to receive text
// messages, and are stored in E.164, so "+86 138 0013 8000" and
// "13800138000" with CN are one number; itc, when given, must be the
// country's code. phonenumbers runs a dozen regular expressions on every
// number it parses, so its answer for a number as written and its region
// is kept in a bounded cache (two generations of 4096) shared by the
// process: one number comes back for its send, its check and its change.
// E-mail addresses are bare addresses of at most 100 characters,
// trimmed, their domain in lower case (the local part belongs to the
// receiving system).
//
// # Codes and secrets
//
// A code is 6 digits from crypto/rand, valid Config.CodeTTL (5 minutes;
// at most 10). It is stored only as an HMAC-SHA256 of the code and its
// context (tenant, user, kind, bizKey, address) under a key derived with
// HKDF from the server secret, compared only as such keyed hashes (so the
// time a comparison takes tells nothing about the code), never logged
// and never returned by the API. Config.PreviousSecret keeps codes in
// flight alive across a rotation of the secret. A new code for the same
// user, bizKey and address replaces the old one. A successful check uses
// the code up by a guarded update, so of two concurrent checks one wins.
// A code shorter than 6 digits (a JSON number loses leading zeros) is
// padded back.
//
// A link secret is 256 random bits, stored as its SHA-256 with the keyed
// hash of the code whose check won it, valid LinkSecretTTL (10 minutes),
// good once.
//
// # Limits
//
// Every limit is kept in the database and taken by one atomic statement
// (an upsert guarded by the limit), so it holds across server replicas
// and parallel requests:
//
//   - one code per (user, bizKey, address) per Config.ResendInterval
//     (60 s);
//   - Config.SendsPerHour codes per (user, address) an hour (10);
//   - Config.SendsPerAddressPerDay codes per address a day (30), from all
//     users of all tenants together;
//   - Config.SendsPerDay codes per user a day (20), refused sends
//     included: a send refused for an address another user holds counts
//     toward the user's day only (counting it against the address would
//     let anyone block its holder's codes);
//   - MaxAttempts (5) wrong checks per code, counted before the
//     comparison, then the code is dead (ErrCodeExhausted);
//   - Config.FailuresPerDay (20) wrong checks per user across codes
//     (ErrTooManyFailures). A check holds this limit's row before it
//     compares (checks of one user queue there, and none compares once
//     the limit is reached) and takes a unit only for a wrong code.
//
// Windows are fixed and open with their first event: "10 an hour" is at
// most 10 in the hour that starts with the first of them. Checks of an
// expired, unknown or dead code are refused without counting as failures:
// they compare nothing. A send refused by a limit answers a
// *deskkit.RateLimitError with the time to wait.
//
// The interval and the hour are each user's own, so one user's sends
// never block another's codes. The address's day is what keeps many
// accounts, or many tenants, from flooding one phone or mailbox (SMS
// pumping): it is one count per address across every tenant, kept under
// an HMAC-SHA256 of the address (e-mail folded to lower case) with a key
// derived by HKDF from the server secret, so the table shared by tenants
// holds no address and nothing to join one tenant's rows to another's. A
// rotation of the secret starts those counts afresh.
//
// The budget of an attacker, with the defaults: one account sends at most
// 20 codes a day in all, at most 10 an hour to one address, one a minute
// per bizKey; its sends never count against its victim's own interval and
// hour. The most any number of accounts in any number of tenants can have
// sent to one address is 30 a day. Using that up, which refuses codes to
// that address for the rest of the day, takes more than one account's
// whole daily allowance (20 < 30): at least two accounts, each spending
// most of its day on that one address. The cap has no exception, not even
// for the user who holds the address: an address in a host's directory is
// not always proved (an administrator may set it), so holders made up for
// the purpose could otherwise flood it 20 a day each. Hosts that change
// the limits keep SendsPerAddressPerDay above SendsPerDay to keep the
// first property.
//
// # Senders and transactions
//
// No code path holds a connection of the pool (a transaction) while it
// asks the pool for another, which with every connection held by such a
// transaction (or with a pool of one) would never come: what a code
// transaction needs of the Directory (the user's addresses, whether an
// address is taken) is read before it begins, and the Directory's writes
// that commit with the Verifier's rows are handed the transaction (see
// Directory) and run through it.
//
// No sender runs inside a database transaction. A send first stores the
// code as pending (unusable) with its limits in one transaction, then
// calls the sender, then records the outcome:
//
//   - the sender took the message: the code becomes active and the send
//     counts toward the limits;
//   - the sender refused it or could not be reached (nothing went out):
//     the code is marked failed, the limits its send took are given back,
//     so the retry the answer invites is not refused by them, and the
//     answer is ErrSendFailed (502), or ErrSendThrottled (503) when the
//     provider throttled it.
//
// The outcome is recorded by a guarded update: an activation is that one
// statement, a failure a transaction that also gives the limits back. If
// the database cannot take it (an outage between the send and the
// record), the outcome waits in the Verifier, and Run retries it with a
// growing pause (0.1 s doubling to 5 s), for up to CodeTTL; SendNotices
// tries it too, for hosts that do not run Run. A code delivered during an
// outage becomes usable once the database is back, and a send that
// delivered answers success, not an error inviting a retry. Only a process
// that stops (or whose Run stops) before the database is back loses the
// record, and then the code stays unusable and counted, never wrongly
// usable.
//
// A sender runs within the request's deadline, but a client that hangs up
// does not cut it short: a message the gateway may have taken is never
// counted as one that did not go out. A sender that answers an error
// after taking the message (a reply lost past the deadline) gets its
// limits back: the gateway's word is what the Verifier goes by.
//
// # Template providers
//
// In mainland China an SMS goes through a provider such as Alibaba Cloud
// SMS or Tencent Cloud SMS, and only as a template approved beforehand,
// sent by its id under an approved signature name, with parameters: the
// text the Verifier renders is not sent. AliyunSMSSender and
// TencentSMSSender take an SMSTemplates table mapping each bizKey (or
// AnyBizKey, for all those without their own) and locale to a template id,
// plus the notice's template; a code goes as its template's one
// parameter, a notice with the new number's last four digits
// (SMSTemplates.NoticeNumber: Tencent takes at most 12 characters from an
// account without enterprise verification, and "+86*******8000" has 14).
// A bizKey of SMSBizKeys without a template for the default locale, or no
// notice template, is refused by the sender's constructor, not at the
// first send. SMS.Locale picks the
// locale; "" or one the table lacks means the default.
//
// Both senders are small clients written here, signing as the providers
// document (Alibaba Cloud's signature V3, ACS3-HMAC-SHA256; Tencent Cloud's
// TC3-HMAC-SHA256), each pinned by a test to the example its provider
// publishes: the module proxy serves neither Alibaba Cloud's dysmsapi SDK
// module nor Tencent's per-product sms module (only Tencent's 2021
// monolith), and a sender needs one call of each. A refusal is an
// *SMSError carrying the provider's code, classified by a table of the
// codes each provider documents (see each sender's SendSMS): a failure
// inside the provider or on the way is Retryable; a throttle (Aliyun
// isv.BUSINESS_LIMIT_CONTROL, Tencent RequestLimitExceeded, an HTTP 429)
// is Throttled with a RetryAfter, and a code's send then fails with
// ErrSendThrottled (httpapi: 503 with Retry-After); a limit of a day, a
// refused key, signature name, template or number is neither. Numbers the
// provider echoes are masked in the error, as codes are cut out.
//
// # Notices to old addresses
//
// After a change (MODIFY_MOBILE, MODIFY_EMAIL) a notice goes to the old
// address, saying what the new one is, masked. The change writes it into
// the module's outbox (the deskkit_outbox_ tables that Migrate creates) in
// the change's own transaction: rolled back, no notice; committed, the
// notice is sent even if the process stops the next instant (by the next
// Run or SendNotices of any process). It is sent after the commit, never
// under the change's locks:
//
//   - Run, which each process runs until it stops, claims due notices and
//     sends them through the SMSSender or the Mailer (success is the
//     sender's acceptance). A change wakes the worker of its own process
//     and answers at once; on PostgreSQL (over bun's pgdriver) the
//     outbox's NOTIFY, delivered at commit, wakes those of every other
//     process too; and each worker looks for due notices once a second
//     besides.
//   - Without Run in its process, a change sends its notice itself after
//     the commit, before it answers, claiming it as a worker does (as
//     before the outbox, when notices were sent from the request), and
//     SendNotices, which hosts call from a scheduler of their own, sends
//     what is due later: the retries of notices whose send failed.
//
// Every send first claims its notice: on PostgreSQL with FOR UPDATE SKIP
// LOCKED, on SQLite under its single writer, with a lease of 2 minutes
// (an attempt is bounded by 30 s). So of two replicas running Run and a
// ticker calling SendNotices, exactly one sends a notice; only a process
// that dies in the middle of a send leaves its notice to be sent again
// when the lease ends (at least once, never lost). Before this outbox, a
// table of notices was read without claiming, and the send after the
// commit, the ticker and every replica could each send the same notice;
// Migrate moves the notices still in that table into the outbox, their
// attempts counted, and drops it.
//
// A notice whose send fails is tried again on its own schedule: five
// attempts, at once and then 1 minute, 5 minutes, 30 minutes and 2 hours
// after each failure (+-10 %, so that notices that failed together are
// not all sent again at the same instant; a provider's RetryAfter, up to
// 2 hours, waits longer), each logged as a warning; the fifth failure
// drops the notice with an error in the log, and so does the first that
// the sender says is final (an *SMSError not Retryable, an SMTP 5xx): the
// outbox records it FAILED with the cause. Purge deletes
// notices a day after they were sent or dropped, attempts included: they
// hold the old address.
//
// # Events
//
// With Config.Publisher set, a committed change of address publishes an
// event inside the change's transaction, before the Directory writes the
// address: a publisher that refuses the event (an unknown type, say) fails
// the change with nothing written, and a change that rolls back later
// takes its event with it. EventTypes lists the types, for the host's
// catalogue:
//
//   - user.mobile.changed and user.email.changed, for a modify and a bind
//     alike, with data {tenantId, actor {id, name}, userId, oldAddress,
//     newAddress}: the actor is the user (name is the Directory's FullName,
//     "" if it has none), both addresses masked as the notices mask them
//     ("+86*******8000", "a***@example.com"), oldAddress null for a bind.
//     The title and text name the user by FullName, else Username.
//
// A notice to an old address is not an event: it is a delivery of the
// Verifier's own on the same outbox, which no channel subscribes to.
//
// Messages come from templates per bizKey (Template; text/template for
// the SMS, the subject and the plain body, html/template for the HTML
// body), which the host may override in Config.Templates and
// Config.Notice.
//
// # Languages
//
// Codes and notices come in English and Simplified Chinese (zh-CN), and
// in any language a host adds with Config.Locales (templates) and
// Config.Messages (the purposes, "change your mobile number", as
// catalogues of deskkit.Messages). A code is written in the language of
// the context of the call that asks for it (deskkit.WithLanguage; the HTTP
// API puts the request's language there), the closest the Verifier has,
// and SMS.Locale says which ("zh-CN", "en") so that a template provider
// sends its template of that locale; a context without a language gets
// English and SMS.Locale "". A notice to an old address is written in the
// language of the change that caused it: the locale is kept with the
// notice's row and read when the worker sends it, later. The events'
// titles and texts render in a tenant's language at delivery (see
// EventTypes and channel.Config.TenantLanguage).
//
// # Errors
//
// The shared classes are deskkit's sentinels; the Verifier's own errors
// (ErrCodeWrong, ErrCodeExpired, ErrCodeMissing, ErrCodeExhausted,
// ErrTooManyFailures, ErrSendFailed, ErrAddressTaken, ErrAlreadyBound,
// ErrNotBound, ErrLinkSecret, ErrSendThrottled) each match a class too,
// and httpapi gives each an error key of its own. Bad fields are
// *deskkit.InputError values naming the field. ErrSendFailed wraps the sender's error: from
// AliyunSMSSender and TencentSMSSender an *SMSError with the provider's
// code and whether the message may be accepted later.
//
// # Metrics and traces
//
// Config.MeterProvider and Config.TracerProvider (nil: the global
// providers, which record nothing until the host installs some) record,
// under the scope github.com/deskkit/deskkit/verify, a span per operation
// ("verify.SendSMS", "verify.ChangeEmail", ...; status Error when it
// failed, with deskkit.result) and the counters:
//
//   - deskkit.verify.codes.sent: one per SendSMS or SendEmail call
//     (whatever the number of addresses), by deskkit.channel (sms, email)
//     and deskkit.result ("ok", or the error key httpapi answers:
//     too_many_requests, verification_address_taken, ...);
//   - deskkit.verify.codes.checked: one per CheckSMS or CheckEmail call,
//     likewise (verification_code_wrong, verification_code_expired, ...);
//   - deskkit.verify.rate_limited: one per refusal of a limit, by
//     deskkit.limit: resend_interval, per_hour, per_address_per_day,
//     per_day (the send limits of Limits, in that order) and
//     failures_per_day.
//
// The notices to old addresses share the module's outbox with the
// channels' events: each attempt is a span "verify.notice" (a child of
// the change's span when the change sends it itself) and counts in the
// outbox's deskkit.deliveries and deskkit.delivery.duration (under the
// outbox's instrumentation scope, as the channels' are) with deskkit.channel.type
// verify.notice and deskkit.result succeeded, retrying or failed. The
// outbox's gauges (its depth, its oldest due delivery's age) count the
// notices too; channel.ChannelRegistry.Run registers them, not the
// Verifier's Run.
//
// # Testing
//
// The tests run every rule on SQLite and PostgreSQL with a fake
// directory, including 20 parallel checks of one code, parallel wrong
// guesses and sends, two Verifiers over one PostgreSQL database, one
// notice sent by two Verifiers running their workers (each with a pool of
// its own on PostgreSQL) and a ticker calling SendNotices at once (one
// message, three times over), the notices' schedule on an injected clock,
// the migration of the old notices table up and down, the events' data
// and their rollback with the change, and the database cut between a
// send and its record (a query hook failing every
// statement); the senders are tested against a real SMTP server and real
// HTTP servers on loopback, connection reuse included; the reference
// server's end-to-end test runs the modify and bind flows through both,
// and the modify flow through Aliyun and Tencent fakes that check every
// signature; its outage test cuts PostgreSQL behind a TCP proxy while a slow
// gateway holds a message.
//
// A host tests its side with package verifytest: an in-memory Directory, a
// FuncDirectory to script answers, a Sink that records what is sent,
// fakes of Alibaba Cloud and Tencent Cloud SMS (SMSProvider) that check
// each request's signature and can be told to refuse, and
// RunDirectoryTests, the conformance suite its own verify.Directory should
// pass over its real tables (examples/embed and the reference server run
// it against theirs).
package verify
