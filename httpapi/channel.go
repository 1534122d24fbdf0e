package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
)

// channelRoutes are the event channels of the principal's tenant.
// /event/channel/test and /event/channel/type/... are static segments beside
// DELETE /event/channel/{id}: a static segment shadows the wildcard, so
// DELETE /event/channel/test is 405, never a delete of channel "test".
func channelRoutes(r ChannelService) []Operation {
	h := channelHandlers{r: r}
	ops := []Operation{
		Op("addEventChannel", http.MethodPost, "/event/channel", h.add).With(addEventChannelDoc),
		Op("replaceEventChannel", http.MethodPut, "/event/channel", h.replace).With(replaceEventChannelDoc),
		Op("listEventChannels", http.MethodGet, "/event/channel/type/{channelType}", h.list).With(listEventChannelsDoc),
		Op("deleteEventChannel", http.MethodDelete, "/event/channel/{id}", h.delete).With(deleteEventChannelDoc),
		Op("testEventChannel", http.MethodPost, "/event/channel/test", h.test).With(testEventChannelDoc),
	}
	return ops
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
	bad := s == "" || len(s) > 19
	for _, r := range s {
		bad = bad || r < '0' || r > '9'
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if bad || err != nil || n < 1 {
		return 0, deskkit.Invalid("id", "must be a positive integer, written as a number or a string of digits")
	}
	return n, nil
}

// channelBody is the body of an add, a replace and a test: one shape,
// so that a client can send the form it shows for all three. id is
// optional here; the registry refuses it on an add and requires it on a
// replace, and on a test it names the stored channel whose secret signs
// the message. Each operation has a type of its own, for the OpenAPI
// document's words.
type channelBody struct {
	ID      channelID `json:"id"`
	Type    string    `json:"channelType"`
	Name    string    `json:"name"`
	Address string    `json:"address"`
	Secret  *string   `json:"secret"`
	Events  []string  `json:"events"`
}

type (
	channelAddBody     channelBody
	channelReplaceBody channelBody
	channelTestBody    channelBody
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

func (b channelBody) input() (channel.Input, error) {
	id, err := b.ID.int64()
	if err != nil {
		return channel.Input{}, err
	}
	return channel.Input{ID: id, Type: b.Type, Name: b.Name, Address: b.Address, Secret: b.Secret, Events: b.Events}, nil
}

type channelTypeRequest struct {
	Type string `path:"channelType"`
}

type channelDeleteRequest struct {
	ID int64 `path:"id"`
}

func (h channelHandlers) add(ctx context.Context, p deskkit.Principal, req channelAddRequest) (channel.Added, error) {
	in, err := channelBody(req.Body).input()
	if err != nil {
		return channel.Added{}, err
	}
	return h.r.Add(ctx, p, in)
}

func (h channelHandlers) replace(ctx context.Context, p deskkit.Principal, req channelReplaceRequest) (channel.Channel, error) {
	in, err := channelBody(req.Body).input()
	if err != nil {
		return channel.Channel{}, err
	}
	return h.r.Replace(ctx, p, in)
}

func (h channelHandlers) list(ctx context.Context, p deskkit.Principal, req channelTypeRequest) ([]channel.Channel, error) {
	return h.r.List(ctx, p, req.Type)
}

func (h channelHandlers) delete(ctx context.Context, p deskkit.Principal, req channelDeleteRequest) (*None, error) {
	return nil, h.r.Delete(ctx, p, req.ID)
}

func (h channelHandlers) test(ctx context.Context, p deskkit.Principal, req channelTestRequest) (channel.TestResult, error) {
	in, err := channelBody(req.Body).input()
	if err != nil {
		return channel.TestResult{}, err
	}
	return h.r.Test(ctx, p, in)
}

var addEventChannelDoc = &Doc{
	Tag:         "channel",
	Summary:     "Add a channel",
	Description: "Adds a channel to the caller's tenant. Only admins, or users the host's channel.Authorizer allows, may add channels: anyone else is 403 forbidden, asked before anything is read or written. channelType takes the aliases WECHAT and DINGTALK; the answer has the canonical type. name is unique within the tenant (409 channel_name_taken); address is checked for the type (see ChannelAdd). Each tenant may have 5 webhooks, 20 e-mail channels and 10 of each robot kind: one more is 409 channel_quota_exceeded (E3), counted in the transaction of the insert, so parallel adds cannot exceed it.\n\nA webhook gets a signing secret, whsec_ and the base64 of 32 random bytes: it is in this answer and never again (it is stored encrypted). Every webhook request carries webhook-id, webhook-timestamp and webhook-signature headers (Standard Webhooks), which any Standard Webhooks library checks with it. A WORKPLACE_CHAT channel takes DingTalk's signing secret (SEC...) in secret, write-only; no other type takes one.\n\nA URL whose host is a literal address of a network channels may not reach (loopback, private, link-local, cloud metadata, in any spelling: 127.1, 2130706433, [::ffff:127.0.0.1]...) or localhost is 400 channel_address_blocked, whose msg names the reason: loopback or a private network (and the setting that opens both in development: channel.Config.AllowPrivateNetworks, the reference server's -channel-allow-private-networks), a cloud metadata endpoint or link-local (never opened), or another special-purpose range. Host names are resolved, and every address they resolve to checked, when a message is sent. Unknown body fields, id other than null, and any query parameter are 400.",
	OK:          "OK. data is the new channel, and a webhook's signing secret, shown this once.",
	Errors: []ErrorDoc{
		{Key: KeyValidation},            // ChannelBadRequest
		{Key: KeyChannelAddressBlocked}, // ChannelBadRequest
		channelForbidden,
		{Key: KeyChannelNameTaken},     // ChannelAddConflict
		{Key: KeyChannelQuotaExceeded}, // ChannelAddConflict
	},
	Example: Example{Body: raw(`{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`), Data: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q="}`)},
	More: map[string]Example{
		"wecom":    {Summary: "A WeCom robot, by alias", Body: raw(`{"channelType": "WECHAT", "name": "Team room", "address": "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"}`)},
		"dingtalk": {Summary: "A signed DingTalk robot", Body: raw(`{"channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=XXXXXX", "secret": "SECxxxxxxxx"}`)},
		"email":    {Summary: "E-mail to two addresses", Body: raw(`{"channelType": "EMAIL", "name": "On call", "address": "ann@example.com, bob@example.com"}`)},
	},
}

var replaceEventChannelDoc = &Doc{
	Tag:         "channel",
	Summary:     "Replace a channel",
	Description: "Replaces the name and address of the caller's tenant's channel id, checked exactly as an add checks them; the id stays. Only admins, or users the host's channel.Authorizer allows, may replace channels: anyone else is 403 forbidden, asked before anything is read or written. id is required (400 without), as a number or a string of digits. The type cannot change: a different channelType (after aliases) is 400, and an id that names no channel of the tenant (never was, deleted, another tenant's) is 404. A webhook keeps its signing secret; for a WORKPLACE_CHAT channel, secret absent or null keeps the stored one, \"\" removes it, and a new value replaces it. Unknown body fields and any query parameter are 400.",
	OK:          "OK. data is the channel as stored now.",
	Errors: []ErrorDoc{
		{Key: KeyValidation},            // ChannelBadRequest
		{Key: KeyChannelAddressBlocked}, // ChannelBadRequest
		channelForbidden,
		channelMissing,
		{Key: KeyChannelNameTaken, When: "Another channel of the tenant has the name."},
	},
	Example: Example{Body: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit/v2"}`), Data: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit/v2", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null}`)},
	More: map[string]Example{
		"idAsString": {Summary: "The id as a string, unsigned", Body: raw(`{"id": "43", "channelType": "DINGTALK", "name": "Ding room", "address": "https://oapi.dingtalk.com/robot/send?access_token=XXXXXX", "secret": ""}`)},
	},
}

var listEventChannelsDoc = &Doc{
	Tag:         "channel",
	Summary:     "List the channels of a type",
	Description: "Lists the caller's tenant's channels of channelType (an alias lists its canonical type), in id order: id, channelType, name and address, never a secret. Every user of the tenant may list them, but a user who is not an admin (unless the host's channel.Authorizer lets them see addresses) gets the addresses masked, since they carry keys and tokens: a webhook as its scheme and host followed by /*** (https://hooks.example.com/***), a robot's URL with every query value, its key or access_token among them, as *** (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***); e-mail addresses as stored. An unknown type is 400; query parameters are 400.",
	OK:          "OK. data is the list; [] if there are none.",
	Example:     Example{Data: raw(`[{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit", "enabled": true, "events": [], "disabledReason": "", "disabledDate": null}]`)},
	Params: []Param{
		{Name: "channelType", Description: "The type of the channels to list: a canonical name, or an alias (WECHAT for ENTERPRISE_CHAT, DINGTALK for WORKPLACE_CHAT), in upper case.", Example: "WEBHOOK", Schema: `{"$ref": "#/components/schemas/ChannelTypeInput"}`},
	},
}

var deleteEventChannelDoc = &Doc{
	Tag:         "channel",
	Summary:     "Delete a channel",
	Description: "Deletes the caller's tenant's channel id for good, which frees its unit of the type's quota. Only admins, or users the host's channel.Authorizer allows, may delete channels: anyone else is 403 forbidden, asked before anything is read or written. An id that names no channel of the tenant (never was, already deleted, another tenant's) is 404; query parameters are 400. DELETE /event/channel/test is 405: the static segment is the test route, never a channel id.",
	OK:          "OK. The channel is deleted; data is null.",
	Errors: []ErrorDoc{
		channelForbidden,
		channelMissing,
	},
	Example: Example{Data: raw(`null`)},
	Params: []Param{
		{Name: "id", Description: "Id of the channel.", Example: 42, Schema: `{"type": "integer", "format": "int64", "minimum": 1}`},
	},
}

var testEventChannelDoc = &Doc{
	Tag:         "channel",
	Summary:     "Send a test message",
	Description: "Sends one real message through the channel's protocol, to the address in the body, checked as an add checks it (nothing is stored). Only admins, or users the host's channel.Authorizer allows, may test channels: anyone else is 403 forbidden, asked before anything is read or written. WEBHOOK: a Standard Webhooks POST of an event of type channel.test, signed with the stored secret of the channel named by id, or else of the tenant's webhook of this name, when the body's address is that channel's address; otherwise with a throwaway secret returned in data (a stored secret never signs a message to another address, which could replay it to the real receiver). EMAIL: one message to each address, through the host's mail server. ENTERPRISE_CHAT and WORKPLACE_CHAT: the robot's markdown message (the channel name in title and text, for DingTalk's keyword mode; signed with the secret in the body, or else with the stored one when the address is the stored channel's).\n\nSuccess is a 2xx answer, and for the robots errcode 0 in it. Anything else is 502 channel_test_failed, whose msg says what the far end answered (its status, or errcode and errmsg; DingTalk's 310000 and 130101 are explained) or why it could not be reached; redirects are never followed (a 3xx is a failure naming where its Location points as a masked address is shown, https://HOST/***), what the address holds (its path and query, a robot's key) is masked as *** in msg, no proxy is used, 10 seconds bound the whole exchange, and at most 64 KiB of the answer are read.\n\nThe address, and every address its host resolves to at the moment of the connection, must not be in a network channels may not reach (400 channel_address_blocked, msg naming the reason, nothing sent). An id that names no channel of the tenant is 404. Each tenant may send 20 test messages a minute (the host may set another number), a test of an e-mail channel counting one per address: one more is 429 too_many_requests with Retry-After.",
	OK:          "OK. The far end took the message; data names it, and for a webhook test without a stored channel gives the throwaway secret that signed it.",
	Errors: []ErrorDoc{
		{Key: KeyValidation},            // ChannelBadRequest
		{Key: KeyChannelAddressBlocked}, // ChannelBadRequest
		channelForbidden,
		channelMissing,
		{Key: KeyTooManyRequests, When: "The tenant sent as many test messages this minute as allowed (20 by default; the host may set another number): the test route is no relay. Retry after Retry-After seconds."},
		{Key: KeyChannelTestFailed, When: "The channel did not take the test message: the far end answered a non-2xx status (any 3xx included: redirects are not followed), a robot answered a non-zero errcode, the mail server refused, or the far end could not be reached (connection refused, no answer within 10 seconds...). msg says what the far end answered. Nothing is wrong with deskkit: fix the address or the far end, then test again."},
	},
	Example: Example{Body: raw(`{"channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`), Data: raw(`{"messageId": "msg_2p7Kq0xTzcmSJxqWwYQ4nUkD3Fa", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4Yky8RcJk3Q="}`)},
	More: map[string]Example{
		"stored": {Summary: "A stored channel, by id", Body: raw(`{"id": 42, "channelType": "WEBHOOK", "name": "Ops hook", "address": "https://hooks.example.com/deskkit"}`)},
	},
}

// The errors several operations answer alike, each described once in the
// OpenAPI document.
var (
	channelForbidden = ErrorDoc{Name: "ChannelForbidden", Key: KeyForbidden, When: "The caller is not an admin, and the host's channel.Authorizer (if it has one) does not allow them: only they may add, replace, delete and test channels (listing is open to every user of the tenant). Asked before anything is read or written."}
	channelMissing   = ErrorDoc{Name: "ChannelNotFound", Key: KeyNotFound, When: "No channel with this id in the caller's tenant: it never was, was deleted, or belongs to another tenant."}
)
