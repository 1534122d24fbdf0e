package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/swaggest/jsonschema-go"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
)

// channelRoutes are the event channels of the principal's tenant.
// /event/channel/test and /event/channel/type/... are static segments beside
// DELETE /event/channel/{id}: a static segment shadows the wildcard, so
// DELETE /event/channel/test is 405, never a delete of channel "test".
func channelRoutes(r ChannelService) []operation {
	h := channelHandlers{r: r}
	ops := []operation{
		op("addEventChannel", http.MethodPost, "/event/channel", addEventChannelDoc, h.add),
		op("replaceEventChannel", http.MethodPut, "/event/channel", replaceEventChannelDoc, h.replace),
		op("listEventChannels", http.MethodGet, "/event/channel/type/{channelType}", listEventChannelsDoc, h.list),
		op("getEventChannel", http.MethodGet, "/event/channel/{id}", getEventChannelDoc, h.get),
		op("deleteEventChannel", http.MethodDelete, "/event/channel/{id}", deleteEventChannelDoc, h.delete),
		op("testEventChannel", http.MethodPost, "/event/channel/test", testEventChannelDoc, h.test),
	}
	return append(ops, secretRoutes(r)...)
}

type channelHandlers struct {
	r ChannelService
}

// channelID is a channel id in a body. The source system writes ids as
// strings, so it takes a JSON number or a string of decimal digits; the
// value is read by int64, which gives every refusal one message naming the
// field, instead of the decoder's type error.
type channelID struct {
	raw []byte // as sent; nil when absent or null
}

func (c *channelID) UnmarshalJSON(b []byte) error {
	if string(b) != "null" {
		c.raw = append([]byte(nil), b...)
	}
	return nil
}

// int64 is the id, 0 if none was sent.
func (c channelID) int64() (int64, error) {
	if c.raw == nil {
		return 0, nil
	}
	s := string(c.raw)
	if c.raw[0] == '"' {
		if err := json.Unmarshal(c.raw, &s); err != nil {
			s = ""
		}
	}
	// A string has the one spelling of ids (ParseID): "042" and "+42"
	// are refused as a path's 042 and +42 are.
	n, err := ParseID("id", s)
	if err != nil && !misspelt(s) {
		return 0, deskkit.Invalid("id", "must be a positive integer, written as a number or a string of digits")
	}
	return n, err
}

// JSONSchema is a number or a string of digits.
func (channelID) JSONSchema() (jsonschema.Schema, error) {
	var s jsonschema.Schema
	s.WithDescription("A channel id, as a JSON number or a string of decimal digits (as the source system writes ids); a positive integer within int64.").
		WithExamples(42).
		WithOneOf(
			(&jsonschema.Schema{}).WithType(jsonschema.Integer.Type()).WithFormat("int64").WithMinimum(1).WithDescription("The id as a JSON number.").ToSchemaOrBool(),
			(&jsonschema.Schema{}).WithType(jsonschema.String.Type()).WithPattern("^[1-9][0-9]{0,18}$").WithMinLength(1).WithMaxLength(19).WithDescription("The id as a string of digits, without a sign or leading zeros.").ToSchemaOrBool(),
		)
	return s, nil
}

// noChannelID is the id of an add: absent or null (the registry refuses
// any other, naming it).
type noChannelID struct{ channelID }

func (noChannelID) JSONSchema() (jsonschema.Schema, error) {
	var s jsonschema.Schema
	s.AddType(jsonschema.Null)
	return *s.WithDescription("Must be absent or null: the server gives the id, in the answer."), nil
}

// channelTypeInput is a channel type as a client may write it.
type channelTypeInput string

func (channelTypeInput) Enum() []any {
	out := channelTypes()
	for _, ti := range channel.TypeInfos() {
		for _, a := range ti.Aliases {
			out = append(out, a)
		}
	}
	return out
}

