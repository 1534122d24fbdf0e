package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
)

// eventRoutes are the event catalogue, every channel of the tenant, and
// the deliveries of a channel.
func eventRoutes(s ChannelService) []Operation {
	h := eventHandlers{s: s}
	return []Operation{
		Op("listEventTypes", http.MethodGet, "/event/types", h.types).With(listEventTypesDoc),
		Op("listAllEventChannels", http.MethodGet, "/event/channel", h.channels).With(listAllEventChannelsDoc),
		Op("enableEventChannel", http.MethodPatch, "/event/channel/{id}/enable", h.enable).With(enableEventChannelDoc),
		Op("disableEventChannel", http.MethodPatch, "/event/channel/{id}/disable", h.disable).With(disableEventChannelDoc),
		Op("listEventDeliveries", http.MethodGet, "/event/channel/{id}/deliveries", h.deliveries).With(listEventDeliveriesDoc),
		Op("countEventDeliveriesHourly", http.MethodGet, "/event/channel/{id}/deliveries/hourly", h.hourly).With(countEventDeliveriesHourlyDoc),
		Op("recoverEventDeliveries", http.MethodPost, "/event/channel/{id}/recover", h.recover).With(recoverEventDeliveriesDoc),
		Op("listEventAttempts", http.MethodGet, "/event/delivery/{id}/attempts", h.attempts).With(listEventAttemptsDoc),
		Op("resendEventDelivery", http.MethodPost, "/event/delivery/{id}/resend", h.resend).With(resendEventDeliveryDoc),
	}
}

type eventHandlers struct {
	s ChannelService
}

type idRequest struct {
	ID int64 `path:"id"`
}

type deliveriesRequest struct {
	ID       int64  `path:"id"`
	Status   string `query:"status"`
	PageNo   int    `query:"pageNo"`
	PageSize int    `query:"pageSize"`
}

type hourlyRequest struct {
	ID    int64 `path:"id"`
	Hours int   `query:"hours"`
}

type recoverRequest struct {
	ID    int64  `path:"id"`
	Since string `query:"since,required"`
}

// Recovered is the answer to a recover: how many deliveries were queued
// again.
type Recovered struct {
	Count int `json:"count"`
}

func (h eventHandlers) types(ctx context.Context, p deskkit.Principal, _ noRequest) ([]deskkit.EventType, error) {
	if !p.Valid() {
		return nil, deskkit.ErrUnauthenticated
	}
	return h.s.EventTypes(), nil
}

func (h eventHandlers) channels(ctx context.Context, p deskkit.Principal, _ noRequest) ([]channel.Channel, error) {
	return h.s.ListAll(ctx, p)
}

func (h eventHandlers) enable(ctx context.Context, p deskkit.Principal, req idRequest) (channel.Channel, error) {
	return h.s.Enable(ctx, p, req.ID)
}

func (h eventHandlers) disable(ctx context.Context, p deskkit.Principal, req idRequest) (channel.Channel, error) {
	return h.s.Disable(ctx, p, req.ID)
}

func (h eventHandlers) deliveries(ctx context.Context, p deskkit.Principal, req deliveriesRequest) (channel.DeliveryPage, error) {
	return h.s.Deliveries(ctx, p, req.ID, req.Status, req.PageNo, req.PageSize)
}

// hourlyDefault is the hours of an hourly count that names none: a day.
const hourlyDefault = 24

func (h eventHandlers) hourly(ctx context.Context, p deskkit.Principal, req hourlyRequest) ([]channel.HourlyDeliveries, error) {
	if req.Hours == 0 {
		req.Hours = hourlyDefault
	}
	return h.s.DeliveryCounts(ctx, p, req.ID, req.Hours)
}

func (h eventHandlers) recover(ctx context.Context, p deskkit.Principal, req recoverRequest) (Recovered, error) {
	since, err := parseTime("since", req.Since)
	if err != nil {
		return Recovered{}, err
	}
	n, err := h.s.Recover(ctx, p, req.ID, since)
	return Recovered{Count: n}, err
}

