package channel

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/migrate"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/outbox"
	"github.com/deskkit/deskkit/internal/readroute"
	"github.com/deskkit/deskkit/internal/safehttp"
	"github.com/deskkit/deskkit/internal/telemetry"
)

// Type is the kind of a channel.
type Type string

// The channel types. Answers always carry these canonical names.
const (
	// Webhook: a signed HTTP POST (Standard Webhooks) to any http/https URL.
	Webhook Type = "WEBHOOK"
	// Email: mail to 1 to 10 addresses, one message each.
	Email Type = "EMAIL"
	// EnterpriseChat: a WeCom (WeChat Work) group robot,
	// https://HOST/cgi-bin/webhook/send?key=KEY. It gets
	// {"msgtype":"markdown","markdown":{"content":...}}, cut to 4096
	// bytes.
	EnterpriseChat Type = "ENTERPRISE_CHAT"
	// WorkplaceChat: a DingTalk custom robot,
	// https://HOST/robot/send?access_token=TOKEN, optionally signed. It
	// gets {"msgtype":"markdown","markdown":{"title":...,"text":...}}
	// with the channel's name in both, so that DingTalk's keyword mode
	// passes when the keyword is the channel's name. An optional signing
	// secret (DingTalk's "SEC..." secret, Input.Secret) turns on
	// DingTalk's signing.
	WorkplaceChat Type = "WORKPLACE_CHAT"
)

// Types returns the channel types in the order the documentation gives
// them, in a new slice each time: a caller that changes it changes nothing
// else.
func Types() []Type {
	out := make([]Type, len(registered))
	for i, k := range registered {
		out[i] = Type(k.Info().Type)
	}
	return out
}

// ParseType reads a channel type: a canonical name or an alias
// (TypeInfo.Aliases: WECHAT for ENTERPRISE_CHAT, DINGTALK for
// WORKPLACE_CHAT), in upper case as written.
// Anything else is an *deskkit.InputError for field "channelType".
func ParseType(s string) (Type, error) {
	if _, ok := byType[Type(s)]; ok {
		return Type(s), nil
	}
	if k, ok := byAlias[s]; ok {
		return Type(k.Info().Type), nil
	}
	return "", deskkit.Invalid("channelType", "must be one of %s", typeList())
}

// Bounds of channel fields.
const (
	MaxNameRunes     = 100
	MaxAddressBytes  = 2000
	MaxEmailAddrs    = 10  // addresses in one EMAIL channel
	MaxSecretBytes   = 200 // a DingTalk signing secret as given
	DefaultTestLimit = 20  // test messages per tenant per minute
	// DefaultResendLimit is how many resends and recovers, together, one
	// tenant may ask for in a minute (Config.ResendsPerMinute).
	DefaultResendLimit = 20
	// MaxAttemptsKept is how many attempts of one delivery the log keeps:
	// the newest. Recording one more deletes the oldest past it, so that
	// resends cannot grow a delivery's log without end. It is twice the
	// longest retry schedule, so that a delivery's schedule, run again
	// once by Recover, is kept whole.
	MaxAttemptsKept = 100
	// DefaultTimeout bounds one message, from dial to the end of the
	// reply (all addresses together, for an e-mail channel).
	DefaultTimeout = 10 * time.Second
)

// Quota is how many channels of type t one tenant may have: 5 webhooks,
// 20 e-mail channels, 10 of each robot; 0 for an unknown type. The count
// is one row per tenant and type, taken by a guarded upsert in the
// insert's transaction, so that parallel adds cannot pass the quota on
// either database. Over quota, Add answers a *QuotaError.
func (t Type) Quota() int {
	if k, ok := byType[t]; ok {
		return k.Info().Quota
	}
	return 0
}

