package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/eventcat"
)

// eventRoutes are the event catalogue, every channel of the tenant, and
// the deliveries of a channel.
func eventRoutes(s ChannelService) []operation {
	h := eventHandlers{s: s}
	return []operation{
		op("listEventTypes", http.MethodGet, "/event/types", listEventTypesDoc, h.types),
		op("listAllEventChannels", http.MethodGet, "/event/channel", listAllEventChannelsDoc, h.channels),
		op("enableEventChannel", http.MethodPatch, "/event/channel/{id}/enable", enableEventChannelDoc, h.enable),
		op("disableEventChannel", http.MethodPatch, "/event/channel/{id}/disable", disableEventChannelDoc, h.disable),
		op("listEventDeliveries", http.MethodGet, "/event/channel/{id}/deliveries", listEventDeliveriesDoc, h.deliveries),
		op("countEventDeliveriesHourly", http.MethodGet, "/event/channel/{id}/deliveries/hourly", countEventDeliveriesHourlyDoc, h.hourly),
		op("recoverEventDeliveries", http.MethodPost, "/event/channel/{id}/recover", recoverEventDeliveriesDoc, h.recover),
		op("getEventDelivery", http.MethodGet, "/event/delivery/{id}", getEventDeliveryDoc, h.inspect),
		op("listEventAttempts", http.MethodGet, "/event/delivery/{id}/attempts", listEventAttemptsDoc, h.attempts),
		op("resendEventDelivery", http.MethodPost, "/event/delivery/{id}/resend", resendEventDeliveryDoc, h.resend),
	}
}

type eventHandlers struct {
	s ChannelService
}

// deliveryIDRequest names a delivery.
type deliveryIDRequest struct {
	ID int64 `path:"id" minimum:"1" example:"9001" description:"Id of the delivery."`
}

type deliveriesRequest struct {
	ID       int64  `path:"id" minimum:"1" example:"42" description:"Id of the channel."`
	Status   string `query:"status" enum:"PENDING,SUCCEEDED,FAILED" example:"FAILED" description:"Only deliveries in this status; absent or empty for all."`
	Types    string `query:"eventType" maxLength:"2020" pattern:"^[a-z0-9._-]+(,[a-z0-9._-]+)*$" example:"task.trashed,task.restored" description:"Only deliveries of events of these types: one type, or up to 20 separated by commas (exact types, not prefixes; types no longer in the catalogue are allowed). Absent or empty for every type."`
	From     string `query:"from" pattern:"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])| ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])$" example:"2026-11-22T00:00:00Z" description:"Only deliveries created at or after this moment. RFC 3339 (2026-11-22T00:00:00Z; T and Z also in lower case; offsets up to ±23:59) or yyyy-MM-dd HH:mm:ss, read as UTC. Must be before to."`
	To       string `query:"to" pattern:"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])| ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])$" example:"2026-11-23T00:00:00Z" description:"Only deliveries created before this moment; written as from."`
	PageNo   int    `query:"pageNo" minimum:"1" maximum:"100000" default:"1" example:"1" description:"1-based page number."`
	PageSize int    `query:"pageSize" minimum:"1" maximum:"2000" default:"10" example:"20" description:"Deliveries per page."`
}

type hourlyRequest struct {
	ID    int64 `path:"id" minimum:"1" example:"42" description:"Id of the channel."`
	Hours int   `query:"hours" minimum:"1" maximum:"168" default:"24" example:"24" description:"How many hours, ending with the current one."`
}

type recoverRequest struct {
	ID    int64  `path:"id" minimum:"1" example:"42" description:"Id of the channel."`
	Since string `query:"since" required:"true" pattern:"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])| ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9])$" example:"2026-11-22T01:00:00Z" description:"Deliveries created at or after this moment. RFC 3339 (2026-11-22T01:00:00Z; T and Z also in lower case; offsets up to ±23:59) or yyyy-MM-dd HH:mm:ss, read as UTC."`
}