func (h eventHandlers) attempts(ctx context.Context, p deskkit.Principal, req idRequest) ([]channel.Attempt, error) {
	return h.s.Attempts(ctx, p, req.ID)
}

func (h eventHandlers) resend(ctx context.Context, p deskkit.Principal, req idRequest) (channel.Delivery, error) {
	return h.s.Resend(ctx, p, req.ID)
}

// The parameters the event operations share.
var (
	channelIDParam  = Param{Name: "id", Description: "Id of the channel.", Example: 42, Schema: `{"type": "integer", "format": "int64", "minimum": 1}`}
	deliveryIDParam = Param{Name: "id", Description: "Id of the delivery.", Example: 9001, Schema: `{"type": "integer", "format": "int64", "minimum": 1}`}
)

var channelAdminOnly = ErrorDoc{Name: "ChannelAdminForbidden", Key: KeyForbidden, When: "The caller is not an admin, and the host's channel.Authorizer (if it has one) does not allow them: only they may enable, disable, see deliveries, resend and recover. Asked before anything is read or written."}

var deliveryMissing = ErrorDoc{Name: "DeliveryNotFound", Key: KeyNotFound, When: "No delivery with this id in the caller's tenant: it never was, was purged after the retention, or belongs to another tenant."}

var resendThrottled = ErrorDoc{Name: "ResendThrottled", Key: KeyTooManyRequests, When: "The tenant asked for as many resends and recovers, together, this minute as allowed (20 by default; the host may set another number): each reaches the receiver again. Retry after Retry-After seconds."}

var channelIsDisabled = ErrorDoc{Key: KeyChannelDisabled, When: "The channel is disabled: it gets no deliveries until an admin enables it again (PATCH /event/channel/{id}/enable)."}

const exampleChannel = `{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": true, "events": ["task.*"], "disabledReason": "", "disabledDate": null}`

const exampleDelivery = `{"id": 9001, "channelId": 42, "eventId": "msg_2p7kq0xtzcmsjxqwwyq4nukd3f", "eventType": "task.trashed", "status": "SUCCEEDED", "attempts": 3, "nextAttemptDate": null, "lastStatusCode": 200, "lastError": "", "createdDate": "2026-11-23T10:00:00Z", "finishedDate": "2026-11-23T10:05:06Z"}`

var listEventTypesDoc = &Doc{
	Tag:         "event",
	Summary:     "List the event types",
	Description: "The catalogue of event types that channels can subscribe to: deskkit's own (the trash's, the verification service's, channel.disabled) and those the host registered, sorted by type, each with a description and an example of its data. Every event is delivered as Standard Webhooks' payload {type, timestamp, data}; data always holds tenantId, and the services' events an actor ({id, name}, or null when nobody caused it). Every user of the tenant may read it; query parameters are 400.",
	OK:          "OK. data is the catalogue.",
	Example:     Example{Data: raw(`[{"type": "task.trashed", "description": "A task was moved to the trash.", "example": {"actor": {"id": 7, "name": "Ada"}, "projectId": 3, "trashId": 10, "targetType": "TASK", "targetId": 55, "targetName": "Fix login"}}]`)},
}

var listAllEventChannelsDoc = &Doc{
	Tag:         "event",
	Summary:     "List every channel",
	Description: "Lists the caller's tenant's channels of every type, in id order, with their state: enabled, the events they subscribe to ([] means every event), and for a disabled channel why and when it was disabled. Every user of the tenant may list them; a user who is not an admin (unless the host's channel.Authorizer lets them see addresses) gets addresses masked, and every URL a disabledReason quotes, as GET /event/channel/type/{channelType} does. Query parameters are 400.",
	OK:          "OK. data is the list; [] if there are none.",
	Example:     Example{Data: raw(`[` + exampleChannel + `]`)},
}

