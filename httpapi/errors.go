package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/envelope"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/ratelog"
	"github.com/deskkit/deskkit/verify"
)

// Error keys of ext.eKey. They are part of the API: clients may switch on them.
const (
	KeyValidation         = "param_validation_error"
	KeyUnauthorized       = "unauthorized"
	KeyForbidden          = "forbidden"
	KeyNotFound           = "resource_not_found"
	KeyConflict           = "resource_conflict"
	KeyTooManyRequests    = "too_many_requests"
	KeyServiceUnavailable = "service_unavailable"
	KeyRouteNotFound      = "route_not_found"
	KeyMethodNotAllowed   = "method_not_allowed"
	KeyRequestTooLarge    = "request_too_large"
	KeyInternal           = "internal_error"

	// The verification service's own keys.
	KeyCodeWrong         = "verification_code_wrong"
	KeyCodeExpired       = "verification_code_expired"
	KeyCodeMissing       = "verification_code_missing"
	KeyCodeExhausted     = "verification_code_exhausted"
	KeyTooManyFailures   = "verification_failures_exceeded"
	KeySendFailed        = "verification_send_failed"
	KeySendThrottled     = "verification_send_throttled"
	KeyAddressTaken      = "verification_address_taken"
	KeyAlreadyBound      = "verification_already_bound"
	KeyNotBound          = "verification_not_bound"
	KeyLinkSecretRefused = "link_secret_invalid"

	// The event channels' own keys.
	KeyChannelNameTaken      = "channel_name_taken"
	KeyChannelQuotaExceeded  = "channel_quota_exceeded"
	KeyChannelAddressBlocked = "channel_address_blocked"
	KeyChannelTestFailed     = "channel_test_failed"
	KeyChannelDisabled       = "channel_disabled"
)

// errorRow is how one kind of error is answered.
type errorRow struct {
	match  func(error) bool
	status int
	code   string
	key    string
	msg    string // when the error is no deskkit.ClientMessager
	// unavailable rows get Retry-After and are logged once per interval.
	unavailable bool

	// For the OpenAPI document: what the key means, an example message,
	// and the header its answers carry.
	when, example, header string
}