// recovered is the answer to a recover: how many deliveries were queued
// again.
type recovered struct {
	_     struct{} `additionalProperties:"false" description:"How many deliveries were queued again."`
	Count int      `json:"count" minimum:"0" description:"How many FAILED deliveries were queued again."`
}

// eventTypeInfo is a type of the catalogue as GET /event/types shows it.
type eventTypeInfo struct {
	Type        string `json:"type" description:"The event's type, as webhooks get it in type (task.trashed)."`
	Service     string `json:"service" description:"Who publishes the event: trash, verify (the current user's changes), channel (the event channels themselves), host (the host's own), or a name the host gave a group of its own types."`
	Description string `json:"description" description:"When the event happens, in the reader's language (Accept-Language, else the user's or tenant's locale)."`
	Schema      any    `json:"schema" description:"The JSON Schema (draft 2020-12) of the event's data, tenantId included: reflected from the data's Go type, or the host's own for its types."`
	Example     any    `json:"example" description:"An example of the event's data, as payload.data but without tenantId (kept for clients written before payload)."`
	Payload     any    `json:"payload" description:"An example of the whole event as a webhook receives it: {type, timestamp, data}, data with tenantId."`
}

func (h eventHandlers) types(ctx context.Context, p deskkit.Principal, _ noRequest) ([]eventTypeInfo, error) {
	if !p.Valid() {
		return nil, deskkit.ErrUnauthenticated
	}
	l, _ := deskkit.LocalizerOf(ctx)
	types := h.s.EventTypes()
	out := make([]eventTypeInfo, 0, len(types))
	for _, t := range types {
		schema, err := eventcat.Schema(t)
		if err != nil {
			return nil, err
		}
		payload, err := eventcat.Payload(t)
		if err != nil {
			return nil, err
		}
		example := t.Example
		if example == nil {
			example = map[string]any{}
		}
		out = append(out, eventTypeInfo{
			Type: t.Name, Service: t.ServiceName(), Description: t.Describe(l.Messages(), l.Language()),
			Schema: schema, Example: example, Payload: payload,
		})
	}
	return out, nil
}

func (h eventHandlers) channels(ctx context.Context, p deskkit.Principal, _ noRequest) ([]channel.Channel, error) {
	return h.s.ListAll(ctx, p)
}

func (h eventHandlers) enable(ctx context.Context, p deskkit.Principal, req channelIDRequest) (channel.Channel, error) {
	return h.s.Enable(ctx, p, req.ID)
}

func (h eventHandlers) disable(ctx context.Context, p deskkit.Principal, req channelIDRequest) (channel.Channel, error) {
	return h.s.Disable(ctx, p, req.ID)
}

func (h eventHandlers) deliveries(ctx context.Context, p deskkit.Principal, req deliveriesRequest) (channel.DeliveryPage, error) {
	f, err := req.filter()
	if err != nil {
		return channel.DeliveryPage{}, err
	}
	return h.s.Deliveries(ctx, p, req.ID, f, req.PageNo, req.PageSize)
}

// filter reads the request's filters: eventType split at its commas, from
// and to by ParseTime. The registry checks the rest (the types' syntax,
// from before to).
func (req deliveriesRequest) filter() (channel.DeliveryFilter, error) {
	f := channel.DeliveryFilter{Status: req.Status}
	if req.Types != "" {
		f.Types = strings.Split(req.Types, ",")
	}
	var err error
	if req.From != "" {
		if f.From, err = ParseTime("from", req.From); err != nil {
			return f, err
		}
	}
	if req.To != "" {
		if f.To, err = ParseTime("to", req.To); err != nil {
			return f, err
		}
	}
	return f, nil
}

// hourlyDefault is the hours of an hourly count that names none: a day.
const hourlyDefault = 24

func (h eventHandlers) hourly(ctx context.Context, p deskkit.Principal, req hourlyRequest) ([]channel.HourlyDeliveries, error) {
	if req.Hours == 0 {
		req.Hours = hourlyDefault
	}
	return h.s.DeliveryCounts(ctx, p, req.ID, req.Hours)
}