// Channel is a channel as the API shows it: never with a secret.
type Channel struct {
	ID      int64  `json:"id" minimum:"1" description:"The channel's id."`
	Type    Type   `json:"channelType"`
	Name    string `json:"name" description:"The channel's name."`
	Address string `json:"address" description:"The address as stored: the URL as sent (trimmed), or the normalised e-mail list. In a list answered to a user who is not an admin (unless the host's channel.Authorizer lets them see addresses), masked: a webhook as its scheme and host followed by /*** (https://hooks.example.com/***), a robot's URL with every query value as *** (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***), an e-mail list as stored."`
	// Enabled is false once the channel was disabled, by hand or for its
	// failures: it then gets no new deliveries until enabled again.
	Enabled bool `json:"enabled" description:"false once the channel was disabled, by hand or for its failures: it then gets no new deliveries until enabled again."`
	// Events is the subscription: event types and prefixes ending in
	// ".*" ("task.*"); empty (never nil in an answer) means every event.
	Events []string `json:"events" description:"The subscription: event types and prefixes ending in .* (task.*); [] means every event."`
	// DisabledReason says why the channel was disabled; "" while enabled.
	// It is written in the reader's language (that of the context's
	// deskkit.Localizer, which httpapi sets per request; English without
	// one), with what the far end answered quoted inside as it came.
	//
	// The registry stores a reason twice over: as its message, key and
	// arguments (deskkit_channels.disabled_reason_json), which it writes
	// in each reader's language, and as its English (disabled_reason), so
	// that an older deskkit, after a rollback, and a reader of the database
	// still read it, and the channel.disabled event quotes it as before. A
	// channel disabled before reasons were stored as messages has its
	// English alone, shown as it is. A delivery's LastError and an
	// Attempt's Error are stored and read the same way (the outbox's
	// last_error and error, with their _json columns).
	DisabledReason string `json:"disabledReason" description:"Why the channel was disabled; empty while enabled."`
	// DisabledDate is when it was disabled, UTC; nil while enabled.
	DisabledDate *time.Time `json:"disabledDate" description:"When the channel was disabled, UTC; null while enabled."`
	// RateLimit is the channel's own limit in messages a second; 0 when
	// it has none, and Config.RateLimit (the server's default) applies.
	RateLimit float64 `json:"rateLimit" minimum:"0" maximum:"1000" description:"The channel's own limit in messages a second, sends spaced evenly (1/rate apart) across every server; 0 when it has none and the server's default applies (none unless the operator set one)."`
	// InFlightLimit is how many deliveries to the channel may be in
	// flight now, across every server: it starts at
	// Config.MaxInFlightPerChannel and moves between that and the
	// ceiling with the channel's answers (see MaxInFlightPerChannel in
	// Config, and Fairness in Run).
	InFlightLimit int `json:"inFlightLimit" minimum:"1" description:"How many deliveries to the channel may be in flight at once now, across every server: it grows while the endpoint answers quickly and halves on 429, 503, timeouts, failed connections or answers much slower than usual, between the server's floor (4 unless set) and its ceiling."`
	// PausedUntil is when the pause a Retry-After asked for ends, UTC;
	// nil when the channel is not paused.
	PausedUntil *time.Time `json:"pausedUntil" description:"While a Retry-After answer pauses the channel (at most an hour), when the pause ends, UTC; null otherwise. No delivery to the channel starts before then."`

	// Health is the channel's state at a glance: HealthHealthy,
	// HealthFailing (its failure clock runs: FailingSince, FailedAttempts,
	// LastStatusCode, LastError) or HealthDisabled (DisabledDate,
	// DisabledReason, DisabledBy). See Health.
	Health Health `json:"health" enum:"healthy,failing,disabled" description:"The channel's state at a glance: healthy (its last counted attempt succeeded, or none failed), failing (every attempt since failingSince failed: see failedAttempts, lastStatusCode, lastError) or disabled (see disabledDate, disabledReason, disabledBy)."`
	// FailingSince is when the first of the failed attempts since the
	// channel's last success was made, UTC; nil after a success (and
	// for a channel that never failed). It stays set on a channel disabled
	// for its failures, until it is enabled again.
	FailingSince *time.Time `json:"failingSince" description:"When the first of the attempts that failed since the channel's last success was made, UTC; null when the last counted attempt succeeded or none failed. Kept on a channel disabled for its failures until it is enabled again."`
	// FailedAttempts is how many attempts failed in a row since
	// FailingSince; 0 after a success.
	FailedAttempts int `json:"failedAttempts" minimum:"0" description:"How many attempts failed in a row since failingSince; 0 when healthy. An attempt that a later success of the same moment made good is not counted."`
	// LastStatusCode is the HTTP status of the last failed attempt
	// counted (0 when it got no reply, or for a channel without one).
	LastStatusCode int `json:"lastStatusCode" minimum:"0" description:"The HTTP status code of the last failed attempt counted in failedAttempts (a robot's reply keeps the HTTP status of its answer); 0 when that attempt got no reply (a timeout, a refused connection) or when the channel is not failing."`
	// LastError is that attempt's error, in the reader's language (as
	// DisabledReason), URLs masked as DisabledReason's; "" when the
	// channel is not failing.
	LastError string `json:"lastError" description:"The error of the last failed attempt counted in failedAttempts, in the reader's language, with what the far end answered quoted inside; empty when the channel is not failing."`
	// Attempts24h is how many attempts to the channel started in the
	// last 24 hours, and AttemptsSucceeded24h how many of them succeeded;
	// SuccessShare24h is their ratio (0 to 1), nil without attempts.
	// These count attempts (a delivery retried five times is five), unlike
	// the delivery totals (DeliveryTotals), which count deliveries by
	// status.
	Attempts24h          int      `json:"attempts24h" minimum:"0" description:"How many attempts to the channel started in the last 24 hours (every retry counts, unlike the deliveries' totals)."`
	AttemptsSucceeded24h int      `json:"attemptsSucceeded24h" minimum:"0" description:"How many of attempts24h succeeded."`
	SuccessShare24h      *float64 `json:"successShare24h" minimum:"0" maximum:"1" description:"attemptsSucceeded24h / attempts24h, from 0 to 1; null when no attempt started in the last 24 hours."`
	// DisabledBy is the user who disabled the channel by hand; nil while
	// enabled, when deskkit disabled it (DisabledReason says why), and for
	// channels disabled before it was kept. DisabledByName is that user's
	// name from Config.Users ("" without the hook, or when it does not
	// know the user).
	DisabledBy     *int64 `json:"disabledBy" minimum:"1" description:"The id of the user who disabled the channel by hand; null while enabled and when deskkit disabled it for its failures or a 410 Gone (disabledReason says why)."`
	DisabledByName string `json:"disabledByName" description:"The display name of disabledBy, from the host's user directory; empty when disabledBy is null or the directory does not know the user."`
	// PreviousSecretUntil is, for a webhook whose signing secret was
	// rotated with an overlap, when the secret it replaced stops signing
	// beside the new one, UTC; nil when no overlap runs (see
	// RotateSecret).
	PreviousSecretUntil *time.Time `json:"previousSecretUntil" description:"WEBHOOK: while the signing secret that the last rotation replaced still signs beside the new one (each request carries both signatures), when it stops, UTC; null otherwise."`
	// Signing is what signs a webhook's requests (SigningHMAC,
	// SigningEd25519 or SigningBoth); "" for the other types.
	Signing Signing `json:"signing,omitempty" description:"WEBHOOK only: what signs its requests: hmac (v1, signatures under the whsec_ secret), ed25519 (v1a, signatures; receivers verify with publicKey) or hmac+ed25519 (both). A rotation changes it."`
	// PublicKey is the public key of a webhook's ed25519 signing key,
	// "whpk_" and the base64 of 32 bytes, for its receiver; "" when it
	// signs with HMAC alone. The signing key itself is never shown.
	PublicKey string `json:"publicKey,omitempty" pattern:"^whpk_[A-Za-z0-9+/]{43}=$" description:"WEBHOOK signing with ed25519 only: the public key, whpk_ and the base64 of 32 bytes, with which the receiver verifies the v1a, signatures. Not a secret; the signing key is never shown."`
	// Headers are the channel's custom HTTP headers (see Input.Headers),
	// in the order given; empty (never nil in an answer) for none. A
	// principal who sees addresses masked sees each value as "***".
	Headers []Header `json:"headers" maxItems:"10" description:"WEBHOOK: the custom HTTP headers sent with every request and test, in the order given; [] for none (and for the other types). To a user who sees addresses masked, each value is ***."`
}

// Health is a channel's state at a glance (Channel.Health).
type Health string

// The states of Channel.Health.
const (
	// HealthHealthy: enabled, and its last attempt counted succeeded
	// (or none failed).
	HealthHealthy Health = "healthy"
	// HealthFailing: enabled, and every attempt since FailingSince
	// failed. After Config.FailingAfter of it, channel.failing is
	// published once.
	HealthFailing Health = "failing"
	// HealthDisabled: disabled, by hand or for its failures.
	HealthDisabled Health = "disabled"
)