// is matches the errors for which errors.Is(err, target) holds.
func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// errorTable is the one place that maps errors to HTTP, read top down: the
// first row that matches answers. Rows go from specific to generic, so a
// service's own error (verify's code expired, with a key of its own) goes
// above the row of its class (deskkit.ErrInvalid). An error that matches no
// row is unexpected: it is logged and answered 500 without its text. The
// OpenAPI document is generated from it: its error table, and each
// operation's error answers. The package documentation lists the same
// rows; TestPackageDocListsErrorTable holds the two together.
var errorTable = []errorRow{
	// Service rows go here, above the classes they also match.
	{match: is(verify.ErrCodeWrong), status: http.StatusBadRequest, code: envelope.CodeBusiness, key: KeyCodeWrong, when: "the verification code does not match; `msg` says how many attempts are left", example: "verificationCode is wrong; 4 attempts are left"},
	{match: is(verify.ErrCodeExpired), status: http.StatusBadRequest, code: envelope.CodeBusiness, key: KeyCodeExpired, when: "the code matched one that has expired: request a new one", example: "verificationCode has expired: request a new code"},
	{match: is(verify.ErrCodeMissing), status: http.StatusBadRequest, code: envelope.CodeBusiness, key: KeyCodeMissing, when: "no usable code for this bizKey and address: never sent, replaced, its send failed (`msg`: \"no code is waiting for this bizKey and address: request one first\"), or already used: then `msg` says so, and for BIND_MOBILE and BIND_EMAIL points at the linkSecret that the check which used it answered, which the change takes, alone or with that code", example: "the code sent for this bizKey and address was already used by a check: change the address with the linkSecret that check answered (alone, or with this verificationCode), or request a new code"},
	{match: is(verify.ErrCodeExhausted), status: http.StatusTooManyRequests, code: envelope.CodeQuota, key: KeyCodeExhausted, when: "the code had 5 wrong attempts and is dead: request a new one", example: "verificationCode had too many wrong attempts: request a new code"},
	{match: is(verify.ErrTooManyFailures), status: http.StatusTooManyRequests, code: envelope.CodeQuota, key: KeyTooManyFailures, when: "the user entered too many wrong codes today", example: "too many wrong codes today: try again later", header: "Retry-After"},
	// A provider's throttle is a wait, not a refusal: 503 with its
	// Retry-After, above the 502 of the send failure it also is.
	{match: is(verify.ErrSendThrottled), status: http.StatusServiceUnavailable, code: envelope.CodeSystem, key: KeySendThrottled, when: "the SMS provider refused the message for its rate limits (per number or per account); nothing went out and the send's limits were given back: retry after Retry-After seconds, the provider's wait, or 60 without one", example: "the SMS provider is throttling messages: try again later", header: "Retry-After"},
	{match: is(verify.ErrSendFailed), status: http.StatusBadGateway, code: envelope.CodeSystem, key: KeySendFailed, when: "the SMS gateway or mail server did not accept the message", example: "the message could not be sent: try again later"},
	{match: is(verify.ErrAddressTaken), status: http.StatusConflict, code: envelope.CodeBusiness, key: KeyAddressTaken, when: "another user of the tenant has the mobile number or e-mail address", example: "the address belongs to another user"},
	{match: is(verify.ErrAlreadyBound), status: http.StatusConflict, code: envelope.CodeBusiness, key: KeyAlreadyBound, when: "BIND_MOBILE or BIND_EMAIL for a user who has such an address: use MODIFY_*", example: "you have an address of this kind already: use MODIFY_MOBILE or MODIFY_EMAIL"},
	{match: is(verify.ErrNotBound), status: http.StatusConflict, code: envelope.CodeBusiness, key: KeyNotBound, when: "MODIFY_MOBILE or MODIFY_EMAIL for a user without such an address: use BIND_*", example: "you have no address of this kind to modify: use BIND_MOBILE or BIND_EMAIL"},
	{match: is(verify.ErrLinkSecret), status: http.StatusForbidden, code: envelope.CodeBusiness, key: KeyLinkSecretRefused, when: "the linkSecret is unknown, used, expired, or was not won for this user, bizKey and address (the current one with MODIFY_*, the new one with BIND_*)", example: "linkSecret is not valid: check a code sent to your current address to get one"},
	{match: is(channel.ErrNameTaken), status: http.StatusConflict, code: envelope.CodeBusiness, key: KeyChannelNameTaken, when: "another channel of the tenant has the name", example: "name is taken by another channel of your tenant"},
	// A quota of stored things is a conflict with what is stored (delete
	// one first), not a rate: 409, without Retry-After, and E3 as quotas are.
	{match: is(channel.ErrQuotaExceeded), status: http.StatusConflict, code: envelope.CodeQuota, key: KeyChannelQuotaExceeded, when: "the tenant has as many channels of the type as allowed (5 webhooks, 20 e-mail, 10 of each robot kind): delete one first", example: "channelType WEBHOOK: the tenant has 5 channels of this type, the most allowed; delete one first"},
	{match: is(channel.ErrChannelDisabled), status: http.StatusConflict, code: envelope.CodeBusiness, key: KeyChannelDisabled, when: "the channel is disabled: it gets no deliveries until an admin enables it again", example: "the channel is disabled; enable it first"},
	{match: is(channel.ErrAddressBlocked), status: http.StatusBadRequest, code: envelope.CodeBusiness, key: KeyChannelAddressBlocked, when: "the channel's address is, or resolves to, an address channels may not reach; `msg` names the reason: loopback or a private network (with the setting that opens both in development: channel.Config.AllowPrivateNetworks, the reference server's -channel-allow-private-networks), a cloud metadata endpoint or link-local (never opened), or another special-purpose range", example: "address is loopback (this server itself), which channels may not reach; in development, channel.Config.AllowPrivateNetworks (the reference server's -channel-allow-private-networks) lets channels reach loopback and private networks"},
	// The far end refused a test message: a bad gateway, not an outage of
	// ours, so above the 503 row its class (deskkit.ErrUnavailable) matches.
	{match: is(channel.ErrDeliveryFailed), status: http.StatusBadGateway, code: envelope.CodeSystem, key: KeyChannelTestFailed, when: "the channel did not take the test message; `msg` says what the far end answered (its HTTP status, or a robot's errcode and errmsg), or why it could not be reached", example: "the webhook answered 410 Gone"},
	// A body over Config.MaxBodyBytes: the message names the limit.
	{match: tooLarge, status: http.StatusRequestEntityTooLarge, code: envelope.CodeProtocol, key: KeyRequestTooLarge, msg: "the request body is too large", when: "the request body is larger than the server takes (1 MiB by default)", example: "body must be at most 1048576 bytes"},
	{match: is(deskkit.ErrInvalid), status: http.StatusBadRequest, code: envelope.CodeProtocol, key: KeyValidation, msg: "the request is not valid", when: "a parameter or body field is missing, malformed, out of bounds, unknown or given twice; `msg` names it and the rule", example: "projectId must be a positive integer"},
	{match: is(deskkit.ErrUnauthenticated), status: http.StatusUnauthorized, code: envelope.CodeProtocol, key: KeyUnauthorized, msg: "a valid bearer token is required", when: "no bearer token, or one that names no user", example: "a valid bearer token is required", header: "WWW-Authenticate"},
	{match: is(deskkit.ErrForbidden), status: http.StatusForbidden, code: envelope.CodeBusiness, key: KeyForbidden, msg: "you may not do this", when: "the user may not do this", example: "you may not do this"},
	{match: is(deskkit.ErrNotFound), status: http.StatusNotFound, code: envelope.CodeBusiness, key: KeyNotFound, msg: "the resource does not exist", when: "the resource does not exist in the caller's tenant", example: "the resource does not exist"},
	{match: is(deskkit.ErrConflict), status: http.StatusConflict, code: envelope.CodeBusiness, key: KeyConflict, msg: "the request conflicts with the current state", when: "the request contradicts the current state", example: "the request conflicts with the current state"},
	{match: is(deskkit.ErrRateLimited), status: http.StatusTooManyRequests, code: envelope.CodeQuota, key: KeyTooManyRequests, msg: "too many requests", when: "a quota is exhausted", example: "a code for MODIFY_MOBILE was sent to this address less than 1 minute ago", header: "Retry-After"},
	// Last of the known rows: an answer the service did give (400, 404...)
	// stands even when the deadline passed just after.
	{match: unavailable, status: http.StatusServiceUnavailable, code: envelope.CodeSystem, key: KeyServiceUnavailable, msg: "the service is temporarily unavailable; retry later", unavailable: true, when: "the database (or another dependency) could not answer within the request deadline; nothing was changed, retry later", example: "the service is temporarily unavailable; retry after 5 seconds", header: "Retry-After"},
}

