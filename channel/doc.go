// Package channel keeps a tenant's event channels, the places event
// notifications go, and sends messages through them: a signed generic
// webhook, e-mail, and two chat robots.
//
// # Overview
//
// A ChannelRegistry is built with New over a database that Migrate has
// prepared, the server secret, and a Mailer for e-mail channels. httpapi
// mounts it at /api/v1/event/channel. Services and hosts publish events
// through it (Publish, in their own transactions), and Run, in every
// process, delivers them with retries.
//
// The Mailer is the host's deskkit.Mailer, the one shape of e-mail every
// service shares: the verification service's *verify.SMTPMailer is one, so
// one mail server serves both (the reference server does this).
//
// Without a Mailer, e-mail channels can be stored, and their messages fail
// with a DeliveryError saying that no mail server is configured.
//
// The package's Example adds a webhook and delivers an event to it, which
// the receiver verifies with a Standard Webhooks library;
// ExampleChannelRegistry_Publish publishes an event in the caller's
// transaction, as the trash does in the host's delete. The rules follow.
//
// # Channel types
//
//   - WEBHOOK: an http or https URL that gets a signed POST (Standard
//     Webhooks, below).
//   - EMAIL: a comma-separated list of 1 to 10 e-mail addresses, trimmed,
//     each domain in lower case, duplicates dropped. Every address gets a
//     message of its own, so that recipients do not see each other.
//   - ENTERPRISE_CHAT: a WeCom group robot, https://HOST/cgi-bin/webhook/send?key=KEY.
//     It gets {"msgtype":"markdown","markdown":{"content":...}}, cut to
//     4096 bytes.
//   - WORKPLACE_CHAT: a DingTalk custom robot, https://HOST/robot/send?access_token=TOKEN.
//     It gets {"msgtype":"markdown","markdown":{"title":...,"text":...}}
//     with the channel's name in both, so that DingTalk's keyword mode
//     passes when the keyword is the channel's name. An optional signing
//     secret (DingTalk's "SEC..." secret) turns on DingTalk's signing.
//
// Input also takes the source system's names, WECHAT for ENTERPRISE_CHAT
// and DINGTALK for WORKPLACE_CHAT; answers always use the canonical names.
//
// # Rules
//
//   - Names are 1 to 100 characters (deskkit.CheckUniqueName: no invisible
//     characters, no space at either end) and unique within the tenant
//     without case, by a unique index on deskkit.FoldName of the name
//     (deskkit_channels.name_folded): "WH2" beside "wh2", or parallel adds
//     of one name, give one channel and a 409. The migration that added the
//     index renamed the newer of two stored names that fold to one key
//     ("wh2 (2)", the oldest keeps its name) and logged each rename at WARN
//     through slog.Default().
//   - Addresses are at most 2,000 bytes. URLs must be absolute http or https
//     URLs without user info or fragment, and are stored as sent (trimmed):
//     what URL parsers could read two ways (non-ASCII, spaces, quotes and
//     brackets, percent-encoded or zoned hosts) is refused, not rewritten. A
//     robot's URL needs its exact path and exactly one non-empty key or
//     access_token; a DingTalk URL may not carry timestamp or sign itself. A
//     host written as an IP address in any spelling ("127.1", "2130706433",
//     "[::ffff:127.0.0.1]"), or "localhost", is checked against the SSRF
//     guard when the channel is saved (ErrAddressBlocked); names are checked
//     when a message is sent, on every address they resolve to. The
//     client's message says why: loopback, a private network (and that
//     Config.AllowPrivateNetworks opens both in development), a cloud
//     metadata endpoint or link-local (never opened), another
//     special-purpose range; it never names an address a name resolved to.
//   - An EMAIL address list may not have empty elements ("a@x.com,,b@x.com");
//     each address is at most 254 characters, and errors name the element
//     ("the 3rd e-mail address ...").
//   - Quotas per tenant: 5 webhooks, 20 e-mail channels, 10 of each robot
//     (Type.Quota). The count is one row per tenant and type, taken by a guarded
//     upsert in the insert's transaction, so that parallel adds cannot pass
//     the quota on either database. Over quota is a *QuotaError.
//   - Replace keeps the id and refuses a change of type (delete the channel
//     and add a new one: the secret and the quota belong to the type). A
//     WORKPLACE_CHAT replace without a secret keeps the stored one; an empty
//     secret removes it. A webhook keeps its signing secret.
//   - Every query filters on the principal's tenant: another tenant's
//     channel is ErrNotFound, as an unknown one is.
//   - No code path holds a connection of the pool (a transaction) while it
//     asks the pool for another, which with every connection held (or a
//     pool of one) would never come: the registry reads and authorizes
//     before its transactions and, inside them, uses only the transaction;
//     Publish writes through the transaction it is handed. Its prepared
//     statement on PostgreSQL (see Events and delivery) is prepared on the
//     pool only where no connection is held (Run, and a Publish given the
//     database rather than a transaction); inside a transaction it is
//     prepared on the transaction's own connection, and until the first
//     preparation succeeds Publish runs the same statement unprepared.
//
// # Who may do what
//
// Channels decide where a tenant's events go, so changing them is an
// admin's business. By default only admins (deskkit.Principal.Admin) may
// add, replace, delete and test channels; any other user gets ErrForbidden
// (httpapi: 403 forbidden), asked before any transaction. Every user of the
// tenant may list the channels, but a non-admin sees addresses masked
// (MaskAddress): a webhook as its scheme and host followed by "/***"
// (https://hooks.example.com/***), since paths and queries often carry
// tokens; a robot's URL with every query value, its key or access_token
// among them, as "***"
// (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***); e-mail
// addresses as they are. Every URL a disabled reason quotes is shown to
// them as a webhook's address is (a reason stored by an older version may
// quote a redirect's Location whole). A host with other rules sets Config.Authorizer,
// which is asked, per Action, about every principal who is not an admin.
//
// # Secrets
//
// A webhook gets a signing secret when it is added: "whsec_" and the
// base64 of 32 random bytes. It is in the add's answer and nowhere else:
// lists never show a secret. Signing secrets and addresses (a robot's
// address carries its key, and webhook URLs often carry tokens) are stored
// encrypted with AES-256-GCM under a key derived from the server secret
// (HKDF-SHA256), bound to the row's tenant, type and field, so a database
// dump leaks neither and a ciphertext copied to another tenant or field
// does not decrypt. (The row id is not bound: it is not known before the
// insert.) Secrets and addresses are never logged.
//
// Config.PreviousSecret keeps rows written before a rotation of the server
// secret readable. Rows are not re-encrypted under the new key, so keep the
// previous secret until every channel has been added again. A row that
// neither key opens (the secret was lost) is an error that httpapi answers
// 500 and logs: the channel must be deleted and added again.
//
// # Sending
//
// Webhook requests follow Standard Webhooks (https://www.standardwebhooks.com):
// headers webhook-id ("msg_" and a unique id, the same on a retry of the
// same message), webhook-timestamp (Unix seconds) and webhook-signature
// ("v1," and the base64 HMAC-SHA256 of "id.timestamp.body" under the
// decoded secret), and the JSON body {"type", "timestamp", "data"}. Any 2xx
// is success. Robots succeed only on a JSON reply with errcode 0: WeCom and
// DingTalk answer HTTP 200 with a non-zero errcode when they refuse.
//
// A failure is a *DeliveryError (errors.Is ErrDeliveryFailed) whose
// message says what the far end answered: its status, a redirect (never
// followed; where it points is named as a masked address is shown, its
// scheme and host followed by "/***", since a Location may carry a token
// as the address may), a robot's errcode and errmsg (DingTalk's 310000, a keyword,
// signature or timestamp refused, and 130101, over 20 messages a minute,
// are spelled out), a timeout, a refused connection. Its Retryable field
// says whether trying later may help (timeouts, connection failures, 429,
// 5xx, DingTalk's 130101).
//
// Outbound HTTP goes through an SSRF guard that checks every address a
// name resolves to at dial time, on the address actually dialled, so DNS
// rebinding cannot slip past: the IANA special-purpose ranges of IPv4 and
// IPv6 (code.dny.dev/ssrf), IPv4-mapped and NAT64 forms included, and the
// cloud metadata addresses. No proxy from the environment is used (the guard
// would check the proxy, not the target), no redirect is followed, a
// message has 10 s in all (Config.Timeout), and at most 64 KiB of a reply is
// read. Config.AllowPrivateNetworks lets loopback and private networks
// through, for development and tests; metadata addresses stay blocked.
//
// # Tests
//
// Test sends one real message through the protocol of the channel as given
// (so it can be tried before it is saved): a "channel.test" event to a
// webhook, signed with the stored channel's secret (named by id, or by type
// and name) or else with a throwaway secret returned in the result; markdown
// to the robots; a message to each e-mail address. A stored secret signs
// only a message to the stored channel's own address: signed for an
// address the caller picks, a webhook message could be replayed to the real
// receiver, and a DingTalk signature, which covers only a timestamp, would
// let the caller post anything to the robot for an hour.
//
// Tests are throttled per tenant (Config.TestsPerMinute, 20 messages a
// minute by default, a test of an e-mail channel counting one per address),
// counted in the database before the send whatever its outcome, so that
// the throttle holds across replicas and the endpoint is no relay for spam.
//
// # Metrics and traces
//
// Config.MeterProvider and Config.TracerProvider (nil: the global
// providers, which record nothing until the host installs some) record
// a span per operation ("channel.Add", "channel.Test", "channel.Publish",
// ...; status Error when it failed, with deskkit.result) and, under the
// scope github.com/deskkit/deskkit/channel, deskkit.events.published by
// deskkit.event.type: one per Publish of a new event (not one whose id
// the tenant published already), counted when Publish returns, so also
// for an event whose transaction the caller then rolls back.
//
// The worker's attempts are recorded by the outbox it shares with the
// verifier's notices, under the outbox's own instrumentation scope (not
// the channel package's):
// a span "channel.deliver" per attempt (deskkit.event.type,
// deskkit.channel.type, deskkit.result, and the reply's
// http.response.status_code; status Error when it failed), the counter
// deskkit.deliveries and the histogram deskkit.delivery.duration (the
// attempt's time in seconds), both by deskkit.channel.type (WEBHOOK,
// EMAIL, ENTERPRISE_CHAT, WORKPLACE_CHAT; "channel" for a channel deleted
// meanwhile; verify.notice for the notices) and deskkit.result
// (succeeded; retrying, a failure the schedule tries again; failed, the
// delivery's end).
//
// Run registers, while it runs, the observable gauges
// deskkit.outbox.depth (the PENDING deliveries of the whole outbox,
// notices included, those under an attempt too) and
// deskkit.outbox.oldest_due_age (seconds the oldest due delivery has
// waited past its due time; 0 when none is due). Each collection runs one
// query over the pending deliveries' partial index, within 2 s; every
// replica running Run reports the same values, so take one replica's, or
// their maximum. The gauges are unregistered when Run returns.
//
// # Events and delivery
//
// Publishing. Publish (the deskkit.Publisher the trash and verification
// services take) writes an event and one delivery per enabled, subscribed
// channel of the tenant through the caller's transaction, into the
// outbox's tables (deskkit_outbox_*): rolled back, nothing is sent;
// committed, the event is delivered even if the process dies the next
// instant. On PostgreSQL it is one statement, which chooses the tenant's
// subscribed channels, writes the event and its deliveries and NOTIFYs the
// workers (woken at commit), prepared once per connection of the pool:
// unprepared, PostgreSQL plans it again for every event, and a trash.Add
// that publishes takes about 1.7 times one that does not, against about
// 1.3 prepared (Config.PlainStatements turns preparing off, for poolers
// that do not keep prepared statements); on SQLite two. It does
// no network I/O, so that it is safe under the caller's locks. The
// event's id is its idempotency key: publishing an id the tenant already
// published adds nothing. It is also the webhook-id, the
// same on every attempt. The data gets the tenant's "tenantId" (set at the
// top level: the data's own top-level "tenantId" is replaced, nested
// objects are kept as they are). A top-level key that differs from a key
// deskkit sets in case alone ("TenantID", "TENANTID", "Actor": the keys
// deskkit sets are "tenantId" and the services' "actor") is refused with
// a *deskkit.InputError naming "data" whose message names the key, and
// nothing is written: a receiver that matches keys without case, as Go's
// encoding/json and .NET do, would read it in place of deskkit's. Keys
// are compared as encoding/json decodes them (escapes resolved) and folds
// them (strings.EqualFold, Unicode simple folding). Deliver sets no key,
// and checks none.
//
// Languages. An event is stored as published (its Title and Text, in
// English for deskkit's own events) and its data. When Config.TenantLanguage
// says that a tenant reads another language, an event whose type has a
// Render (deskkit.EventType: the trash's, the verifier's and
// channel.disabled have one) is rendered from its data in that language
// when it is delivered, for the robots and e-mail (whose closing line
// follows), with Config.Messages; the webhook's JSON, machine-read, never
// changes. Other types, and a rendering that fails, go as published.
//
// Run keeps each tenant's language, as Config.TenantLanguage told it, for
// Config.TenantLanguageTTL (a minute by default), so that a busy outbox
// asks the hook once per tenant and TTL instead of once per tenant and
// batch: a change of a tenant's language shows in the events delivered
// from one TTL after it (earlier, often). The first batch of a tenant, and
// the first after it was idle for a TTL, waits for the hook; from half the
// TTL a batch asks again in the background and goes on with the language
// it has, so a tenant with events every half TTL never waits. Batches that
// need one tenant at once make one call; at most 4 calls run at once,
// each within 10 seconds. A call that fails is logged when the tenant's
// calls start failing, means the language last read (English if none),
// is made again 5 seconds later in the background, and makes no batch
// wait. Tenants without events for two TTLs are forgotten. A negative
// TTL turns the cache off: the hook is asked once per tenant of every
// batch, on the claim loop.
//
// Event types. The catalogue is the host's code: Publish accepts only
// registered types, the registry's own (channel.disabled, EventTypes) and
// those the composition root registers with RegisterEventTypes when it
// starts (the trash's, the verifier's, the host's own). Nothing registers
// a type at run time, a publish least of all, so the catalogue is the same
// for every tenant and in every process of a deployment running the same
// code. A type outside it is a *deskkit.InputError naming "type" whose
// message lists the registered types. EventTypes lists the catalogue,
// with a description and example data of each, for GET
// /api/v1/event/types.
//
// Subscriptions. Input.Events lists the types a channel gets: type names
// and prefixes ending in ".*" ("task.*"); empty means every event. Each
// entry must be registered, or a prefix matching a registered type, when
// the channel is saved (a *deskkit.InputError naming "events" otherwise);
// at most MaxSubscriptions, duplicates dropped. A prefix also matches
// types registered later.
//
// Attempts and retries. Run, in every process of the deployment, claims
// due deliveries in batches (on PostgreSQL with FOR UPDATE SKIP LOCKED, so
// that replicas share the queue and each delivery is attempted by one of
// them), up to Config.BatchSize per claim and Config.Concurrency attempts
// at a time (16), each under a lease of twice Config.Timeout plus a
// minute: a process that dies mid-attempt loses its deliveries when the
// lease ends, and another makes the attempt again. Outcomes are recorded
// in flushes, every 5 ms or 100 outcomes, each one transaction for all of
// them; a process that dies between an attempt and its flush has that
// attempt made again when its lease ends. On PostgreSQL a claim commits
// without waiting for the disk (the one write whose loss is harmless): a
// crash of PostgreSQL itself may forget the claims of its last few hundred
// milliseconds, and those deliveries are attempted again. Delivery is
// therefore at least once, and receivers drop duplicates by webhook-id. A flush that loses
// its database connection (a restart, a failover, a network blip) is
// recorded again on a fresh connection within a few seconds and within
// the lease, so that a blip costs neither a duplicate nor a lease's delay;
// only a database down for longer than that leaves the flush's deliveries
// to be attempted again when their leases end.
//
// Fairness. A claim takes every tenant's first due delivery before any
// tenant's second, and within a tenant every channel's first before any
// second, so that no tenant waits behind another's backlog and no channel
// behind another of its tenant's; a channel has at most
// Config.MaxInFlightPerChannel deliveries in flight (4), counted across
// every process from the leased rows (on PostgreSQL a process leaves out
// its own attempts that ended, their outcomes not yet recorded, so that a
// channel's room is free as soon as an attempt ends; the other processes
// count them until recorded), so that a hanging endpoint holds
// that many attempts, not all of them; and one tenant's deliveries hold at
// most Config.TenantConcurrency of a process's attempts (half), so that
// another tenant's event finds one free while a tenant's endpoints hang.
// The cap adapts between a floor and a ceiling with the channel's answers
// (Config.MaxInFlightPerChannel and InFlightCeiling say how), a
// Retry-After pauses the whole channel, and a rate limit spaces its sends
// (Input.RateLimit): shared by every process, shown in Channel.
// A lease counts toward its channel's cap for twice Config.Timeout plus
// 5 s after its claim (a claimed delivery waits for a slot at most one
// attempt's time, see Scaling): a killed process holds its channels' caps
// no longer than its attempts could have run. The cap holds also while
// several processes claim at the same instant: on PostgreSQL one claim at
// a time takes from a channel, the others skip it until it has committed.
// On SQLite (one process) the claim ranks every due delivery; on
// PostgreSQL it steps through the channels that have pending deliveries
// with one index probe each, so its cost follows that number of channels,
// not the queue's length.
//
// Scaling. Every process running Run on the database shares its queue:
// claims skip each other's rows (no delivery is attempted twice while no
// process dies; examples/bench measured no row claimed twice with 2 and 4
// replicas), so throughput grows with replicas until the database is the
// bound. The database is the shared engine: on PostgreSQL a delivery
// costs it 0.20-0.38 ms of CPU (a claim of up to a batch, a prepared
// statement that steps fairly through as many channels as it takes rows;
// a flush of the outcomes, one transaction for many; the channels'
// versions, one query a claim) and a replica 0.14-0.27 ms, about 0.4-0.7
// statements and 0.02-0.06 WAL flushes (the claim commits without waiting
// for its flush). One PostgreSQL core therefore saturates at roughly
// 2,600-5,000 deliveries a second, whatever the number of replicas: a
// PostgreSQL of 8 cores near 20,000-40,000 a second, before its disk's
// flushes (one per flush of outcomes) or lock contention on the hottest
// channels bound it. Replicas on separate machines add the attempts' own
// cost (the HTTP requests, signing) and their waiting on slow receivers,
// not database work; a replica's Config.Concurrency bounds its attempts
// at once, and Config.BatchSize how many one claim takes (a larger batch
// costs the database less per delivery). A replica claims ahead: claimed
// deliveries wait in it for an attempt to end, as many as its attempts at
// once at first, doubling while claims come back full up to BatchSize
// (4 x Concurrency by default), so that a backlog is claimed in larger
// batches; they go back to the queue when Run stops, or unattempted if
// one waited until less than half its lease was left. Measured on one 2-core machine, database and
// replicas together: 2,663-3,324 deliveries a second with one replica of
// 8 workers (1.18-1.34x River doing the same requests), 2,949-3,028 with
// two, 2,520-3,317 with four (examples/bench/README.md gives the figures
// and how they are measured).
//
// Attempts follow Config.RetrySchedule (0, 5s, 5m, 30m, 2h,
// 5h, 10h, 10h by default, each delay +-10 %); a 429 or 503 with
// Retry-After waits at least that (at most 24 h). After the schedule's
// last failure the delivery is FAILED. The outbound client keeps
// Config.Concurrency idle connections per host alive. A worker keeps the
// channels it opened (decrypted) across batches, up to a few thousand:
// each claim reads only their versions, in one query, and reads and
// decrypts again only a channel changed since, so a change to a channel
// (its address, secret, enabled) is seen at the next claim. A batch builds
// each event's message once.
//
// Success is, per type: a 2xx reply for a webhook (a 3xx is a failure:
// redirects are never followed); errcode 0 for the robots; for e-mail,
// the mail server's acceptance of every address. An e-mail attempt that
// some addresses did not take succeeded for those: the next attempt goes
// only to the addresses still owed (and still on the channel), so that a
// retry does not mail the others twice. An address the SSRF guard refuses
// fails the delivery at once, as does a channel that was deleted or
// disabled (its deliveries end FAILED, "channel deleted" or "channel
// disabled").
//
// Every attempt is logged: its start, duration, status, the client-safe
// reason of a failure, and the first 1 KiB of the reply (valid UTF-8; for
// e-mail, which addresses the server took), with what the channel's
// address and secret hold masked as "***" before it is stored, in the
// reply and in the reason (robots quote their URL in refusals, and servers
// their request's URI in a 404: "Cannot POST /hook?token=..."). What is
// masked follows MaskAddress: for a webhook, the address, its path and
// query together, its query, its path, each query value and each path
// segment of 16 bytes or more; for a robot, each query value (its key or
// access_token); and the secret. Each is masked as the address writes
// it, percent-decoded and percent-encoded (either case of hex); parts
// shorter than 4 bytes are left. The same masking applies to the reasons
// of Test and Deliver. A principal who sees addresses masked also sees
// every URL in an attempt's error, a delivery's lastError and a disabled
// reason masked as a webhook's address is (https://HOST/***). What
// deskkit sent is never logged.
// Deliveries, Attempts, Resend (one more attempt now) and Recover (queue a
// channel's FAILED deliveries since a time again, with the whole schedule)
// read and act on the log.
//
// Resends and recovers are throttled per tenant, together
// (Config.ResendsPerMinute, 20 a minute by default; each call counts one,
// however many deliveries a recover queues), counted in the database in
// the transaction that queues them, so that the throttle holds across
// replicas and a refusal for another reason (a disabled channel) counts
// nothing: past it, a *deskkit.RateLimitError with the wait until the
// minute's window ends (httpapi: 429 with Retry-After). A delivery's log
// keeps its newest MaxAttemptsKept (100) attempts: recording one more
// deletes the oldest past the bound, so that resends, which are never
// refused for a long log, cannot grow it without end. 100 is twice the
// longest retry schedule: only resends reach it, and what is lost is the
// oldest, least telling attempts. The delivery's Attempts still counts
// every attempt, so the first attempt listed then is not number 1. DeliveryCounts counts a channel's deliveries per
// hour by status, in one grouped query, for a chart of its traffic.
//
// Disabling. A channel keeps a failure clock: a success resets it; each
// failed attempt starts it (if it had not) and counts. A channel whose
// attempts have all failed for Config.DisableAfter (5 days) with at least
// Config.DisableMinFailures failed attempts (10), or a webhook that
// answers 410 Gone, is disabled: it gets no new deliveries, its pending
// ones end FAILED ("channel disabled"; an attempt in flight finishes, and
// its retry ends so), the reason and time are shown in lists, and a
// channel.disabled event (actor null) goes to the tenant's other enabled
// channels. An admin may also Disable a channel by hand: the same, with
// reason "disabled by user N" and the admin as the event's actor, so that
// the other admins learn of it. The event's data say the cause ("user",
// "gone" or "failures", with failingSeconds, attempts and lastError), so
// that the reason, stored in English, is rendered in each reader's
// language at delivery. Enable re-enables it and clears its clock;
// deliveries that failed while it was disabled come back with Recover.
// Resend and Recover refuse a disabled channel (ErrChannelDisabled).
//
// Retention. Run purges attempts, finished deliveries and events older
// than Config.LogRetention (30 days) every hour, in batches of 1,000 rows
// per statement; pending deliveries are kept whatever their age.
//
// The outbox's tables under churn. On PostgreSQL each delivery is a row
// written once and updated twice (its claim, its outcome), and neither
// update can be HOT: each changes a column of the index of pending
// deliveries the claims read (deskkit_outbox_target_due_idx) or of its
// predicate, so a delivered row leaves two dead versions in
// deskkit_outbox_deliveries and two dead entries in that index until a
// vacuum removes them, and every claim steps over the dead entries of the
// channels it reaches. Migrate therefore sets the outbox tables' own
// autovacuum settings: the deliveries table is vacuumed after 10,000 dead
// versions (5,000 deliveries) however long its log of finished rows, with
// its indexes always cleaned, and analyzed every 20,000 changes; the
// events and attempts, written once and purged by age, every 5 % of
// growth or deletion. They take effect only with autovacuum on, PostgreSQL's
// default; a server that runs without it must VACUUM
// deskkit_outbox_deliveries itself, every minute or so under load. What an
// operator checks: n_dead_tup, last_autovacuum and autovacuum_count of
// deskkit_outbox_deliveries in pg_stat_user_tables (dead versions fall
// back at least once a minute while deliveries flow), the pending index's
// size (pg_relation_size) against the number of pending deliveries, and
// transactions open for minutes (pg_stat_activity), which keep every
// dead version of the database from being removed. examples/server's
// README gives the queries. SQLite needs none of this.
//
// Shutdown. When Run's context ends it claims nothing new, waits for the
// attempts in flight (each bounded by Config.Timeout) and records them.
// What a killed process had claimed is attempted again elsewhere when its
// lease ends.
//
// Wake-up. On PostgreSQL over bun's pgdriver, Run LISTENs for the
// publishers' NOTIFY, sent at commit; a lost listener connection is
// logged and established again. Every process also polls every second,
// and a publish wakes its own process's worker directly (again 20 and 200
// ms later when it publishes in a transaction, whose commit comes after):
// on SQLite that and the poll are the only wake-ups.
//
// Deliver and Send make one synchronous attempt per channel, outside the
// queue and the log: for a host that wants an answer at once. Most want
// Publish.
package channel