func (h eventHandlers) recover(ctx context.Context, p deskkit.Principal, req recoverRequest) (recovered, error) {
	since, err := ParseTime("since", req.Since)
	if err != nil {
		return recovered{}, err
	}
	n, err := h.s.Recover(ctx, p, req.ID, since)
	return recovered{Count: n}, err
}

func (h eventHandlers) attempts(ctx context.Context, p deskkit.Principal, req deliveryIDRequest) ([]channel.Attempt, error) {
	return h.s.Attempts(ctx, p, req.ID)
}

func (h eventHandlers) inspect(ctx context.Context, p deskkit.Principal, req deliveryIDRequest) (channel.DeliveryDetail, error) {
	return h.s.Inspect(ctx, p, req.ID)
}

func (h eventHandlers) resend(ctx context.Context, p deskkit.Principal, req deliveryIDRequest) (channel.Delivery, error) {
	return h.s.Resend(ctx, p, req.ID)
}

var channelAdminOnly = errDoc{name: "ChannelAdminForbidden", key: KeyForbidden, when: "The caller is not an admin, and the host's channel.Authorizer (if it has one) does not allow them: only they may enable, disable, see deliveries, resend and recover. Asked before anything is read or written."}

var deliveryMissing = errDoc{name: "DeliveryNotFound", key: KeyNotFound, when: "No delivery with this id in the caller's tenant: it never was, was purged after the retention, or belongs to another tenant."}

var resendThrottled = errDoc{name: "ResendThrottled", key: KeyTooManyRequests, when: "The tenant asked for as many resends and recovers, together, this minute as allowed (20 by default; the host may set another number): each reaches the receiver again. Retry after Retry-After seconds."}

var channelIsDisabled = errDoc{key: KeyChannelDisabled, when: "The channel is disabled: it gets no deliveries until an admin enables it again (PATCH /event/channel/{id}/enable)."}

const exampleChannel = `{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": true, "events": ["task.*"], "disabledReason": "", "disabledDate": null, "rateLimit": 0, "inFlightLimit": 4, "pausedUntil": null, "previousSecretUntil": null, "health": "healthy", "failingSince": null, "failedAttempts": 0, "lastStatusCode": 0, "lastError": "", "attempts24h": 12, "attemptsSucceeded24h": 12, "successShare24h": 1, "headers": [], "disabledBy": null, "disabledByName": ""}`

const exampleDelivery = `{"id": 9001, "channelId": 42, "eventId": "msg_2p7kq0xtzcmsjxqwwyq4nukd3f", "eventType": "task.trashed", "status": "SUCCEEDED", "attempts": 3, "nextAttemptDate": null, "lastStatusCode": 200, "lastError": "", "createdDate": "2026-11-23T10:00:00Z", "finishedDate": "2026-11-23T10:05:06Z"}`

var listEventTypesDoc = &doc{
	tag:     "event",
	summary: "List the event types",
	description: prose(`
		The catalogue of event types that channels can subscribe to: deskkit's own (the trash's, the
		verification service's, channel.disabled) and those the host registered, sorted by type.
		Each says who publishes it (service), when it happens (description, in the reader's
		language), the JSON Schema of its data, and an example of the whole event as a webhook
		receives it (payload). Every event is delivered as Standard Webhooks' payload {type,
		timestamp, data}; data always holds tenantId, and the services' events an actor ({id,
		name}, or null when nobody caused it). Every user of the tenant may read it.
	`),
	ok: "OK. data is the catalogue.",
	example: example{data: raw(`[{"type": "task.trashed", "service": "trash", "description": "A task was deleted. It is in the trash and can be restored from there.", ` +
		`"schema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["tenantId", "actor", "projectId", "trashId", "targetType", "targetId", "targetName"], ` +
		`"properties": {"tenantId": {"type": "integer"}, "actor": {"type": ["object", "null"], "required": ["id", "name"], "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}, ` +
		`"projectId": {"type": "integer"}, "trashId": {"type": "integer"}, "targetType": {"type": "string"}, "targetId": {"type": "integer"}, "targetName": {"type": "string"}}}, ` +
		`"example": {"actor": {"id": 7, "name": "Ada"}, "projectId": 3, "trashId": 41, "targetType": "TASK", "targetId": 1200, "targetName": "Fix login"}, ` +
		`"payload": {"type": "task.trashed", "timestamp": "2026-11-23T10:00:00Z", "data": {"tenantId": 1, "actor": {"id": 7, "name": "Ada"}, "projectId": 3, "trashId": 41, "targetType": "TASK", "targetId": 1200, "targetName": "Fix login"}}}]`)},
}