// routerErrors are the answers of the router and of the last resort: no
// error matches them, they are in the document's table.
var routerErrors = []errorRow{
	{status: http.StatusNotFound, code: envelope.CodeProtocol, key: KeyRouteNotFound, when: "no route serves the path (any method); paths are never cleaned or redirected: `//`, `.`, `..` and trailing slashes name no route", example: "no route GET /api/v1/task/trash/7/.."},
	{status: http.StatusMethodNotAllowed, code: envelope.CodeProtocol, key: KeyMethodNotAllowed, when: "the path is served for other methods only; HEAD and OPTIONS are served nowhere", example: "method POST is not allowed on /api/v1/task/trash/search; allowed: GET", header: "Allow"},
	{status: http.StatusInternalServerError, code: envelope.CodeSystem, key: KeyInternal, when: "anything else: a bug, logged on the server; its text is never sent", example: "internal server error"},
}

// tooLarge reports whether err is, or wraps, a body read over its limit.
func tooLarge(err error) bool {
	var e *http.MaxBytesError
	return errors.As(err, &e)
}

// unavailable reports whether err means that a dependency could not answer
// in time: deskkit.ErrUnavailable, what database.Unavailable recognises
// (the request deadline, pool and statement timeouts, refused and reset
// connections, too many clients, shutdown, SQLite busy), and a closed pool
// (the host is shutting down).
func unavailable(err error) bool {
	return errors.Is(err, deskkit.ErrUnavailable) || database.Unavailable(err)
}