// Input is what a client sends to add, replace or test a channel.
type Input struct {
	// ID names the channel to replace (required there); for a test it
	// optionally names the stored channel whose secret signs the message.
	ID int64
	// Type is a canonical type or an alias; see ParseType.
	Type string
	// Name is 1 to MaxNameRunes characters (deskkit.CheckUniqueName: no
	// invisible characters, no space at either end), unique within the
	// tenant without case: a unique index on deskkit.FoldName of the name
	// (deskkit_channels.name_folded) makes "WH2" beside "wh2", or
	// parallel adds of one name, one channel and ErrNameTaken (httpapi:
	// 409). The migration that added the index renamed the newer of two
	// stored names that fold to one key ("wh2 (2)"; the oldest keeps its
	// name) and logged each rename at WARN through slog.Default().
	Name string
	// Address is a URL (WEBHOOK and the robots) or a comma-separated list
	// of e-mail addresses (EMAIL); it is normalised before it is stored.
	//
	// Addresses are at most MaxAddressBytes. URLs must be absolute http or
	// https URLs without user info or fragment, and are stored as sent
	// (trimmed): what URL parsers could read two ways (non-ASCII, spaces,
	// quotes and brackets, percent-encoded or zoned hosts) is refused, not
	// rewritten. A robot's URL needs its exact path (see EnterpriseChat
	// and WorkplaceChat) and exactly one non-empty key or access_token; a
	// DingTalk URL may not carry timestamp or sign itself. A host written
	// as an IP address in any spelling ("127.1", "2130706433",
	// "[::ffff:127.0.0.1]"), or "localhost", is checked against the SSRF
	// guard when the channel is saved (ErrAddressBlocked); names are
	// checked when a message is sent, on every address they resolve to.
	//
	// An EMAIL list has 1 to MaxEmailAddrs addresses, trimmed, each domain
	// in lower case, duplicates dropped, and no empty elements
	// ("a@x.com,,b@x.com"); each address is at most 254 characters, and
	// errors name the element ("the 3rd e-mail address ...").
	Address string
	// Secret is WORKPLACE_CHAT's optional DingTalk signing secret (SEC...).
	// It is write-only: stored encrypted, never shown. On a replace, nil
	// keeps the stored secret and "" removes it. Other types take none.
	Secret *string
	// Events is the subscription: registered event types and prefixes
	// ending in ".*" that match at least one registered type ("task.*"),
	// at most MaxSubscriptions, duplicates dropped; nil or empty means
	// every event. Each entry is checked against the catalogue when the
	// channel is saved (a *deskkit.InputError naming "events" otherwise);
	// a prefix also matches types registered later. A replace replaces it
	// too. A test ignores it.
	Events []string
	// RateLimit is the channel's own limit in messages a second, 0 to
	// MaxRateLimit: 0 for none (Config.RateLimit applies). A replace
	// replaces it too. A test ignores it.
	RateLimit float64
	// Headers are custom HTTP headers sent with every delivery attempt
	// and test: at most MaxHeaders, only for the types that send them
	// (WEBHOOK; TypeInfo.Headers), each checked as Header says, with
	// errors naming headers[i].name or headers[i].value. A replace
	// replaces them (nil: none). A test sends the ones given, or, when
	// it gives none (nil) and names a stored channel whose address it
	// has, that channel's: stored values never go to another address.
	Headers []Header
}

// Added is the answer to an add: the channel and, for a webhook, its
// signing secret, which only an admin's RevealSecret shows again.
type Added struct {
	Channel
	Secret string `json:"secret,omitempty" pattern:"^whsec_[A-Za-z0-9+/]{43}=$" description:"WEBHOOK only: the channel's signing secret, whsec_ and the base64 of 32 random bytes, for the receiver to check the webhook-signature header with a Standard Webhooks library. Store it: only an admin's reveal (POST /event/channel/{id}/secret/reveal) shows it again."`
}

// TestResult is the answer to a successful test.
type TestResult struct {
	// MessageID is the id of the test message, "msg_...", which a webhook
	// gets as its webhook-id. The other protocols carry no id.
	MessageID string `json:"messageId" minLength:"1" description:"The message's id, msg_ and a unique id: a webhook gets it as its webhook-id header; the other protocols carry no id."`
	// Secret is the throwaway signing secret of a webhook test that named
	// no stored channel, so that the receiver can check the signature.
	Secret string `json:"secret,omitempty" pattern:"^whsec_[A-Za-z0-9+/]{43}=$" description:"Only for a webhook test that named no stored channel (by id, or by type and name): the throwaway secret that signed it, so that the receiver can check the signature."`
	// StatusCode is the reply's HTTP status; 0 for e-mail.
	StatusCode int `json:"statusCode" minimum:"0" description:"The reply's HTTP status; 0 for e-mail."`
	// Response is the start of the reply, as an attempt keeps it (see
	// DeliveryError.Response).
	Response string `json:"response" maxLength:"4096" description:"The start of the reply: at most 4 KiB of valid UTF-8, with what the channel's address, secret and signature hold masked as ***."`
}

// Errors the registry returns. Each of its own also matches its class,
// errors.Is(ErrQuotaExceeded, deskkit.ErrConflict) holds, so that httpapi can
// give each a key of its own.
var (
	ErrUnauthenticated = deskkit.ErrUnauthenticated
	ErrForbidden       = deskkit.ErrForbidden // the Authorizer refused; see Authorizer
	ErrNotFound        = deskkit.ErrNotFound  // no such channel in the tenant
	ErrInvalid         = deskkit.ErrInvalid
	ErrRateLimited     = deskkit.ErrRateLimited // the test and resend throttles; a *deskkit.RateLimitError

	// ErrNameTaken: another channel of the tenant has the name.
	ErrNameTaken = deskkit.NewError(deskkit.ErrConflict, "channel: name taken",
		"name is taken by another channel of your tenant")
	// ErrQuotaExceeded: the tenant has as many channels of the type as
	// Quota allows; it comes as a *QuotaError naming the type and the quota.
	ErrQuotaExceeded = deskkit.NewError(deskkit.ErrConflict, "channel: quota exceeded",
		"the tenant has as many channels of this type as allowed")
	// ErrDeliveryFailed: the far end did not take the message; it comes as
	// a *DeliveryError saying what the far end answered.
	ErrDeliveryFailed = deskkit.NewError(deskkit.ErrUnavailable, "channel: delivery failed",
		"the channel did not accept the message")
	// ErrAddressBlocked: the address is, or resolves to, a network address
	// that outbound requests may not reach (loopback, private, link-local,
	// cloud metadata...): the SSRF guard refused before connecting. A
	// refusal at send time is a *DeliveryError with Blocked set.
	ErrAddressBlocked = deskkit.NewError(deskkit.ErrInvalid, "channel: address blocked",
		"address points to a network that channels may not reach")
)