var listAllEventChannelsDoc = &doc{
	tag:     "event",
	summary: "List every channel",
	description: prose(`
		Lists the caller's tenant's channels of every type, in id order, with their state: enabled,
		the events they subscribe to ([] means every event), and for a disabled channel why and when
		it was disabled. Every user of the tenant may list them; a user who is not an admin (unless
		the host's channel.Authorizer lets them see addresses) gets addresses masked, and every URL
		a disabledReason quotes, as GET /event/channel/type/{channelType} does. Query parameters are
		400.
	`),
	ok:      "OK. data is the list; [] if there are none.",
	example: example{data: raw(`[` + exampleChannel + `]`)},
}

var enableEventChannelDoc = &doc{
	tag:     "event",
	summary: "Enable a channel",
	description: prose(`
		Enables the caller's tenant's channel id again: it gets the events published from now on,
		and its failure clock starts again (a channel is disabled when all its deliveries failed for
		5 days with at least 10 failed attempts, or at once when a webhook answers 410 Gone).
		Deliveries that ended FAILED while it was disabled stay so; POST /event/channel/{id}/recover
		queues them again. Enabling an enabled channel changes nothing.
	`),
	ok:      "OK. data is the channel as stored now.",
	errors:  []errDoc{channelAdminOnly, channelMissing},
	example: example{data: raw(exampleChannel)},
}