var enableEventChannelDoc = &Doc{
	Tag:         "event",
	Summary:     "Enable a channel",
	Description: "Enables the caller's tenant's channel id again: it gets the events published from now on, and its failure clock starts again (a channel is disabled when all its deliveries failed for 5 days with at least 10 failed attempts, or at once when a webhook answers 410 Gone). Deliveries that ended FAILED while it was disabled stay so; POST /event/channel/{id}/recover queues them again. Enabling an enabled channel changes nothing.",
	OK:          "OK. data is the channel as stored now.",
	Errors:      []ErrorDoc{channelAdminOnly, channelMissing},
	Example:     Example{Data: raw(exampleChannel)},
	Params:      []Param{channelIDParam},
}

var disableEventChannelDoc = &Doc{
	Tag:         "event",
	Summary:     "Disable a channel",
	Description: "Disables the caller's tenant's channel id by hand: it gets no new deliveries until enabled again, and its pending deliveries end FAILED with the reason \"channel disabled\" (an attempt in flight still records its outcome). Disabling a disabled channel changes nothing.",
	OK:          "OK. data is the channel as stored now, with the reason and date.",
	Errors:      []ErrorDoc{channelAdminOnly, channelMissing},
	Example:     Example{Data: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": false, "events": [], "disabledReason": "disabled by user 7", "disabledDate": "2026-11-23T10:00:00Z"}`)},
	Params:      []Param{channelIDParam},
}

var listEventDeliveriesDoc = &Doc{
	Tag:         "event",
	Summary:     "List a channel's deliveries",
	Description: "One page of the deliveries of the caller's tenant's channel id, newest first, and how many match in all. A delivery is one event to this channel: PENDING while attempts remain (nextAttemptDate says when the next is due), SUCCEEDED once the channel took it, FAILED when the retry schedule ran out, the channel was disabled or deleted, or the address was blocked. Attempts are made at 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (the host may set another schedule), each spread by 10 %; a Retry-After of the far end pushes the next out. Deliveries and attempts are kept 30 days after they finish.",
	OK:          "OK. data is the page.",
	Errors:      []ErrorDoc{{Key: KeyValidation}, channelAdminOnly, channelMissing},
	Example:     Example{Data: raw(`{"total": 1, "list": [` + exampleDelivery + `]}`)},
	Params: []Param{
		channelIDParam,
		{Name: "status", In: InQuery, Type: "string", Description: "Only deliveries in this status; absent or empty for all.", Example: "FAILED", Schema: `{"type": "string", "enum": ["PENDING", "SUCCEEDED", "FAILED"]}`},
		{Name: "pageNo", In: InQuery, Type: "integer", Description: "1-based page number.", Example: 1, Schema: `{"type": "integer", "format": "int32", "minimum": 1, "maximum": ` + strconv.Itoa(channel.MaxPageNo) + `, "default": 1}`},
		{Name: "pageSize", In: InQuery, Type: "integer", Description: "Deliveries per page.", Example: 20, Schema: `{"type": "integer", "format": "int32", "minimum": 1, "maximum": ` + strconv.Itoa(channel.MaxPageSize) + `, "default": ` + strconv.Itoa(channel.DefaultPageSize) + `}`},
	},
}

var countEventDeliveriesHourlyDoc = &Doc{
	Tag:         "event",
	Summary:     "Count a channel's deliveries per hour",
	Description: "How many deliveries of the caller's tenant's channel id were created in each of the last hours hours, by their status now: one element per hour, oldest first, the last being the current hour, empty hours included. For a chart of the channel's traffic (the reference server's console draws the last 24). Deliveries are kept 30 days after they finish, so older hours count only what is left.",
	OK:          "OK. data has one element per hour.",
	Errors:      []ErrorDoc{{Key: KeyValidation}, channelAdminOnly, channelMissing},
	Example:     Example{Data: raw(`[{"hour": "2026-11-22T00:00:00Z", "succeeded": 12, "failed": 1, "pending": 0}, {"hour": "2026-11-22T01:00:00Z", "succeeded": 9, "failed": 0, "pending": 2}]`)},
	Params: []Param{
		channelIDParam,
		{Name: "hours", In: InQuery, Type: "integer", Description: "How many hours, ending with the current one.", Example: 24, Schema: `{"type": "integer", "format": "int32", "minimum": 1, "maximum": ` + strconv.Itoa(channel.MaxStatsHours) + `, "default": ` + strconv.Itoa(hourlyDefault) + `}`},
	},
}

var recoverEventDeliveriesDoc = &Doc{
	Tag:         "event",
	Summary:     "Queue failed deliveries again",
	Description: "Queues again the caller's tenant's channel's FAILED deliveries created at or after since, each with the whole retry schedule, first attempt now, and answers how many. The receiver gets each event with its original webhook-id, so it can drop one it had already taken. A recover counts one against the tenant's resends and recovers, at most 20 a minute together by default (the host may set another number).",
	OK:          "OK. data says how many deliveries were queued again.",
	Errors:      []ErrorDoc{{Key: KeyValidation}, channelAdminOnly, channelMissing, channelIsDisabled, resendThrottled},
	Example:     Example{Data: raw(`{"count": 12}`)},
	Params: []Param{
		channelIDParam,
		{Name: "since", In: InQuery, Type: "string", Required: true, Description: "Deliveries created at or after this moment. RFC 3339 (`2026-11-22T01:00:00Z`) or `yyyy-MM-dd HH:mm:ss`, read as UTC.", Example: "2026-11-22T01:00:00Z", Schema: `{"type": "string", "example": "2026-11-22T01:00:00Z"}`},
	},
}

var listEventAttemptsDoc = &Doc{
	Tag:         "event",
	Summary:     "List a delivery's attempts",
	Description: "Every attempt of the caller's tenant's delivery id, oldest first: when it started, how long it took, the HTTP status of the reply (0 without one), why it failed, and the first KiB of the reply (valid UTF-8; what the channel's address and secret hold is masked, in every spelling: as written, percent-decoded and percent-encoded). An attempt whose worker died before it ended has no row: its number is skipped. The newest " + strconv.Itoa(channel.MaxAttemptsKept) + " attempts of a delivery are kept (only resends make more): the oldest go as new ones are recorded.",
	OK:          "OK. data is the list.",
	Errors:      []ErrorDoc{channelAdminOnly, deliveryMissing},
	Example:     Example{Data: raw(`[{"attemptNo": 1, "startedDate": "2026-11-23T10:00:00Z", "durationMs": 41, "statusCode": 500, "error": "the webhook answered 500 Internal Server Error", "response": "oops"}, {"attemptNo": 2, "startedDate": "2026-11-23T10:00:05Z", "durationMs": 12, "statusCode": 200, "error": "", "response": "ok"}]`)},
	Params:      []Param{deliveryIDParam},
}

var resendEventDeliveryDoc = &Doc{
	Tag:         "event",
	Summary:     "Resend a delivery",
	Description: "Makes one more attempt of the caller's tenant's delivery id due now, whatever its status: a finished delivery ends again if this attempt fails; a pending one keeps its place in the schedule. The event goes with its original webhook-id. Each tenant may resend and recover at most 20 times a minute together by default (the host may set another number); a delivery's log keeps its newest " + strconv.Itoa(channel.MaxAttemptsKept) + " attempts, older ones are deleted as new ones are recorded.",
	OK:          "OK. data is the delivery, due now.",
	Errors:      []ErrorDoc{channelAdminOnly, deliveryMissing, channelIsDisabled, resendThrottled},
	Example:     Example{Data: raw(`{"id": 9001, "channelId": 42, "eventId": "msg_2p7kq0xtzcmsjxqwwyq4nukd3f", "eventType": "task.trashed", "status": "PENDING", "attempts": 3, "nextAttemptDate": "2026-11-23T11:00:00Z", "lastStatusCode": 500, "lastError": "the webhook answered 500 Internal Server Error", "createdDate": "2026-11-23T10:00:00Z", "finishedDate": null}`)},
	Params:      []Param{deliveryIDParam},
}