// Problem is how the API answers an error, by the one error table: what
// WriteError writes, and what a page of the console shows for it, so that
// both answer an error with the same status, eKey and message.
type Problem struct {
	Status int    // the HTTP status
	Code   string // the envelope's code (envelope.CodeProtocol...)
	Key    string // the envelope's ext.eKey
	// Message is the message for the client, written in the reader's
	// language by deskkit.Localizer.Write: the error's own when it is a
	// deskkit.ClientMessager (written in the reader's language when it is
	// a deskkit.LocalizedMessager), else the row's; for an unexpected
	// error, the generic one.
	Message deskkit.LocalizedMessager
	// RetryAfter is the answer's Retry-After in seconds, 0 for none: the
	// error's own wait (deskkit.RetryAfterer), or for an outage
	// DefaultRetryAfter (Config.RetryAfter for the API's own answers).
	RetryAfter int
	// Outage is an outage (503 service_unavailable): logged once per
	// interval, not once per request.
	Outage bool
	// Unexpected is an error no row matches (500 internal_error): it is
	// logged, and its text never reaches the client.
	Unexpected bool
}

// ProblemOf is err's answer by the error table: its first matching row,
// read top down. ctx is the context of the request that met err: when it
// has run out of time, an error no row matches is an outage, not a bug;
// when its client went away, the answer is an outage's, for nobody, and
// neither Outage nor Unexpected (nothing to log).
func ProblemOf(ctx context.Context, err error) Problem {
	return problemOf(ctx, err, DefaultRetryAfter)
}

// problemOf is ProblemOf with wait, the Retry-After of an outage whose
// error does not say.
func problemOf(ctx context.Context, err error, wait time.Duration) Problem {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// The client went away: nobody reads the answer, and it is no
		// fault of ours. Answer as for an outage, without logging.
		return unavailableProblem(err, wait)
	}
	for _, row := range errorTable {
		if !row.match(err) {
			continue
		}
		if row.unavailable {
			p := unavailableProblem(err, wait)
			p.Outage = true
			return p
		}
		p := Problem{Status: row.status, Code: row.code, Key: row.key, Message: clientMessage(err, row.msg)}
		var ra deskkit.RetryAfterer
		if errors.As(err, &ra) {
			p.RetryAfter = seconds(ra.RetryAfterDuration())
		}
		return p
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The request ran out of time and whatever failed lost the cause
		// on the way up: still an outage, not a bug.
		p := unavailableProblem(err, wait)
		p.Outage = true
		return p
	}
	return Problem{Status: http.StatusInternalServerError, Code: envelope.CodeSystem, Key: KeyInternal, Message: key(internalError), Unexpected: true}
}

// unavailableProblem is a 503 with Retry-After: err's own if it is a
// deskkit.RetryAfterer, wait otherwise. The message is generic unless err
// carries one for the client: a driver's text names hosts.
func unavailableProblem(err error, wait time.Duration) Problem {
	var ra deskkit.RetryAfterer
	if errors.As(err, &ra) {
		wait = ra.RetryAfterDuration()
	}
	secs := seconds(wait)
	msg := clientMessage(err, "")
	if msg == key("") {
		msg = deskkit.Textf("the service is temporarily unavailable; retry after %d seconds", secs)
	}
	return Problem{Status: http.StatusServiceUnavailable, Code: envelope.CodeSystem, Key: KeyServiceUnavailable, Message: msg, RetryAfter: secs}
}