var disableEventChannelDoc = &doc{
	tag:     "event",
	summary: "Disable a channel",
	description: prose(`
		Disables the caller's tenant's channel id by hand: it gets no new deliveries until enabled
		again, and its pending deliveries end FAILED with the reason "channel disabled" (an attempt
		in flight still records its outcome). Disabling a disabled channel changes nothing.
	`),
	ok:      "OK. data is the channel as stored now, with the reason and date.",
	errors:  []errDoc{channelAdminOnly, channelMissing},
	example: example{data: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": false, "events": [], "disabledReason": "disabled by user 7", "disabledDate": "2026-11-23T10:00:00Z", "rateLimit": 0, "inFlightLimit": 4, "pausedUntil": null, "previousSecretUntil": null, "health": "disabled", "failingSince": null, "failedAttempts": 0, "lastStatusCode": 0, "lastError": "", "attempts24h": 3, "attemptsSucceeded24h": 3, "successShare24h": 1, "headers": [], "disabledBy": 7, "disabledByName": "Ann Lee"}`)},
}

var listEventDeliveriesDoc = &doc{
	tag:     "event",
	summary: "List a channel's deliveries",
	description: prose(`
		One page of the deliveries of the caller's tenant's channel id, newest first (by the time
		they were created), and how many match in all. The filters combine: status, eventType (one
		type or up to 20 separated by commas), and a time range of creation, from (inclusive) to
		(exclusive), each RFC 3339; from must be before to. A filter that is malformed, or from at
		or after to, is a 400 whose message names the parameter and its rule. A delivery is one event to this channel: PENDING while attempts remain
		(nextAttemptDate says when the next is due), SUCCEEDED once the channel took it, FAILED when
		the retry schedule ran out, the channel was disabled or deleted, or the address was blocked.
		Attempts are made at 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (the host may set
		another schedule), each spread by 10 %; a Retry-After of the far end pushes the next out.
		Deliveries and attempts are kept 30 days after they finish.
	`),
	ok:      "OK. data is the page.",
	errors:  []errDoc{{key: KeyValidation, when: "A parameter is malformed (a status, an event type, a time), from is at or after to, or pageNo or pageSize is out of range; the message names the parameter and the rule."}, channelAdminOnly, channelMissing},
	example: example{data: raw(`{"total": 1, "list": [` + exampleDelivery + `]}`)},
}

var countEventDeliveriesHourlyDoc = &doc{
	tag:     "event",
	summary: "Count a channel's deliveries per hour",
	description: prose(`
		How many deliveries of the caller's tenant's channel id were created in each of the last
		hours hours, by their status now: one element per hour, oldest first, the last being the
		current hour, empty hours included. For a chart of the channel's traffic (the reference
		server's console draws the last 24). Deliveries are kept 30 days after they finish, so older
		hours count only what is left.
	`),
	ok:      "OK. data has one element per hour.",
	errors:  []errDoc{{key: KeyValidation}, channelAdminOnly, channelMissing},
	example: example{data: raw(`[{"hour": "2026-11-22T00:00:00Z", "succeeded": 12, "failed": 1, "pending": 0}, {"hour": "2026-11-22T01:00:00Z", "succeeded": 9, "failed": 0, "pending": 2}]`)},
}

var recoverEventDeliveriesDoc = &doc{
	tag:     "event",
	summary: "Queue failed deliveries again",
	description: prose(`
		Queues again the caller's tenant's channel's FAILED deliveries created at or after since,
		each with the whole retry schedule, first attempt now, and answers how many. The receiver
		gets each event with its original webhook-id, so it can drop one it had already taken. A
		recover counts one against the tenant's resends and recovers, at most 20 a minute together
		by default (the host may set another number).
	`),
	ok:      "OK. data says how many deliveries were queued again.",
	errors:  []errDoc{{key: KeyValidation}, channelAdminOnly, channelMissing, channelIsDisabled, resendThrottled},
	example: example{data: raw(`{"count": 12}`)},
}

var listEventAttemptsDoc = &doc{
	tag:         "event",
	summary:     "List a delivery's attempts",
	description: "Every attempt of the caller's tenant's delivery id, oldest first: when it started, how long it took, the HTTP status of the reply (0 without one), why it failed, and the first 4 KiB of the reply (1 KiB for attempts recorded before deskkit kept 4; valid UTF-8; what the channel's address and secret hold is masked, in every spelling: as written, percent-decoded and percent-encoded, and so are the request's signatures). GET /event/delivery/{id} gives each attempt's request and headers too. An attempt whose worker died before it ended has no row: its number is skipped. The newest " + strconv.Itoa(channel.MaxAttemptsKept) + " attempts of a delivery are kept (only resends make more): the oldest go as new ones are recorded.",
	ok:          "OK. data is the list.",
	errors:      []errDoc{channelAdminOnly, deliveryMissing},
	example:     example{data: raw(`[{"attemptNo": 1, "startedDate": "2026-11-23T10:00:00Z", "durationMs": 41, "statusCode": 500, "error": "the webhook answered 500 Internal Server Error", "response": "oops"}, {"attemptNo": 2, "startedDate": "2026-11-23T10:00:05Z", "durationMs": 12, "statusCode": 200, "error": "", "response": "ok"}]`)},
}

var getEventDeliveryDoc = &doc{
	tag:     "event",
	summary: "Inspect a delivery",
	description: prose(`
		The caller's tenant's delivery id with everything needed to debug it: the delivery, its
		channel (its name empty once deleted), the event as it was sent (id, type, time, the payload
		a webhook receives byte for byte, and the title and text robots and e-mail got, in the
		language of the newest attempt), and every attempt kept, oldest first, with its request
		(method, the address masked as https://HOST/*** or with a robot's key as ***, the headers in
		name order, the body as sent) and its answer (status, headers, the first 4 KiB of the body
		as stored, duration, and the error in the reader's language). webhook-signature,
		Authorization, Cookie and Set-Cookie always show as ***, and a signature or secret the far
		end echoes in its reply's body or headers is masked before it is stored; a reader who may
		not see addresses sees every request header but Content-Type, User-Agent, webhook-id and
		webhook-timestamp as ***, and every URL in an error masked. What was sent is kept once per
		rendering, not per attempt: a webhook's body is the event's own, and a robot's or an
		e-mail's message is kept once per event and language. Attempts recorded before deskkit kept
		requests have an empty request, and a 1 KiB body.
	`),
	ok:     "OK. data is the delivery inspected.",
	errors: []errDoc{channelAdminOnly, deliveryMissing},
	example: example{data: raw(`{"delivery": ` + exampleDelivery + `, "channel": {"id": 42, "channelType": "WEBHOOK", "name": "Ops hook"}, ` +
		`"event": {"id": "msg_2p7kq0xtzcmsjxqwwyq4nukd3f", "type": "task.trashed", "time": "2026-11-23T10:00:00Z", ` +
		`"payload": {"type": "task.trashed", "timestamp": "2026-11-23T10:00:00Z", "data": {"tenantId": 1, "actor": {"id": 7, "name": "Ada"}, "projectId": 3, "trashId": 41, "targetType": "TASK", "targetId": 1200, "targetName": "Fix login"}}, ` +
		`"language": "en", "title": "Task deleted: Fix login", "text": "Ada deleted the task **Fix login**. It is in the trash."}, ` +
		`"attempts": [{"attemptNo": 1, "startedDate": "2026-11-23T10:00:00Z", ` +
		`"request": {"method": "POST", "url": "https://hooks.example.com/***", "headers": [{"name": "Content-Type", "value": "application/json"}, {"name": "Webhook-Id", "value": "msg_2p7kq0xtzcmsjxqwwyq4nukd3f"}, {"name": "Webhook-Signature", "value": "***"}, {"name": "Webhook-Timestamp", "value": "1795428000"}], ` +
		`"body": "{\"type\":\"task.trashed\",\"timestamp\":\"2026-11-23T10:00:00Z\",\"data\":{\"tenantId\":1,\"actor\":{\"id\":7,\"name\":\"Ada\"},\"projectId\":3,\"trashId\":41,\"targetType\":\"TASK\",\"targetId\":1200,\"targetName\":\"Fix login\"}}"}, ` +
		`"response": {"statusCode": 500, "headers": [{"name": "Content-Type", "value": "text/plain"}], "body": "oops", "durationMs": 41, "error": "the webhook answered 500 Internal Server Error"}}]}`)},
}

var resendEventDeliveryDoc = &doc{
	tag:         "event",
	summary:     "Resend a delivery",
	description: "Makes one more attempt of the caller's tenant's delivery id due now, whatever its status: a finished delivery ends again if this attempt fails; a pending one keeps its place in the schedule. The event goes with its original webhook-id. Each tenant may resend and recover at most 20 times a minute together by default (the host may set another number); a delivery's log keeps its newest " + strconv.Itoa(channel.MaxAttemptsKept) + " attempts, older ones are deleted as new ones are recorded.",
	ok:          "OK. data is the delivery, due now.",
	errors:      []errDoc{channelAdminOnly, deliveryMissing, channelIsDisabled, resendThrottled},
	example:     example{data: raw(`{"id": 9001, "channelId": 42, "eventId": "msg_2p7kq0xtzcmsjxqwwyq4nukd3f", "eventType": "task.trashed", "status": "PENDING", "attempts": 3, "nextAttemptDate": "2026-11-23T11:00:00Z", "lastStatusCode": 500, "lastError": "the webhook answered 500 Internal Server Error", "createdDate": "2026-11-23T10:00:00Z", "finishedDate": null}`)},
}
