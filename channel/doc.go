// Package channel keeps a tenant's event channels, the places event
// notifications go, and sends messages through them: a signed generic
// webhook, e-mail, three chat robots (WeCom, DingTalk, Feishu) and Slack.
//
// # Overview
//
// A ChannelRegistry is built with New over a database that Migrate has
// prepared, the server secret, and a Mailer for e-mail channels. httpapi
// mounts it at /api/v1/event/channel. Services and hosts publish events
// through it (Publish, in their own transactions), and Run, in every
// process, delivers them with retries:
//
//	err := channel.Migrate(ctx, db)
//	reg, err := channel.New(db, serverSecret, mailer, nil)
//	err = reg.RegisterEventTypes(trash.EventTypes()...) // every type, before serving
//	go reg.Run(ctx)                                     // in every process
//	err = reg.Publish(ctx, tx, tenantID, deskkit.Event{Type: "task.trashed", Title: "..."})
//
// The package's Example adds a webhook and delivers an event to it, which
// the receiver verifies with a Standard Webhooks library;
// ExampleChannelRegistry_Publish publishes an event in the caller's
// transaction, as the trash does in the host's delete.
//
// The Mailer is the host's deskkit.Mailer, the one shape of e-mail every
// service shares: verify/smtp's *smtp.Mailer is one, so one mail server
// serves both (the reference server does this). Without a
// Mailer, e-mail channels can be stored, and their messages fail with a
// DeliveryError saying that no mail server is configured.
//
// # Channel types
//
//   - WEBHOOK: an http or https URL that gets a signed POST (Standard
//     Webhooks, see Sending).
//   - EMAIL: a comma-separated list of 1 to 10 e-mail addresses. Every
//     address gets a message of its own, so that recipients do not see
//     each other.
//   - ENTERPRISE_CHAT: a WeCom group robot, https://HOST/cgi-bin/webhook/send?key=KEY,
//     which gets markdown.
//   - WORKPLACE_CHAT: a DingTalk custom robot, https://HOST/robot/send?access_token=TOKEN,
//     which gets markdown titled with the channel's name; an optional
//     signing secret (DingTalk's "SEC..." secret) turns on DingTalk's
//     signing.
//   - FEISHU: a Feishu (Lark) custom robot, https://HOST/open-apis/bot/v2/hook/TOKEN,
//     which gets a card (a test: text) titled with the channel's name; an
//     optional signing secret turns on Feishu's signing.
//   - SLACK: a Slack incoming webhook,
//     https://hooks.slack.com/services/T.../B.../XXXX (or another host:
//     Enterprise Grid, GovSlack), which gets Block Kit JSON.
//
// Input also takes aliases: the source system's names, WECHAT for
// ENTERPRISE_CHAT and DINGTALK for WORKPLACE_CHAT, and LARK for FEISHU;
// answers always use the canonical names. The Type constants (the first
// four types) and the kinds' TypeInfos say what each is sent, and Input's
// fields how names and addresses are checked.
//
// Each kind is a package of its own behind one interface (its address
// rules, masking, who may add one, signing, sending, and which failures
// retry, give up or disable the channel), and the registry lists the kinds
// in one place. TypeInfos describes them for a host's forms and
// references (the console and the API's document are written from it).
// The interface is deskkit's own for now; a public one through which a
// host adds kinds of its own is a later step.
//
// # Rules
//
//   - A channel's name is unique within its tenant without case: "WH2"
//     beside "wh2", or parallel adds of one name, give one channel and
//     ErrNameTaken (Input.Name).
//   - An address must be an absolute URL without user info or fragment
//     (or, for EMAIL, a list of addresses), and is refused rather than
//     rewritten when a URL parser could read it two ways (Input.Address).
//   - A tenant may have 5 webhooks, 20 e-mail channels, 10 of each
//     robot and 10 Slack webhooks (Type.Quota), also under parallel adds;
//     over quota is a *QuotaError.
//   - Replace keeps the id and refuses a change of type: delete the
//     channel and add a new one, since the secret and the quota belong to
//     the type.
//   - Every query filters on the principal's tenant: another tenant's
//     channel is ErrNotFound, as an unknown one is.
//   - Channels decide where a tenant's events go, so by default only admins
//     (deskkit.Principal.Admin) may add, replace, delete, test, enable and
//     disable them, reveal and rotate webhooks' signing secrets, and work
//     with their deliveries; any other user gets
//     ErrForbidden, asked before any transaction; every kind alike, the
//     robots included. Every user of the tenant may list them, a non-admin
//     with addresses masked (MaskAddress). A host with other rules sets
//     Config.Authorizer (see Authorizer).
//   - Signing secrets and addresses are stored encrypted under a key
//     derived from the server secret, and never logged; a webhook's
//     signing secret is shown in the answer to its add (Added), and
//     again only by RevealSecret or RotateSecret (see Signing secrets).
//     After a rotation of the server secret, keep the previous one in
//     Config.PreviousSecret (New says for how long).
//   - Outbound requests never reach loopback, private networks, link-local
//     or cloud metadata addresses: the SSRF guard checks a host written as
//     an IP address (or "localhost") when the channel is saved
//     (ErrAddressBlocked), and every address a name resolves to when a
//     message is sent. Config.AllowPrivateNetworks opens loopback and
//     private networks for development and tests.
//   - No code path holds a connection of the pool (a transaction) while it
//     asks the pool for another, so a pool of one connection serves every
//     operation, one at a time: the registry reads and authorizes before
//     its transactions, and Publish writes only through the transaction it
//     is handed.
//
// # Sending
//
// Webhook requests follow Standard Webhooks (https://www.standardwebhooks.com):
// headers webhook-id ("msg_" and a unique id, the same on a retry of the
// same message), webhook-timestamp (Unix seconds) and webhook-signature
// ("v1," and the base64 HMAC-SHA256 of "id.timestamp.body" under the
// decoded secret, or for a webhook that signs with ed25519 "v1a," and the
// base64 ed25519 signature of the same; several space-separated during a
// rotation's overlap or when both sign), and the JSON body {"type", "timestamp", "data"}. Any 2xx
// is success; a redirect is never followed. Robots succeed only on a JSON
// reply with errcode 0: WeCom and DingTalk answer HTTP 200 with a non-zero
// errcode when they refuse. E-mail succeeds when the mail server takes
// every address.
//
// A message has Config.Timeout (10 s) in all. A failure is a
// *DeliveryError (errors.Is ErrDeliveryFailed) whose message says what the
// far end answered, and whose Retryable field says whether trying later
// may help.
//
// # Signing secrets
//
// A webhook gets its signing secret when it is added; Replace keeps it.
// RevealSecret shows it again to an admin (or whom the Authorizer allows
// ActionRevealSecret): each reveal publishes channel.secret.revealed to
// the tenant's channels, with the user as actor, and writes a log line
// without the secret, before the secret is returned. RotateSecret
// (ActionRotateSecret) gives the webhook a new secret, the client's
// ("whsec_" and the base64 of 32 bytes) or one the registry makes, and
// keeps the old one signing beside it for an overlap (SecretRotation:
// DefaultSecretOverlap, a day, unless given; at most MaxSecretOverlap, 7
// days; 0 ends it at once): until then every delivery and test carries
// both signatures, the new one first, space-separated in
// webhook-signature ("v1,<new> v1,<old>"), as Standard Webhooks lays out,
// so that a receiver holding either secret verifies every request, and
// moves to the new one within the overlap (Channel.PreviousSecretUntil
// says until when). After it only the new secret signs; the old one is
// cleared from the row by the channel's next write or by Purge. The old
// secret is sealed as the current one is, under a field of its own, so
// that the server secret's rotation (Config.PreviousSecret) covers it
// too. A rotation publishes channel.secret.rotated and is logged, never
// with a secret.
//
// A webhook may sign with ed25519 (Standard Webhooks' "v1a," signatures)
// instead of HMAC or beside it (Signing: SigningHMAC, every webhook's at
// first, SigningEd25519, SigningBoth), chosen by a rotation
// (SecretRotation.Signing): a rotation to a scheme with ed25519 makes a
// new signing key, sealed as the secret is (its own field) and never
// shown, and shows its public key ("whpk_", Channel.PublicKey,
// SigningSecret.PublicKey), with which receivers verify and which cannot
// sign. Under the overlap rule, whatever signed before keeps signing
// beside the new keys, so that a receiver moves from HMAC to ed25519, or
// back, as it moves from one secret to the next. A webhook that signs with
// ed25519 alone has no HMAC secret: its reveal answers the public key.
//
// Test sends one real message through a channel as given, so that it can
// be tried before it is saved; a stored secret signs only a message to the
// stored channel's own address. Tests are throttled per tenant
// (Config.TestsPerMinute, 20 messages a minute), so that the endpoint is
// no relay for spam.
//
// # Events and delivery
//
// Publish (the deskkit.Publisher the trash and verification services take)
// writes an event and one delivery per enabled, subscribed channel of the
// tenant through the caller's transaction: rolled back, nothing is sent;
// committed, the event is delivered even if the process dies the next
// instant. It does no network I/O, so that it is safe under the caller's
// locks. The event's id is its idempotency key (publishing an id the
// tenant already published adds nothing) and the webhook-id of every
// attempt. The data gets the tenant's "tenantId".
//
// Publish accepts only registered types: the registry's own (EventTypes)
// and those the composition root registers with RegisterEventTypes when it
// starts (the trash's, the verifier's, the host's own; deskkit.EventType
// gives each one's service, description, data schema and example). Nothing
// registers a type at run time, so the catalogue is the same for every
// tenant and process. A channel's subscription (Input.Events) lists types
// and prefixes ending in ".*" ("task.*"); empty means every event.
//
// Run, in every process of the deployment, claims due deliveries in
// batches, fairly between tenants and between a tenant's channels, and
// attempts each on Config.RetrySchedule (0, 5s, 5m, 30m, 2h, 5h, 10h, 10h
// by default). Delivery is at least once: receivers drop duplicates by
// webhook-id. Channel.Health shows healthy, failing or disabled, and why.
// Config.FailingAfter (1 h) of failures raises channel.failing once, and
// Config.DisableAfter (5 days) or a 410 Gone disables the channel and
// raises channel.disabled, both to the tenant's other channels. Run's doc
// says how claims, leases, fairness, retries, wake-ups, retention and
// shutdown work; the Config fields of each give its bounds;
// examples/server/README.md ("Event channels in detail") gives what a
// delivery costs the database and the measured throughput.
//
// When Config.TenantLanguage says that a tenant reads another language,
// events published with a Heading (deskkit's own, and a host's that has
// one) are written in it for the robots and e-mail when they are
// delivered; the webhook's JSON, machine-read, never changes.
//
// Every attempt is logged, with what the channel's address and secret
// hold masked (see Attempt). Deliveries, Attempts and DeliveryCounts read
// the log; Resend (one more attempt now) and Recover (queue a channel's
// FAILED deliveries again) act on it, throttled per tenant
// (Config.ResendsPerMinute); Enable and Disable act on a channel.
//
// Deliver and Send make one synchronous attempt per channel, outside the
// queue and the log: for a host that wants an answer at once. Most want
// Publish.
//
// # Operating
//
// The throttles, quotas and names are kept in the database, so they hold
// across replicas. On PostgreSQL, Migrate gives the outbox's tables their
// own autovacuum settings, which act only with autovacuum on (PostgreSQL's
// default); examples/server/README.md ("Operating the outbox") says what
// an operator checks and what to do without autovacuum. Publish's
// statement is prepared per connection unless Config.PlainStatements is
// set, for poolers that keep no prepared statements. SQLite, one process,
// needs none of this.
//
// Config.MeterProvider and Config.TracerProvider (nil: the global
// providers, which record nothing until the host installs some) get a
// span per operation and per delivery attempt, the events published, the
// attempts' outcomes and durations and, while Run runs, the outbox's depth
// and oldest due age: Config.MeterProvider lists each instrument.
//
// # Errors
//
// The registry's errors are sentinels and typed errors, matched with
// errors.Is and errors.As: ErrNameTaken, ErrQuotaExceeded (a *QuotaError),
// ErrChannelDisabled, ErrAddressBlocked, and ErrDeliveryFailed (a
// *DeliveryError). Each also matches its class (deskkit.ErrConflict,
// deskkit.ErrInvalid, deskkit.ErrUnavailable), so that httpapi gives each
// a status and a key of its own. Invalid input is a *deskkit.InputError
// naming the field.
package channel