// WriteError answers err as an error envelope, as ProblemOf tells: the
// status, code and key of its row in the error table, the message, and
// Retry-After. Only unexpected errors are logged, and their text never
// reaches the client; outages (503) are logged once per
// Config.OutageLogInterval, and their Retry-After, when the error does not
// say, is Config.RetryAfter.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	p := problemOf(r.Context(), err, s.cfg.RetryAfter)
	switch {
	case p.Outage:
		s.outages.note(r, err)
	case p.Unexpected:
		s.cfg.Logger.ErrorContext(r.Context(), "unexpected error", slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()), slog.Any("error", err))
	}
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="deskkit"`)
	}
	s.writeError(w, r, p.Status, p.Code, p.Key, p.Message)
}

// internalError is the message of a 500: a key of the catalogues.
const internalError = "internal server error"

// clientMessage is err's message for the client if it has one (written in
// the reader's language when it is a deskkit.LocalizedMessager), else def,
// a key of the catalogues.
func clientMessage(err error, def string) deskkit.LocalizedMessager {
	var m deskkit.ClientMessager
	if errors.As(err, &m) {
		if msg := m.ClientMessage(); msg != "" {
			if l, ok := m.(deskkit.LocalizedMessager); ok {
				return l
			}
			return verbatim(msg)
		}
	}
	return key(def)
}

// key is a message of the catalogues without arguments.
type key string

// LocalizedMessage is k in tag's language.
func (k key) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return m.Sprintf(tag, string(k))
}

// verbatim is a message that has no translation: the same in every
// language.
type verbatim string

// LocalizedMessage is v.
func (v verbatim) LocalizedMessage(*deskkit.Messages, language.Tag) string { return string(v) }

// seconds is d as Retry-After writes it: whole seconds, at least one.
func seconds(d time.Duration) int {
	return int(max(1, math.Ceil(d.Seconds())))
}

// outageLog logs 503s at most once per interval: an outage fails every
// request, and one line per request buries everything else. The first 503
// is logged at once; the ones that follow within the interval are counted,
// and the next line says how many. When the outage ends (the first request
// that succeeds after 503s were held back) a last line gives the count
// since, so that it does not wait for the next outage.
type outageLog struct {
	logger *slog.Logger
	every  *ratelog.Every
}

func (o *outageLog) note(r *http.Request, err error) {
	ok, suppressed := o.every.Allow()
	if !ok {
		return
	}
	o.logger.ErrorContext(context.WithoutCancel(r.Context()), "service unavailable",
		slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()), slog.Any("error", err),
		slog.Int("suppressed", suppressed), slog.String("interval", o.every.Interval.String()))
}

// succeeded is told of every success; it costs an atomic load unless 503s
// are waiting to be counted.
func (o *outageLog) succeeded(r *http.Request) {
	ok, suppressed := o.every.End()
	if !ok {
		return
	}
	o.logger.InfoContext(context.WithoutCancel(r.Context()), "service available again",
		slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()),
		slog.Int("suppressed", suppressed))
}

// writeError answers an error envelope, with the request id of r's
// context (set by ServeHTTP) in ext.requestId, and msg written by r's
// Localizer (Content-Language).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, code, eKey string, msg deskkit.LocalizedMessager) {
	l := s.localizer(r.Context())
	w.Header().Set("Content-Language", l.Language().String())
	env := envelope.Error(code, eKey, l.Write(msg), s.cfg.Now())
	if id := deskkit.RequestID(r.Context()); id != "" {
		env.Ext[envelope.RequestIDExt] = id
	}
	envelope.Write(w, status, env)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, http.StatusNotFound, envelope.CodeProtocol, KeyRouteNotFound, deskkit.Textf("no route %s %s", r.Method, r.URL.EscapedPath()))
}

// panicked logs a handler's panic with its stack and answers 500, without
// the panic's text.
func (s *Server) panicked(w http.ResponseWriter, r *http.Request, v any, stack []byte) {
	s.cfg.Logger.ErrorContext(context.WithoutCancel(r.Context()), "panic", slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()),
		slog.Any("panic", v), slog.String("stack", string(stack)))
	s.writeError(w, r, http.StatusInternalServerError, envelope.CodeSystem, KeyInternal, key(internalError))
}
