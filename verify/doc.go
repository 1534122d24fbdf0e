// Package verify lets the signed-in user prove that they receive messages
// at an address, and change their profile and contact addresses, the
// latter only with that proof.
//
// # Overview
//
// A Verifier is built by New over the library's tables (Migrate), the
// host's user store (a Directory), a sender of text messages (SMSSender)
// and of e-mail (deskkit.Mailer), and the server secret. The senders here
// are real: SMTPMailer (SMTP through github.com/wneessen/go-mail),
// HTTPSMSSender (a JSON POST to the host's gateway), TwilioSMSSender
// (Twilio's REST API), AliyunSMSSender and TencentSMSSender (Alibaba Cloud
// and Tencent Cloud SMS, which send approved templates; see Template
// providers), and LogSender for development. httpapi mounts a Verifier
// under /api/v1/user/current.
//
// The flow is always send, then check:
//
//	SendSMS / SendEmail   a code for a bizKey goes to an address
//	CheckSMS / CheckEmail the code comes back; the answer is a link secret
//	ChangeMobile / ChangeEmail, or Redeem   the link secret is spent
//
// Every bizKey of the source system's API is accepted (SMSBizKeys,
// EmailBizKeys), each its own namespace of codes: a SIGNIN code never
// passes a check for MODIFY_MOBILE. The Verifier acts on four of them
// itself; the link secret of any other is redeemed by the host for its own
// flow (a password change after PASSWORD_UPDATE) with Redeem, inside the
// host's transaction if it likes.
//
// The package's Example (example_test.go) sends a code, checks it for a
// link secret and redeems the secret for a flow of the host's own;
// ExampleVerifier_Run shows a host running the worker that sends notices
// to old addresses, and ExampleNewAliyunSMSSender and
// ExampleNewTencentSMSSender build the template providers.
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
// address. BIND_MOBILE and BIND_EMAIL are for a user with no address of
// that kind (ErrAlreadyBound otherwise; MODIFY_* without one is
// ErrNotBound): one proof of the new address is enough, the code sent to
// it or, when the client checked that code first, the link secret the
// check answered. A secret proves something only for the user, bizKey and
// address it was won for, once; a wrong code does not burn it, and a
// refused change spends nothing (MobileChange gives every case). After a
// MODIFY_* change a notice goes to the old address.
//
// Mobile numbers are checked against the country with
// github.com/nyaruka/phonenumbers, must be able to receive text messages,
// and are stored in E.164 (NormalizeMobile); e-mail addresses are bare
// addresses, trimmed, their domain in lower case (NormalizeEmail).
//
// # Codes, secrets and limits
//
// A code is 6 digits, valid Config.CodeTTL (5 minutes; at most 10), good
// for MaxAttempts (5) wrong checks, and stored only as a keyed hash under
// the server secret; Config.PreviousSecret keeps codes in flight alive
// across a rotation of the secret. A link secret is good once, for
// LinkSecretTTL (10 minutes).
//
// Every limit (Config says each, with its default) is kept in the database
// and taken by one atomic statement, so it holds across server replicas
// and parallel requests. The resend interval and the hour are each user's
// own, so one user's sends never block another's codes; the address's day
// counts every user of every tenant together, so that many accounts cannot
// flood one phone or mailbox. Hosts that change the limits keep
// Config.SendsPerAddressPerDay above Config.SendsPerDay, so that no one
// account can use up an address's day.
//
// # Senders
//
// No sender runs inside a database transaction, and no code path holds a
// connection while it asks the pool for another: what a code transaction
// needs of the Directory (the user's addresses, whether an address is
// taken) is read before it begins, and the Directory's writes that commit
// with the Verifier's rows are handed the transaction (see UserWriter). A
// send stores the code as pending, calls the sender, and records the
// outcome: a code becomes usable only once the sender took the message,
// and a send that failed gives its limits back and answers ErrSendFailed
// (ErrSendThrottled when the provider throttled it). SendSMS says how an
// outcome the database could not take is recorded later.
//
// # Template providers
//
// In mainland China an SMS goes through a provider such as Alibaba Cloud
// SMS or Tencent Cloud SMS, and only as a template approved beforehand,
// sent by its id under an approved signature name, with parameters: the
// text the Verifier renders is not sent. AliyunSMSSender and
// TencentSMSSender take an SMSTemplates table mapping each bizKey (or
// AnyBizKey) and locale to a template id, plus the notice's template;
// SMS.Locale picks the locale. A refusal is an *SMSError carrying the
// provider's code, classified as each sender's SendSMS lists:
// Retryable, Throttled (with a RetryAfter; a code's send then fails with
// ErrSendThrottled, which httpapi answers 503 with Retry-After), or final.
//
// # Notices to old addresses
//
// After a change (MODIFY_MOBILE, MODIFY_EMAIL) a notice goes to the old
// address, saying what the new one is, masked. The change writes it into
// the module's outbox (the deskkit_outbox_ tables that Migrate creates) in
// the change's own transaction: rolled back, no notice; committed, the
// notice is sent even if the process stops the next instant. It is sent
// after the commit, never under the change's locks:
//
//   - Run, which each process runs until it stops, claims due notices and
//     sends them; a change wakes it and answers at once.
//   - Without Run in its process, a change sends its notice itself after
//     the commit, before it answers, and SendNotices, which hosts call
//     from a scheduler of their own, sends what is due later: the retries
//     of notices whose send failed.
//
// Every send claims its notice first, so that of several replicas and a
// ticker exactly one sends it (at least once, never lost); a notice whose
// send fails is retried on a schedule (SendNotices gives it) and dropped,
// logged, after its fifth failure or a final one. Purge deletes notices a
// day after they were sent or dropped: they hold the old address.
//
// # Events and messages
//
// With Config.Publisher set, a committed change of address publishes
// user.mobile.changed or user.email.changed (see EventTypes) inside the
// change's transaction, before the Directory writes the address: a
// publisher that refuses the event (an unknown type, say) fails the change
// with nothing written, and a change that rolls back later takes its event
// with it. A notice to an old address is not an event: it is a delivery of
// the Verifier's own on the same outbox, which no channel subscribes to.
//
// Messages come from templates per bizKey (Template), which the host may
// override in Config.Templates and Config.Notice. Codes and notices come in
// English and Simplified Chinese (zh-CN), and in any language a host adds
// with Config.Locales and Config.Messages. A code is written in the
// language of the context of the call that asks for it (its
// deskkit.Localizer, which the HTTP API puts there), and SMS.Locale says which,
// so that a template provider sends its template of that locale; a notice
// is written in the language of the change that caused it (the locale is
// kept with the notice's row, and read when the notice is sent, later).
//
// # Errors
//
// The shared classes are deskkit's sentinels; the Verifier's own errors
// (ErrCodeWrong, ErrCodeExpired, ErrCodeMissing, ErrCodeExhausted,
// ErrTooManyFailures, ErrSendFailed, ErrAddressTaken, ErrAlreadyBound,
// ErrNotBound, ErrLinkSecret, ErrSendThrottled) each match a class too,
// and httpapi gives each an error key of its own. Bad fields are
// *deskkit.InputError values naming the field. ErrSendFailed wraps the
// sender's error: from AliyunSMSSender and TencentSMSSender an *SMSError
// with the provider's code and whether the message may be accepted later.
//
// Config.MeterProvider and Config.TracerProvider record a span per
// operation and notice attempt and counters of codes sent, checked and
// refused by a limit (see Config).
//
// # Testing
//
// deskkit's tests run every rule on SQLite and PostgreSQL, races and
// outages included; examples/server/README.md (Trash and verification in
// detail) says what they prove. A host tests its side with package
// verifytest: an in-memory Directory, a FuncDirectory to script answers, a
// Sink that records what is sent, fakes of Alibaba Cloud and Tencent Cloud
// SMS (SMSProvider) that check each request's signature and can be told to
// refuse, and RunDirectoryTests, the conformance suite its own
// verify.Directory should pass over its real tables (examples/embed and
// the reference server run it against theirs).
package verify