// QuotaError is ErrQuotaExceeded for one type.
type QuotaError struct {
	Type  Type
	Quota int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("channel: quota of %d %s channels reached", e.Quota, e.Type)
}

// ClientMessage says which quota.
func (e *QuotaError) ClientMessage() string { return e.text().String() }

// LocalizedMessage is ClientMessage in tag's language.
func (e *QuotaError) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return e.text().LocalizedMessage(m, tag)
}

func (e *QuotaError) text() deskkit.Text {
	return deskkit.Textf("channelType %s: the tenant has %d channels of this type, the most allowed; delete one first", string(e.Type), e.Quota)
}

// Is makes errors.Is(err, ErrQuotaExceeded) hold.
func (e *QuotaError) Is(target error) bool {
	return target == ErrQuotaExceeded || target == deskkit.ErrConflict
}

// Resolver resolves host names to addresses; *net.Resolver satisfies it.
// The SSRF guard checks every address it returns before dialling one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config holds the registry's optional settings; nil means all defaults.
type Config struct {
	// Authorizer says who besides admins may add, replace, delete and test
	// channels and see their addresses in full. Without one only admins
	// may; every user of a tenant may list its channels, masked.
	Authorizer Authorizer
	// PreviousSecret, if set, is the server secret before the last
	// rotation: secrets and addresses encrypted under it still decrypt.
	// Rows are not re-encrypted under the new key, so keep the previous
	// secret until every channel has been added again. A row that neither
	// key opens (the secret was lost) is an error that httpapi answers 500
	// and logs: the channel must be deleted and added again.
	PreviousSecret []byte
	// TestsPerMinute is how many test messages one tenant may send in a
	// minute, a test of an e-mail channel counting one per address;
	// DefaultTestLimit (20) if 0, no limit if negative. Tests are counted
	// in the database before the send, whatever its outcome, so that the
	// throttle holds across replicas and the endpoint is no relay for
	// spam.
	TestsPerMinute int
	// ResendsPerMinute is how many resends and recovers, together, one
	// tenant may ask for in a minute (each Resend or Recover call counts
	// one, whatever it queues); DefaultResendLimit (20) if 0, no limit if
	// negative. Kept in the database, as the test throttle is, so that it
	// holds across replicas: counted in the transaction that queues the
	// deliveries, so that a refusal for another reason (a disabled
	// channel) counts nothing. Past it, a *deskkit.RateLimitError with the
	// wait until the minute's window ends (httpapi: 429 with Retry-After).
	ResendsPerMinute int
	// AllowPrivateNetworks lets channels reach loopback and private
	// networks (RFC 1918, ULA, CGNAT): for development and tests only.
	// Cloud metadata addresses stay blocked.
	//
	// Without it, outbound HTTP goes through an SSRF guard that checks
	// every address a name resolves to at dial time, on the address
	// actually dialled, so that DNS rebinding cannot slip past: the IANA
	// special-purpose ranges of IPv4 and IPv6 (code.dny.dev/ssrf),
	// IPv4-mapped and NAT64 forms included, and the cloud metadata
	// addresses. No proxy from the environment is used (the guard would
	// check the proxy, not the target), no redirect is followed, and at
	// most 64 KiB of a reply is read. The client's message of
	// ErrAddressBlocked says why: loopback, a private network (and that
	// this setting opens both in development), a cloud metadata endpoint
	// or link-local (never opened), another special-purpose range; it
	// never names an address a name resolved to.
	AllowPrivateNetworks bool
	// Resolver resolves host names for outbound requests; net.DefaultResolver
	// if nil. Tests use it to make names resolve to blocked addresses.
	Resolver Resolver
	// Timeout bounds one message from dial to the end of the reply;
	// DefaultTimeout (10s) if 0 or less.
	Timeout time.Duration
	// AppName names the sender in messages; "deskkit" if "".
	AppName string
	// Logger gets failed deliveries; slog.Default if nil. Secrets are never
	// logged.
	Logger *slog.Logger
	// Now is the clock; time.Now if nil.
	Now func() time.Time

	// RetrySchedule is the delay before each attempt of a delivery, the
	// first counted from the publish and each other from the failure
	// before it, each spread by +-10 %: 1 to 50 delays, none negative.
	// DefaultRetrySchedule if nil (0, 5s, 5m, 30m, 2h, 5h, 10h, 10h). A
	// 429 or 503 with Retry-After waits at least that (at most 24 h).
	// After the schedule's last failure the delivery is FAILED.
	RetrySchedule []time.Duration
	// DisableAfter is how long a channel's attempts must all have failed
	// before it is disabled; DefaultDisableAfter (5 days) if 0.
	//
	// A channel keeps a failure clock: a success resets it; each failed
	// attempt starts it (if it had not) and counts. A channel whose
	// attempts have all failed for DisableAfter with at least
	// DisableMinFailures failed attempts, or a webhook that answers 410
	// Gone, is disabled: it gets no new deliveries, its pending ones end
	// FAILED ("channel disabled"; an attempt in flight finishes, and its
	// retry ends so), the reason and time are shown in lists, and a
	// channel.disabled event (actor null) goes to the tenant's other
	// enabled channels. Its data say the cause ("user", "gone" or
	// "failures", with failingSeconds, attempts and lastError: see
	// ChannelDisabledData), so that the reason, stored in English, is
	// rendered in each reader's language at delivery. Disable does the
	// same by hand; Enable re-enables a channel and clears its clock, and
	// deliveries that failed while it was disabled come back with Recover.
	// Resend and Recover refuse a disabled channel (ErrChannelDisabled).
	DisableAfter time.Duration
	// DisableMinFailures is how many failed attempts, at least, disable a
	// channel after DisableAfter; DefaultDisableMinFailures (10) if 0.
	DisableMinFailures int
	// FailingAfter is how long a channel's attempts must all have failed
	// before channel.failing is published, once per episode (an episode
	// ends with a success, a disable or an enable), to the tenant's other
	// enabled channels; DefaultFailingAfter (1 hour) if 0. The mark that
	// it was published is a column of the channel's row, set by a
	// conditional update in the transaction that counts the failure, so
	// that replicas raise it once between them.
	FailingAfter time.Duration
	// Users names the users who disabled channels by hand
	// (Channel.DisabledByName); optional: without it the name is "".
	Users UserResolver
	// LogRetention is how long attempts, finished deliveries and events
	// are kept before Run's housekeeping purges them, every hour, in
	// batches of 1,000 rows per statement; DefaultLogRetention (30 days)
	// if 0. Pending deliveries are kept whatever their age.
	LogRetention time.Duration
	// Concurrency is how many attempts Run makes at once, and how many
	// idle connections per host the outbound client keeps alive;
	// DefaultConcurrency (16) if 0. Attempts hold no database connection:
	// Run claims with one and records outcomes in flushes with one.
	Concurrency int
	// BatchSize is how many due deliveries one claim takes at most;
	// 4 x Concurrency if 0. Run claims ahead: min(BatchSize, Concurrency)
	// claimed deliveries wait for an attempt to end at first, twice as
	// many after each claim that took that many, up to BatchSize, while
	// each waits briefly; one that waited until less than half its lease
	// is left goes back unattempted (see Run; examples/server/README.md,
	// "Event channels in detail", gives what batches cost the database).
	BatchSize int
	// MaxInFlightPerChannel is the floor of a channel's in-flight limit:
	// how many deliveries to one channel may be in flight at once, counted
	// across every process running Run on the database, while its endpoint
	// hangs or is overloaded, so that such a channel holds that many
	// attempts and not all of them; DefaultMaxInFlightPerChannel (4) if 0.
	// The limit grows above it by one for a limit's worth of quick
	// successes, up to InFlightCeiling, and halves, not under it, on 429,
	// 503, 504, a timeout, a failed connection, a robot's rate limit, or
	// successes more than twice the channel's usual time plus 50 ms (as
	// TCP's window does); a Retry-After on a failure pauses the channel
	// (at most an hour) and leaves it at one delivery in flight until one
	// succeeds. Channel.InFlightLimit and PausedUntil show it, and the
	// histogram deskkit.delivery.in_flight_limit by channel type. It holds
	// also while several processes claim at the same instant (see
	// Fairness in Run).
	MaxInFlightPerChannel int
	// InFlightCeiling is the highest a channel's in-flight limit grows
	// to (MaxInFlightPerChannel is its floor); if 0, TenantConcurrency
	// times the processes running Run on the database (each counts while
	// it runs), so that a channel whose endpoint answers quickly may use a
	// tenant's whole share of every process. At MaxInFlightPerChannel or
	// less, the limit stays at MaxInFlightPerChannel.
	InFlightCeiling int
	// RateLimit is how many messages a second a channel without a rate of
	// its own (Input.RateLimit) gets at most, sends spaced evenly across
	// every process; 0 for no limit. At most MaxRateLimit.
	RateLimit float64
	// TenantConcurrency is how many of Run's Concurrency attempts one
	// tenant's deliveries may hold at once, so that another tenant's event
	// finds one free while a tenant's endpoints hang; half of Concurrency
	// (rounded up) if 0. A host with one tenant sets it to Concurrency.
	TenantConcurrency int
	// MeterProvider records the events published (deskkit.events.published),
	// the worker's delivery attempts (deskkit.deliveries,
	// deskkit.delivery.duration) and, while Run runs, the outbox's gauges;
	// TracerProvider spans every operation and delivery attempt. nil means
	// the global providers (otel.GetMeterProvider, otel.GetTracerProvider),
	// which record nothing until the host installs some.
	//
	// Under the scope github.com/deskkit/deskkit/channel: a span per
	// operation ("channel.Add", "channel.Test", "channel.Publish", ...;
	// status Error when it failed, with deskkit.result), and
	// deskkit.events.published by deskkit.event.type: one per Publish of
	// a new event (not one whose id the tenant published already),
	// counted when Publish returns, so also for an event whose transaction
	// the caller then rolls back.
	//
	// The worker's attempts are recorded by the delivery queue it shares
	// with the verifier's notices, under that queue's own instrumentation
	// scope (not the channel package's): a span "channel.deliver" per
	// attempt (deskkit.event.type, deskkit.channel.type, deskkit.result,
	// and the reply's http.response.status_code; status Error when it
	// failed), the counter deskkit.deliveries and the histogram
	// deskkit.delivery.duration (the attempt's time in seconds), both by
	// deskkit.channel.type (WEBHOOK, EMAIL, ENTERPRISE_CHAT,
	// WORKPLACE_CHAT; "channel" for a channel deleted meanwhile;
	// verify.notice for the notices) and deskkit.result (succeeded;
	// retrying, a failure the schedule tries again; failed, the
	// delivery's end). MaxInFlightPerChannel names one more, the
	// histogram deskkit.delivery.in_flight_limit.
	//
	// Run registers, while it runs, the observable gauges
	// deskkit.outbox.depth (the PENDING deliveries of the whole queue,
	// notices included, those under an attempt too) and
	// deskkit.outbox.oldest_due_age (seconds the oldest due delivery has
	// waited past its due time; 0 when none is due). Each collection runs
	// one query over the pending deliveries' partial index, within 2 s;
	// every replica running Run reports the same values, so take one
	// replica's, or their maximum. The gauges are unregistered when Run
	// returns.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider

	// PlainStatements turns off the preparation of the statement Publish
	// runs on PostgreSQL (prepared once per connection, so that PostgreSQL
	// does not plan it again for every event: most of its cost; the
	// statement is the same either way), and of the delivery worker's
	// calls of its claim and flush (PL/pgSQL functions that Migrate
	// defines, whose plans PostgreSQL keeps in each server session, which
	// a pooler keeps too: they are planned once either way); and Run then
	// LISTENs only on ListenDB, never on db. Set it when connections go through a pooler that keeps no
	// session, such as PgBouncer in transaction mode: db must then also
	// set no session parameter of its own (statement_timeout and the like
	// go per transaction, with SET LOCAL), and Migrate runs on a direct
	// connection, since it holds a session's advisory lock.
	//
	// Unprepared, PostgreSQL plans the statement again for every event,
	// and a trash.Add that publishes takes about 1.7 times one that does
	// not, against about 1.3 prepared. The statement is prepared on the
	// pool only where no connection is held (Run, and a Publish given the
	// database rather than a transaction); inside a transaction it is
	// prepared on the transaction's own connection, and until the first
	// preparation succeeds Publish runs the same statement unprepared.
	PlainStatements bool
	// ListenDB, if set, is the pool Run LISTENs on for the publishers'
	// NOTIFY (see Wake-up in the package doc): a direct connection to
	// the PostgreSQL db reaches, when db goes through a pooler in
	// transaction mode, which cannot keep a LISTEN. One connection of it
	// is held while Run runs, and another is taken now and then for the
	// listener's pings. Without it, Run listens on db, or with
	// PlainStatements not at all: the worker then finds deliveries
	// published by other processes by its poll (within a second), and
	// those of its own process at once.
	ListenDB *bun.DB
	// ReadDB is an optional PostgreSQL hot standby of db (a streaming
	// read replica) for the reads that may be a moment stale: List,
	// ListAll, Get, Deliveries, Attempts, DeliveryCounts and
	// DeliveryTotalsAll (the event types are registered in code and read
	// nothing). A tenant reads its own writes: after Add, Replace, Delete,
	// Enable, Disable, Resend, Recover, Test, RevealSecret, RotateSecret or
	// a Publish given the database, this registry sends the tenant's
	// reads to db until the standby has replayed the write (waiting up to
	// 100 ms for it); a Publish in the caller's transaction sends them to
	// db's position at read time for 10 s. Whatever this process wrote,
	// reads go to db while the standby's replay lag is ReadMaxLag or more
	// or it does not answer; a read the standby fails runs again on db.
	// What the delivery worker records (attempts, outcomes) reaches the
	// standby's readers within the lag bound. Open ReadDB as db is opened
	// (with PlainStatements, nothing is prepared on it either). Nil reads
	// everything from db. The rules are in examples/server/README.md
	// (Read replica).
	ReadDB *bun.DB
	// ReadMaxLag is the replay lag from which ReadDB gets no reads; 1 s
	// if 0.
	ReadMaxLag time.Duration

	// TenantLanguage, if set, tells the language a tenant reads its
	// channels' messages in: a BCP 47 tag or an Accept-Language value
	// ("zh-CN"), "" for English. Run asks it outside any transaction, off
	// the claim loop where it can, and keeps each tenant's answer for
	// TenantLanguageTTL; an error is logged and means English, or the
	// language last read. An event published with a Heading (deskkit's
	// own, and a host's that has one) is written in that language, with
	// Messages, when it is delivered, for the robots and e-mail (whose
	// closing line follows); the webhook's JSON, machine-read, never
	// changes. An event published with a Title and Text, and one published
	// before deskkit kept messages, goes out with the Title and Text it was
	// published with, in every language.
	// It may be called from several goroutines at once, for different
	// tenants, each call bounded by 10 seconds.
	TenantLanguage func(ctx context.Context, tenantID int64) (string, error)
	// TenantLanguageTTL is how long Run keeps a tenant's language before
	// it asks TenantLanguage again, and so how long a change of a
	// tenant's language may take to show in its events;
	// DefaultTenantLanguageTTL (1 minute) if 0. Negative keeps nothing:
	// Run asks once per tenant of every batch, on the claim loop.
	//
	// So a busy queue asks the hook once per tenant and TTL instead of
	// once per tenant and batch: a change of a tenant's language shows in
	// the events delivered from one TTL after it (earlier, often). The
	// first batch of a tenant, and the first after it was idle for a TTL,
	// waits for the hook; from half the TTL a batch asks again in the
	// background and goes on with the language it has, so a tenant with
	// events every half TTL never waits. Batches that need one tenant at
	// once make one call; at most 4 calls run at once, each within 10
	// seconds. A call that fails is logged when the tenant's calls start
	// failing, means the language last read (English if none), is made
	// again 5 seconds later in the background, and makes no batch wait.
	// Tenants without events for two TTLs are forgotten.
	TenantLanguageTTL time.Duration
	// Messages translates the rendered events; deskkit's shipped
	// catalogues if nil.
	Messages *deskkit.Messages
}

