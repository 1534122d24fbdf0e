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
// The package's examples add a webhook and deliver to it, and publish an
// event in the caller's transaction, as the trash does.
//
// The Mailer is the host's deskkit.Mailer (verify/smtp's is one, so one
// mail server serves both). Without one, e-mail channels can be stored,
// and their messages fail with a DeliveryError saying so.
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
//   - Replace keeps the id and refuses a change of type (the secret and
//     the quota belong to the type).
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
//   - Signing secrets, addresses and custom headers are stored encrypted
//     under a key derived from the server secret, and never logged; a
//     webhook's signing secret is shown in the answer to its add (Added),
//     and again only by RevealSecret or RotateSecret (see Signing
//     secrets). After a rotation of the server secret, keep the previous
//     one in Config.PreviousSecret (New says for how long).
//   - A webhook sends up to 10 custom headers (Input.Headers, Header's
//     rules) with every attempt and test. Their values are treated as
//     secrets (an Authorization token): sealed as the address is, kept out
//     of logs and stored replies, and shown as *** wherever the address is
//     masked. Other types refuse them (TypeInfo.Headers).
//   - Outbound requests never reach loopback, private networks, link-local
//     or cloud metadata addresses: the SSRF guard checks a host written as
//     an IP address (or "localhost") when the channel is saved
//     (ErrAddressBlocked), and every address a name resolves to when a
//     message is sent. Config.AllowPrivateNetworks opens loopback and
//     private networks for development and tests.
//   - No code path holds a pooled connection (a transaction) while it asks
//     the pool for another: a pool of one connection serves every
//     operation, one at a time.
//
// # Sending
//
// Webhook requests follow Standard Webhooks (https://www.standardwebhooks.com):
// headers webhook-id ("msg_" and a unique id, the same on a retry of the
// same message), webhook-timestamp (Unix seconds) and webhook-signature
// ("v1," HMAC-SHA256 or "v1a," ed25519 signatures of "id.timestamp.body",
// space-separated when several sign), and the JSON body {"type",
// "timestamp", "data"}. Any 2xx is success; a redirect is never followed.
// A robot succeeds only on its service's success code (WeCom and DingTalk
// answer 200 when they refuse), Slack on "ok", e-mail when the mail server
// takes every address.
//
// A message has Config.Timeout (10 s) in all. A failure is a
// *DeliveryError (ErrDeliveryFailed) saying what the far end answered and
// whether trying later may help (Retryable).
//
// # Signing secrets
//
// A webhook keeps its signing secret across Replace. RevealSecret shows it
// again and RotateSecret replaces it, the old one signing beside the new
// for an overlap (a day by default, at most 7 days) so that receivers move
// over without a failed delivery; a webhook may sign with ed25519 ("v1a,",
// Channel.Signing, Channel.PublicKey) instead of HMAC or beside it. Each
// reveal and rotation is an event (channel.secret.revealed, .rotated) and
// a log line, never with a secret. Their docs give the rules.
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
// Config.TenantLanguage writes events with a Heading in a tenant's
// language for the robots and e-mail; the webhook's JSON never changes.
//
// Every attempt is logged, masked (see Attempt). Deliveries (filtered by
// DeliveryFilter: status, event types, a creation range), Attempts and
// DeliveryCounts read the log; Resend and Recover act on it, throttled
// per tenant (Config.ResendsPerMinute).
//
// Deliver and Send make one synchronous attempt per channel, outside the
// queue and the log, for a host that wants an answer at once.
//
// # Operating
//
// The throttles, quotas and names are kept in the database, so they hold
// across replicas. On PostgreSQL, Migrate gives the outbox's tables their
// own autovacuum settings, which act only with autovacuum on (PostgreSQL's
// default); examples/server/README.md ("Operating the outbox") says what
// an operator checks and what to do without autovacuum. Publish is
// prepared unless Config.PlainStatements (PgBouncer; see Config.ListenDB);
// the worker's claim and flush keep their plans either way, in functions
// Migrate defines. SQLite, one process, needs none of this.
//
// Config.MeterProvider and Config.TracerProvider (nil: the global ones)
// get spans and the outbox's instruments: Config.MeterProvider lists them.
//
// # Errors
//
// ErrNameTaken, ErrQuotaExceeded (a *QuotaError), ErrChannelDisabled,
// ErrAddressBlocked and ErrDeliveryFailed (a *DeliveryError) each also
// match their class (deskkit.ErrConflict, ErrInvalid, ErrUnavailable), so
// that httpapi gives each a status and a key. Invalid input is a
// *deskkit.InputError naming the field.
package channel