func (channelTypeInput) PrepareJSONSchema(s *jsonschema.Schema) error {
	s.WithDescription(kindDocs.Replace("A channel type as a client may write it: a canonical name (see ChannelType) or the source system's alias, {kinds.aliases}. Answers always use the canonical names.")).WithExamples("WEBHOOK")
	return nil
}

// kindDocs fills the placeholders of the channel operations' documents
// with what the registered kinds of channel say of themselves
// (channel.TypeInfos), so that a kind the registry gains is documented
// here without an edit: prose and every schema description go through it.
//
//	{kinds}            each type and what it is: "WEBHOOK: a signed HTTP POST (Standard Webhooks). ..."
//	{kinds.aliases}    "WECHAT for ENTERPRISE_CHAT and DINGTALK for WORKPLACE_CHAT"
//	{kinds.addresses}  each type and its address's rules
//	{kinds.secrets}    each type that takes a secret from a client, and that secret
//	{kinds.takers}     the types that take one: "WORKPLACE_CHAT"
//	{kinds.tests}      each type and what its test sends
//	{kinds.quotas}     "5 WEBHOOK, 20 EMAIL, ... channels"
//	{kinds.headers}    the types that send custom headers: "WEBHOOK"
var kindDocs = func() *strings.Replacer {
	var summaries, aliases, addresses, secrets, takers, tests, quotas, headers []string
	for _, ti := range channel.TypeInfos() {
		t := string(ti.Type)
		for _, a := range ti.Aliases {
			aliases = append(aliases, a+" for "+t)
		}
		summaries = append(summaries, t+": "+ti.Summary+".")
		addresses = append(addresses, t+": "+ti.AddressDoc+".")
		if ti.SecretDoc != "" {
			secrets = append(secrets, t+": "+ti.SecretDoc+".")
			takers = append(takers, t)
		}
		tests = append(tests, t+": "+ti.TestDoc+".")
		if ti.Headers {
			headers = append(headers, t)
		}
		quotas = append(quotas, strconv.Itoa(ti.Quota)+" "+t)
	}
	return strings.NewReplacer(
		"{kinds}", strings.Join(summaries, " "),
		"{kinds.aliases}", englishList(aliases),
		"{kinds.addresses}", strings.Join(addresses, " "),
		"{kinds.secrets}", strings.Join(secrets, " "),
		"{kinds.takers}", englishList(takers),
		"{kinds.tests}", strings.Join(tests, " "),
		"{kinds.quotas}", englishList(quotas)+" channels",
		"{kinds.headers}", englishList(headers),
	)
}()

// englishList joins items as English does: "a", "a and b", "a, b and c".
func englishList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// subscribedEvent is an event type or prefix of a subscription.
type subscribedEvent string

func (subscribedEvent) InlineJSONSchema() {}

func (subscribedEvent) PrepareJSONSchema(s *jsonschema.Schema) error {
	s.WithMinLength(1).WithMaxLength(100)
	return nil
}