// withDefaults returns a copy of c (nil: of the zero Config) with the
// defaults filled in, RetrySchedule copied so that the caller's slice is
// not shared. New calls it, then validate on the copy, as every
// constructor of the module does.
func (c *Config) withDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.TestsPerMinute == 0 {
		out.TestsPerMinute = DefaultTestLimit
	}
	if out.ResendsPerMinute == 0 {
		out.ResendsPerMinute = DefaultResendLimit
	}
	if strings.TrimSpace(out.AppName) == "" {
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
	if out.Timeout <= 0 {
		out.Timeout = DefaultTimeout
	}
	if out.RetrySchedule == nil {
		out.RetrySchedule = DefaultRetrySchedule()
	} else {
		out.RetrySchedule = slices.Clone(out.RetrySchedule)
	}
	if out.DisableAfter == 0 {
		out.DisableAfter = DefaultDisableAfter
	}
	if out.FailingAfter == 0 {
		out.FailingAfter = DefaultFailingAfter
	}
	if out.DisableMinFailures == 0 {
		out.DisableMinFailures = DefaultDisableMinFailures
	}
	if out.LogRetention == 0 {
		out.LogRetention = DefaultLogRetention
	}
	if out.Concurrency == 0 {
		out.Concurrency = DefaultConcurrency
	}
	if out.TenantLanguageTTL == 0 {
		out.TenantLanguageTTL = DefaultTenantLanguageTTL
	}
	return &out
}

// validate checks a Config that withDefaults filled in.
func (c *Config) validate() error {
	if c.PreviousSecret != nil && len(c.PreviousSecret) < MinSecretLength {
		return fmt.Errorf("channel: PreviousSecret must be at least %d bytes", MinSecretLength)
	}
	if err := outbox.CheckSchedule(c.RetrySchedule); err != nil {
		return fmt.Errorf("channel: Config.RetrySchedule: %w", err)
	}
	switch {
	case c.DisableAfter < 0:
		return errors.New("channel: Config.DisableAfter must not be negative")
	case c.FailingAfter < 0:
		return errors.New("channel: Config.FailingAfter must not be negative")
	case c.DisableMinFailures < 0:
		return errors.New("channel: Config.DisableMinFailures must not be negative")
	case c.LogRetention < 0:
		return errors.New("channel: Config.LogRetention must not be negative")
	case c.Concurrency < 0 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("channel: Config.Concurrency must be between 1 and %d", MaxConcurrency)
	case c.BatchSize < 0 || c.BatchSize > MaxConcurrency:
		return fmt.Errorf("channel: Config.BatchSize must be between 1 and %d", MaxConcurrency)
	case c.MaxInFlightPerChannel < 0:
		return errors.New("channel: Config.MaxInFlightPerChannel must not be negative")
	case c.TenantConcurrency < 0:
		return errors.New("channel: Config.TenantConcurrency must not be negative")
	case c.InFlightCeiling < 0:
		return errors.New("channel: Config.InFlightCeiling must not be negative")
	case !(c.RateLimit >= 0 && c.RateLimit <= MaxRateLimit):
		return fmt.Errorf("channel: Config.RateLimit must be between 0 and %d", MaxRateLimit)
	}
	return nil
}