// The bodies of an add, a replace and a test: one shape, so that a client
// can send the form it shows for all three; id is refused on an add,
// required on a replace, and on a test names the stored channel whose
// secret signs the message.
type (
	channelAddBody struct {
		_       struct{}          `additionalProperties:"false" description:"A channel to add."`
		ID      noChannelID       `json:"id"`
		Type    channelTypeInput  `json:"channelType" required:"true"`
		Name    string            `json:"name" required:"true" minLength:"1" maxLength:"100" description:"The channel's name: 1 to 100 characters, not blank, without control characters; unique within the tenant, across types (409 channel_name_taken)."`
		Address string            `json:"address" required:"true" minLength:"1" maxLength:"2000" description:"Where messages go, at most 2,000 bytes, trimmed. {kinds.addresses} A URL whose host is a literal address of a blocked network, or localhost, is 400 channel_address_blocked, msg naming the reason; host names are checked when a message is sent."`
		Secret  *string           `json:"secret" maxLength:"200" writeOnly:"true" description:"Taken by {kinds.takers} only. {kinds.secrets} Write-only: stored encrypted, never shown. On a replace, absent or null keeps the stored secret and \"\" removes it. Other types take none (absent, null or \"\")."`
		Events  []subscribedEvent `json:"events" nullable:"true" maxItems:"50" description:"The subscription: registered event types (GET /event/types) and prefixes ending in .* that match at least one (task.*), duplicates dropped; absent, null or [] means every event. An unknown type is 400. A replace replaces it; a test ignores it."`
		Rate    float64           `json:"rateLimit" minimum:"0" maximum:"1000" description:"The channel's own limit in messages a second (fractions allowed: 0.5 is one every 2 s), sends spaced evenly across every server; absent, null or 0 for none, when the server's default applies. A replace replaces it; a test ignores it."`
		Headers []channel.Header  `json:"headers" nullable:"true" maxItems:"10" description:"Custom HTTP headers sent with every delivery attempt and test, in this order: at most 10, taken by {kinds.headers} only (another type answers 400 naming headers). Each name an HTTP token, neither hop-by-hop, nor Host, Content-Length, Content-Type, Expect, nor webhook-*; unique without case; each value without control characters. A refusal names headers[i].name or headers[i].value. Values are stored encrypted and answered as *** to users who see addresses masked. Absent, null or [] for none."`
	}
	channelReplaceBody struct {
		_       struct{}          `additionalProperties:"false" description:"A channel's new state: id names it; channelType must be its type."`
		ID      channelID         `json:"id" required:"true"`
		Type    channelTypeInput  `json:"channelType" required:"true"`
		Name    string            `json:"name" required:"true" minLength:"1" maxLength:"100" description:"The channel's name: 1 to 100 characters, not blank, without control characters; unique within the tenant, across types (409 channel_name_taken)."`
		Address string            `json:"address" required:"true" minLength:"1" maxLength:"2000" description:"Where messages go, checked as an add checks it."`
		Secret  *string           `json:"secret" maxLength:"200" writeOnly:"true" description:"Taken by {kinds.takers} only, as an add takes it. Absent or null keeps the stored secret and \"\" removes it. Other types take none (absent, null or \"\")."`
		Events  []subscribedEvent `json:"events" nullable:"true" maxItems:"50" description:"The subscription, as an add takes it; it replaces the stored one."`
		Rate    float64           `json:"rateLimit" minimum:"0" maximum:"1000" description:"The channel's own limit in messages a second, as an add takes it; it replaces the stored one (absent, null or 0: none)."`
		Headers []channel.Header  `json:"headers" nullable:"true" maxItems:"10" description:"Custom HTTP headers, as an add takes them; they replace the stored ones (absent, null or []: none). Values are sent whole: a value answered as *** must be sent again as it is."`
	}
	channelTestBody struct {
		_       struct{}          `additionalProperties:"false" description:"Where to send a test message; id optionally names the stored channel whose signing secret signs it."`
		ID      channelID         `json:"id"`
		Type    channelTypeInput  `json:"channelType" required:"true"`
		Name    string            `json:"name" required:"true" minLength:"1" maxLength:"100" description:"The channel's name, checked as an add checks it."`
		Address string            `json:"address" required:"true" minLength:"1" maxLength:"2000" description:"Where the message goes, checked as an add checks it."`
		Secret  *string           `json:"secret" maxLength:"200" writeOnly:"true" description:"Taken by {kinds.takers} only: the secret that signs the message, as an add takes it; absent or null signs with the stored channel's, if the address is its address."`
		Events  []subscribedEvent `json:"events" nullable:"true" maxItems:"50" description:"Ignored by a test."`
		Rate    float64           `json:"rateLimit" minimum:"0" maximum:"1000" description:"Ignored by a test."`
		Headers []channel.Header  `json:"headers" nullable:"true" maxItems:"10" description:"Custom HTTP headers the test message carries, checked as an add checks them; absent or null sends the stored channel's (named by id, or by type and name) when the address is its address, and none otherwise: stored values never go to another address."`
	}
)