// Defaults of Config's delivery settings.
const (
	DefaultDisableAfter       = 5 * 24 * time.Hour
	DefaultDisableMinFailures = 10
	DefaultFailingAfter       = time.Hour
	DefaultLogRetention       = 30 * 24 * time.Hour
	DefaultConcurrency        = 16
	// DefaultMaxInFlightPerChannel is Config.MaxInFlightPerChannel's
	// default.
	DefaultMaxInFlightPerChannel = 4
	// MaxConcurrency bounds Config.Concurrency: each attempt may hold an
	// outbound connection and, while it records its outcome, a database
	// connection.
	MaxConcurrency = 256
	// MaxRateLimit bounds a channel's rate limit and Config.RateLimit,
	// in messages a second.
	MaxRateLimit = 1000
)

// DefaultRetrySchedule returns the default delays before each attempt
// (Config.RetrySchedule): 0, 5s, 5m, 30m, 2h, 5h, 10h and 10h, eight
// attempts over about 27 hours, as Svix makes them. A new slice each time.
func DefaultRetrySchedule() []time.Duration { return slices.Clone(outbox.DefaultSchedule) }

// ChannelRegistry stores a tenant's event channels and sends messages
// through them. It is safe for concurrent use, also by several processes
// sharing one database: quotas, names and the test and resend throttles are kept there.
type ChannelRegistry struct {
	db     *bun.DB
	reads  *readroute.Router // the reads Config.ReadDB may serve: db, or it
	cfg    Config
	seal   *sealer
	sender *notify.Sender
	pg     bool

	// types is the event catalogue, by name.
	typesMu sync.RWMutex
	types   map[string]deskkit.EventType

	worker *outbox.Worker
	// publishes writes Publish's event and deliveries; on PostgreSQL its
	// statement is prepared per connection (prepare).
	publishes *outbox.Enqueuer
	// publishesExcept is publishes leaving one channel out (its last
	// argument): channel.failing goes to the failing channel's tenant's
	// other channels, the failing one being still enabled.
	publishesExcept *outbox.Enqueuer
	// prepareFailed is when preparing it last failed (Unix ms; 0 for
	// never): a Publish tries again only a minute later.
	prepareFailed atomic.Int64
	// kick asks Run to wake the worker after a publish.
	kick    chan struct{}
	running atomic.Bool
	// remaining holds, from an e-mail attempt to its record, the
	// addresses it did not reach (delivery id to owed).
	remaining sync.Map
	// chans holds the channels the worker opened, across batches.
	chans channelCache
	// langs holds the tenants' languages; nil without
	// Config.TenantLanguage.
	langs *languageCache

	ops       telemetry.Ops
	published metric.Int64Counter
}

// MinSecretLength is the shortest server secret New accepts.
const MinSecretLength = 32

// New returns a registry over db, whose schema Migrate has created. secret
// is the server secret (at least MinSecretLength random bytes) from which
// the key that encrypts channel secrets and addresses is derived; mail
// sends the EMAIL channels' messages (nil: EMAIL channels can be stored but
// a test or delivery fails with ErrDeliveryFailed).
//
// A webhook gets a signing secret when it is added: "whsec_" and the
// base64 of 32 random bytes, in the add's answer and nowhere else (lists
// never show a secret). Signing secrets and addresses (a robot's address
// carries its key, and webhook URLs often carry tokens) are stored
// encrypted with AES-256-GCM under a key derived from secret
// (HKDF-SHA256), bound to the row's tenant, type and field, so that a
// database dump leaks neither and a ciphertext copied to another tenant
// or field does not decrypt. (The row id is not bound: it is not known
// before the insert.) Secrets and addresses are never logged. After a
// rotation of the server secret, Config.PreviousSecret keeps the rows
// written before it readable.
//
// New checks, after its arguments, that Migrate has run: one catalog query
// for the registry's and the outbox's tables, bounded by 5 seconds of its
// own (New takes no context). A missing table is an error naming the call
// that creates it ("channel.New: table deskkit_channels does not exist:
// run channel.Migrate(ctx, db) first"); a database that does not answer in
// time, or fails, is an error of its own that wraps the database's
// (context.DeadlineExceeded for the bound) and says nothing of migrating.
func New(db *bun.DB, secret []byte, mail deskkit.Mailer, cfg *Config) (*ChannelRegistry, error) {
	switch {
	case db == nil:
		return nil, errors.New("channel: db is required")
	case len(secret) < MinSecretLength:
		return nil, fmt.Errorf("channel: secret must be at least %d bytes", MinSecretLength)
	}
	dialect, err := migrate.DialectOf(db)
	if err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	seal, err := newSealer(secret, c.PreviousSecret)
	if err != nil {
		return nil, err
	}
	if err := migrate.Check(db, "channel.New", "channel.Migrate", tables, outbox.Migrations, migrations(c.Logger)); err != nil {
		return nil, err
	}
	client := safehttp.New(safehttp.Config{
		AllowPrivateNetworks: c.AllowPrivateNetworks,
		Resolver:             c.Resolver,
		Timeout:              c.Timeout,
		// Keep a connection alive for every attempt that may run at
		// once: a new TLS connection per delivery costs more than the
		// delivery.
		MaxIdleConnsPerHost: c.Concurrency,
	})
	r := &ChannelRegistry{
		db:     db,
		cfg:    *c,
		seal:   seal,
		sender: &notify.Sender{HTTP: client, Mail: mail, Now: c.Now, AppName: c.AppName},
		pg:     dialect.Postgres,
		types:  map[string]deskkit.EventType{},
		kick:   make(chan struct{}, 1),
	}
	if c.TenantLanguage != nil {
		r.langs = newLanguageCache(c)
	}
	if err := r.RegisterEventTypes(EventTypes()...); err != nil {
		return nil, err
	}
	targets := sqliteTargets
	if r.pg {
		targets = postgresTargets
	}
	r.publishes = outbox.NewEnqueuer(db, outboxKind, targets)
	r.publishesExcept = outbox.NewEnqueuer(db, outboxKind, targets+exceptTarget)
	if c.ListenDB != nil && !r.pg {
		return nil, errors.New("channel: Config.ListenDB is for PostgreSQL; SQLite has no LISTEN")
	}
	if c.ReadDB != nil {
		if rd, err := migrate.DialectOf(c.ReadDB); err != nil || !rd.Postgres || !r.pg {
			return nil, errors.New("channel: Config.ReadDB is for a PostgreSQL standby of a PostgreSQL db")
		}
	}
	if c.ReadMaxLag < 0 {
		return nil, errors.New("channel: ReadMaxLag must not be negative")
	}
	if r.reads, err = readroute.New(db, c.ReadDB, readroute.Config{Now: c.Now, MaxLag: c.ReadMaxLag}); err != nil {
		return nil, err
	}
	r.worker, err = outbox.NewWorker(db, outbox.Config{
		PlainStatements:   c.PlainStatements,
		TargetState:       stateSQL,
		Kind:              outboxKind,
		Handler:           (*handler)(r),
		Concurrency:       c.Concurrency,
		BatchSize:         c.BatchSize,
		TargetInFlight:    c.MaxInFlightPerChannel,
		TargetInFlightMax: c.InFlightCeiling,
		TargetRate:        c.RateLimit,
		TenantSlots:       c.TenantConcurrency,
		Lease:             lease(c.Timeout),
		InFlightFor:       2*c.Timeout + recordMargin,
		Schedule:          c.RetrySchedule,
		Now:               c.Now,
		Logger:            c.Logger,

		MeterProvider:  c.MeterProvider,
		TracerProvider: c.TracerProvider,
		SpanName:       "channel.deliver",
	})
	if err != nil {
		return nil, fmt.Errorf("channel: %w", err)
	}
	r.ops, r.published = newTelemetry(*c)
	return r, nil
}