type channelAddRequest struct {
	Body channelAddBody `body:"json"`
}

type channelReplaceRequest struct {
	Body channelReplaceBody `body:"json"`
}

type channelTestRequest struct {
	Body channelTestBody `body:"json"`
}

// channelInput is a body as the registry takes it.
func channelInput(id channelID, typ channelTypeInput, name, address string, secret *string, events []subscribedEvent, rate float64, headers []channel.Header) (channel.Input, error) {
	n, err := id.int64()
	if err != nil {
		return channel.Input{}, err
	}
	var evs []string
	if events != nil {
		evs = make([]string, len(events))
		for i, e := range events {
			evs[i] = string(e)
		}
	}
	return channel.Input{ID: n, Type: string(typ), Name: name, Address: address, Secret: secret, Events: evs, RateLimit: rate, Headers: headers}, nil
}

type channelTypeRequest struct {
	Type channelTypeInput `path:"channelType" example:"WEBHOOK" description:"The type of the channels to list: a canonical name or an alias, as an add takes channelType, in upper case."`
}

// channelIDRequest names a channel.
type channelIDRequest struct {
	ID int64 `path:"id" minimum:"1" example:"42" description:"Id of the channel."`
}

func (h channelHandlers) add(ctx context.Context, p deskkit.Principal, req channelAddRequest) (channel.Added, error) {
	b := req.Body
	in, err := channelInput(b.ID.channelID, b.Type, b.Name, b.Address, b.Secret, b.Events, b.Rate, b.Headers)
	if err != nil {
		return channel.Added{}, err
	}
	return h.r.Add(ctx, p, in)
}

func (h channelHandlers) replace(ctx context.Context, p deskkit.Principal, req channelReplaceRequest) (channel.Channel, error) {
	b := req.Body
	in, err := channelInput(b.ID, b.Type, b.Name, b.Address, b.Secret, b.Events, b.Rate, b.Headers)
	if err != nil {
		return channel.Channel{}, err
	}
	return h.r.Replace(ctx, p, in)
}

func (h channelHandlers) list(ctx context.Context, p deskkit.Principal, req channelTypeRequest) ([]channel.Channel, error) {
	return h.r.List(ctx, p, string(req.Type))
}

func (h channelHandlers) get(ctx context.Context, p deskkit.Principal, req channelIDRequest) (channel.Channel, error) {
	return h.r.Get(ctx, p, req.ID)
}

func (h channelHandlers) delete(ctx context.Context, p deskkit.Principal, req channelIDRequest) (*none, error) {
	return nil, h.r.Delete(ctx, p, req.ID)
}

func (h channelHandlers) test(ctx context.Context, p deskkit.Principal, req channelTestRequest) (channel.TestResult, error) {
	b := req.Body
	in, err := channelInput(b.ID, b.Type, b.Name, b.Address, b.Secret, b.Events, b.Rate, b.Headers)
	if err != nil {
		return channel.TestResult{}, err
	}
	return h.r.Test(ctx, p, in)
}

var addEventChannelDoc = &doc{
	tag:     "channel",
	summary: "Add a channel",
	description: prose(`
		Adds a channel to the caller's tenant. Only admins, or users the host's channel.Authorizer
		allows, may add channels: anyone else is 403 forbidden, asked before anything is read or
		written. channelType takes the aliases {kinds.aliases}; the answer has the canonical
		type. name is unique within the tenant (409 channel_name_taken); address is checked for the
		type (see ChannelAdd). Each tenant may have {kinds.quotas}: one more is 409
		channel_quota_exceeded (E3), counted in the transaction of the insert, so parallel adds
		cannot exceed it.

		A webhook gets a signing secret, whsec_ and the base64 of 32 random bytes: it is in this
		answer, stored encrypted, and shown again only to an admin who reveals it (POST
		/event/channel/{id}/secret/reveal, recorded as an event); POST
		/event/channel/{id}/secret/rotate replaces it, the old one signing beside the new one for
		an overlap. Every webhook request carries webhook-id,
		webhook-timestamp and webhook-signature headers (Standard Webhooks), which any Standard
		Webhooks library checks with it. {kinds.takers} channels take a secret of the client's in
		secret, write-only: {kinds.secrets} No other type takes one.

		A URL whose host is a literal address of a network channels may not reach (loopback,
		private, link-local, cloud metadata, in any spelling: 127.1, 2130706433,
		[::ffff:127.0.0.1]...) or localhost is 400 channel_address_blocked, whose msg names the
		reason: loopback or a private network (and the setting that opens both in development:
		channel.Config.AllowPrivateNetworks, the reference server's
		-channel-allow-private-networks), a cloud metadata endpoint or link-local (never opened), or
		another special-purpose range. Host names are resolved, and every address they resolve to
		checked, when a message is sent.
	`),
	ok: "OK. data is the new channel, and a webhook's signing secret.",
	errors: []errDoc{
		{key: KeyValidation},            // ChannelBadRequest
		{key: KeyChannelAddressBlocked}, // ChannelBadRequest
		channelForbidden,
		{key: KeyChannelNameTaken},     // ChannelAddConflict
		{key: KeyChannelQuotaExceeded}, // ChannelAddConflict
	},
	example: example{body: raw(`{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "headers": [{"name": "Authorization", "value": "Bearer 7f3c9a2e41d8"}]}`), data: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null, "rateLimit": 0, "inFlightLimit": 4, "pausedUntil": null, "previousSecretUntil": null, "health": "healthy", "failingSince": null, "failedAttempts": 0, "lastStatusCode": 0, "lastError": "", "attempts24h": 0, "attemptsSucceeded24h": 0, "successShare24h": null, "headers": [{"name": "Authorization", "value": "Bearer 7f3c9a2e41d8"}], "disabledBy": null, "disabledByName": "", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q="}`)},
	more: map[string]example{
		"wecom":    {summary: "A WeCom robot, by alias", body: raw(`{"channelType": "WECHAT", "name": "Team room", "address": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"}`)},
		"dingtalk": {summary: "A signed DingTalk robot", body: raw(`{"channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=XXXXXX", "secret": "SECxxxxxxxx"}`)},
		"email":    {summary: "E-mail to two addresses", body: raw(`{"channelType": "EMAIL", "name": "On call", "address": "ann@example.com, bob@example.com"}`)},
	},
}

var replaceEventChannelDoc = &doc{
	tag:     "channel",
	summary: "Replace a channel",
	description: prose(`
		Replaces the name and address of the caller's tenant's channel id, checked exactly as an add
		checks them; the id stays. Only admins, or users the host's channel.Authorizer allows, may
		replace channels: anyone else is 403 forbidden, asked before anything is read or written. id
		is required (400 without), as a number or a string of digits. The type cannot change: a
		different channelType (after aliases) is 400, and an id that names no channel of the tenant
		(never was, deleted, another tenant's) is 404. A webhook keeps its signing secret (POST
		/event/channel/{id}/secret/rotate changes it); for a
		{kinds.takers} channel, secret absent or null keeps the stored one, "" removes it, and a new
		value replaces it.
	`),
	ok: "OK. data is the channel as stored now.",
	errors: []errDoc{
		{key: KeyValidation},            // ChannelBadRequest
		{key: KeyChannelAddressBlocked}, // ChannelBadRequest
		channelForbidden,
		channelMissing,
		{key: KeyChannelNameTaken, when: "Another channel of the tenant has the name."},
	},
	example: example{body: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit/v2"}`), data: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit/v2", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null, "rateLimit": 0, "inFlightLimit": 4, "pausedUntil": null, "previousSecretUntil": null, "health": "healthy", "failingSince": null, "failedAttempts": 0, "lastStatusCode": 0, "lastError": "", "attempts24h": 12, "attemptsSucceeded24h": 12, "successShare24h": 1, "headers": [], "disabledBy": null, "disabledByName": ""}`)},
	more: map[string]example{
		"idAsString": {summary: "The id as a string, unsigned", body: raw(`{"id": "43", "channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=XXXXXX", "secret": ""}`)},
	},
}

var listEventChannelsDoc = &doc{
	tag:     "channel",
	summary: "List the channels of a type",
	description: prose(`
		Lists the caller's tenant's channels of channelType (an alias lists its canonical type), in
		id order: id, channelType, name and address, never a secret. Every user of the tenant may
		list them, but a user who is not an admin (unless the host's channel.Authorizer lets them
		see addresses) gets the addresses masked, since they carry keys and tokens: a webhook as its
		scheme and host followed by /*** (https://hooks.example.com/***), a robot's URL with every
		query value, its key or access_token among them, as ***
		(https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***); e-mail addresses as stored. An
		unknown type is 400.

		Each channel says its health at a glance: health is healthy, failing (every attempt since
		failingSince failed: failedAttempts in a row, the last one's lastStatusCode and lastError)
		or disabled (disabledDate, disabledReason, and disabledBy and disabledByName when a user
		disabled it). attempts24h, attemptsSucceeded24h and successShare24h count the attempts of
		the last 24 hours, every retry included; the delivery totals of the console count
		deliveries instead. A channel failing for an hour (the server's -event-failing-after)
		raises channel.failing, once per episode, to the tenant's other channels.
	`),
	ok:      "OK. data is the list; [] if there are none.",
	example: example{data: raw(`[{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null, "rateLimit": 0, "inFlightLimit": 4, "pausedUntil": null, "previousSecretUntil": null, "health": "healthy", "failingSince": null, "failedAttempts": 0, "lastStatusCode": 0, "lastError": "", "attempts24h": 12, "attemptsSucceeded24h": 12, "successShare24h": 1, "headers": [], "disabledBy": null, "disabledByName": ""}, {"id": 43, "channelType": "WEBHOOK", "name": "Billing hook", "address": "https://billing.example.com/hooks", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null, "rateLimit": 0, "inFlightLimit": 2, "pausedUntil": null, "previousSecretUntil": null, "health": "failing", "failingSince": "2026-11-23T08:12:00Z", "failedAttempts": 4, "lastStatusCode": 500, "lastError": "the webhook answered 500 Internal Server Error", "attempts24h": 20, "attemptsSucceeded24h": 16, "successShare24h": 0.8, "headers": [], "disabledBy": null, "disabledByName": ""}]`)},
}

var getEventChannelDoc = &doc{
	tag:     "channel",
	summary: "Get a channel",
	description: prose(`
		The caller's tenant's channel id, exactly as the lists show it: never a secret, and with the
		address masked for a user who is not an admin (unless the host's channel.Authorizer lets
		them see addresses). Every user of the tenant may get a channel. An id that names no channel
		of the tenant (never was, deleted, another tenant's) is 404. GET /event/channel/type/... and
		the other static segments are their own routes, never a channel id. Its health (health,
		failingSince, failedAttempts, lastStatusCode, lastError, the attempts of the last 24 hours,
		disabledBy and disabledByName) is as the list of its type describes.
	`),
	ok: "OK. data is the channel.",
	errors: []errDoc{
		channelMissing,
	},
	example: example{data: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null, "rateLimit": 0, "inFlightLimit": 4, "pausedUntil": null, "previousSecretUntil": null, "health": "healthy", "failingSince": null, "failedAttempts": 0, "lastStatusCode": 0, "lastError": "", "attempts24h": 12, "attemptsSucceeded24h": 12, "successShare24h": 1, "headers": [], "disabledBy": null, "disabledByName": ""}`)},
}

var deleteEventChannelDoc = &doc{
	tag:     "channel",
	summary: "Delete a channel",
	description: prose(`
		Deletes the caller's tenant's channel id for good, which frees its unit of the type's quota.
		Only admins, or users the host's channel.Authorizer allows, may delete channels: anyone else
		is 403 forbidden, asked before anything is read or written. An id that names no channel of
		the tenant (never was, already deleted, another tenant's) is 404. DELETE /event/channel/test
		is 405: the static segment is the test route, never a channel id.
	`),
	ok: "OK. The channel is deleted; data is null.",
	errors: []errDoc{
		channelForbidden,
		channelMissing,
	},
	example: example{data: raw(`null`)},
}

var testEventChannelDoc = &doc{
	tag:     "channel",
	summary: "Send a test message",
	description: prose(`
		Sends one real message through the channel's protocol, to the address in the body, checked
		as an add checks it (nothing is stored). Only admins, or users the host's channel.Authorizer
		allows, may test channels: anyone else is 403 forbidden, asked before anything is read or
		written. {kinds.tests}

		Success is a 2xx answer, and for a robot whose service answers 200 to its refusals the
		success code in it. Anything else is 502 channel_test_failed, whose msg says what the far end answered (its status, or errcode and
		errmsg; DingTalk's 310000 and 130101 are explained) or why it could not be reached;
		redirects are never followed (a 3xx is a failure naming where its Location points as a
		masked address is shown, https://HOST/***), what the address holds (its path and query, a
		robot's key) is masked as *** in msg, no proxy is used, 10 seconds bound the whole exchange,
		and at most 64 KiB of the answer are read.

		The address, and every address its host resolves to at the moment of the connection, must
		not be in a network channels may not reach (400 channel_address_blocked, msg naming the
		reason, nothing sent). An id that names no channel of the tenant is 404. Each tenant may
		send 20 test messages a minute (the host may set another number), a test of an e-mail
		channel counting one per address: one more is 429 too_many_requests with Retry-After.
	`),
	ok: "OK. The far end took the message; data names it, gives the reply's status and start (4 KiB at most, masked as attempts are), and for a webhook test without a stored channel the throwaway secret that signed it.",
	errors: []errDoc{
		{key: KeyValidation},            // ChannelBadRequest
		{key: KeyChannelAddressBlocked}, // ChannelBadRequest
		channelForbidden,
		channelMissing,
		{key: KeyTooManyRequests, when: "The tenant sent as many test messages this minute as allowed (20 by default; the host may set another number): the test route is no relay. Retry after Retry-After seconds."},
		{key: KeyChannelTestFailed, when: "The channel did not take the test message: the far end answered a non-2xx status (any 3xx included: redirects are not followed), a robot answered an error code, the mail server refused, or the far end could not be reached (connection refused, no answer within 10 seconds...). msg says what the far end answered. Nothing is wrong with deskkit: fix the address or the far end, then test again."},
	},
	example: example{body: raw(`{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`), data: raw(`{"messageId": "msg_2p7Kq0xTzcmSJxqWwYQ4nUkD3Fa", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q=", "statusCode": 204, "response": ""}`)},
	more: map[string]example{
		"stored": {summary: "A stored channel, by id", body: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`)},
	},
}

// The errors several operations answer alike, each described once in the
// OpenAPI document.
var (
	channelForbidden = errDoc{name: "ChannelForbidden", key: KeyForbidden, when: "The caller is not an admin, and the host's channel.Authorizer (if it has one) does not allow them: only they may add, replace, delete and test channels (listing is open to every user of the tenant). Asked before anything is read or written."}
	channelMissing   = errDoc{name: "ChannelNotFound", key: KeyNotFound, when: "No channel with this id in the caller's tenant: it never was, was deleted, or belongs to another tenant."}
)