// recordMargin is how long, past twice the timeout (a claimed delivery's
// wait for a slot, at most one attempt's time, then its own attempt), a
// lease counts toward its channel's MaxInFlightPerChannel: the time to
// record it (a flush's wait, and its tries when the connection is lost).
// A worker that died holds its channels' caps no longer than that after
// its claims.
const recordMargin = 5 * time.Second

// lease is how long a claimed delivery stays one worker's: its wait for a
// slot and its attempt (each bounded by the timeout, every address of an
// e-mail channel together),
// the outcome's record, and a margin for a slow database. A lease that
// ended before the outcome came would have the attempt made twice.
func lease(timeout time.Duration) time.Duration { return 2*timeout + time.Minute }

//go:embed migrations/*.sql
var migrationFiles embed.FS

// tables are the tables Migrate creates, which New checks for.
var tables = slices.Concat([]string{"deskkit_channels", "deskkit_channel_counts", "deskkit_channel_limits"}, outbox.Tables)

// Migrate creates or updates the registry's tables (deskkit_channels,
// deskkit_channel_counts, deskkit_channel_limits and the
// deskkit_channel_migrations bookkeeping) and the outbox's, through which
// events reach channels (deskkit_outbox_events, deskkit_outbox_deliveries,
// deskkit_outbox_attempts and deskkit_outbox_migrations). It is safe to
// run from several processes at once.
//
// On PostgreSQL each delivery is a row written once and updated twice
// (its claim, its outcome), and neither update can be HOT: each changes a
// column of the index of pending deliveries the claims read
// (deskkit_outbox_target_due_idx) or of its predicate, so a delivered row
// leaves two dead versions in deskkit_outbox_deliveries and two dead
// entries in that index until a vacuum removes them, and every claim
// steps over the dead entries of the channels it reaches. Migrate
// therefore sets the queue tables' own autovacuum settings: the
// deliveries table is vacuumed after 10,000 dead versions (5,000
// deliveries) however long its log of finished rows, with its indexes
// always cleaned, and analyzed every 20,000 changes; the events and
// attempts, written once and purged by age, every 5 % of growth or
// deletion. They take effect only with autovacuum on, PostgreSQL's
// default; a server that runs without it must VACUUM
// deskkit_outbox_deliveries itself, every minute or so under load. What
// an operator checks: n_dead_tup, last_autovacuum and autovacuum_count of
// deskkit_outbox_deliveries in pg_stat_user_tables (dead versions fall
// back at least once a minute while deliveries flow), the pending index's
// size (pg_relation_size) against the number of pending deliveries, and
// transactions open for minutes (pg_stat_activity), which keep every dead
// version of the database from being removed. examples/server/README.md
// ("Operating the outbox") gives the queries. SQLite needs none of this.
//
// The migration that made names unique without case renames stored names
// that collide (see Input.Name).
func Migrate(ctx context.Context, db *bun.DB) error {
	if err := outbox.Migrate(ctx, db); err != nil {
		return err
	}
	m := migrations(slog.Default())
	return migrate.Run(ctx, db, m.Table, m.FS, m.Steps...)
}

// migrations is what Migrate applies after the outbox's, and New checks;
// log is where its step of folded names reports.
func migrations(log *slog.Logger) migrate.Set {
	return migrate.Set{Table: "deskkit_channel_migrations", FS: migrationFiles, Steps: []migrate.Step{foldedNamesStep(log)}}
}

// now is the clock in Unix milliseconds, the unit of the tables.
func (r *ChannelRegistry) now() int64 { return r.cfg.Now().UnixMilli() }

// tenant checks the principal and returns its tenant.
func tenant(p deskkit.Principal) (int64, error) {
	if !p.Valid() {
		return 0, ErrUnauthenticated
	}
	return p.TenantID, nil
}

// wrote tells the read router that p's tenant wrote, after an operation
// that ended with err: nil, or an error that may follow a commit.
func (r *ChannelRegistry) wrote(ctx context.Context, p deskkit.Principal, err error) {
	if p.Valid() && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrForbidden) && !errors.Is(err, deskkit.ErrInvalid) && !errors.Is(err, ErrUnauthenticated) {
		r.reads.Wrote(ctx, p.TenantID)
	}
}
