package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/dbtest"
)

const (
	eventTypesPath   = httpapi.Prefix + "/event/types"
	eventChannelPath = httpapi.Prefix + "/event/channel"
)

// published is a prepare that stores alice's webhook (fx.channel) and
// publishes one event to it (fx.delivery).
func published(t *testing.T, e *env) {
	storedWebhook(t, e)
	err := e.ch.reg.Publish(t.Context(), e.db, alice.TenantID, deskkit.Event{
		Type: channel.EventChannelDisabled, Title: "A channel was disabled",
		Data: map[string]any{"channelId": 1, "name": "x", "reason": "test", "actor": nil},
	})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	page, err := e.ch.reg.Deliveries(t.Context(), alice, e.fx.channel.ID, channel.DeliveryFilter{}, 1, 10)
	if err != nil || len(page.List) != 1 {
		t.Fatalf("deliveries: %v %+v", err, page)
	}
	e.fx.delivery = page.List[0].ID
}

// disabledWithDelivery is published, and the channel disabled then.
func disabledWithDelivery(t *testing.T, e *env) {
	published(t, e)
	if _, err := e.ch.reg.Disable(t.Context(), alice, e.fx.channel.ID); err != nil {
		t.Fatalf("disable: %v", err)
	}
}

// resendsUsed is published, and the delivery resent as often as the
// tenant may this minute (setup's ResendsPerMinute).
func resendsUsed(t *testing.T, e *env) {
	published(t, e)
	for range resendsPerMinute {
		if _, err := e.ch.reg.Resend(t.Context(), alice, e.fx.delivery); err != nil {
			t.Fatalf("resend: %v", err)
		}
	}
}

// wantChannelState checks a channel answered by enable or disable.
func wantChannelState(enabled bool) func(t *testing.T, data json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		t.Helper()
		var c channel.Channel
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("data %s: %v", data, err)
		}
		if c.Enabled != enabled || (c.DisabledDate == nil) != enabled || (c.DisabledReason == "") != enabled {
			t.Errorf("channel %s, want enabled %v", data, enabled)
		}
	}
}

// wantDeliveries checks a page of deliveries that holds n.
func wantDeliveries(n int) func(t *testing.T, data json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		t.Helper()
		var page channel.DeliveryPage
		if err := json.Unmarshal(data, &page); err != nil {
			t.Fatalf("data %s: %v", data, err)
		}
		if page.Total != int64(n) || len(page.List) != n {
			t.Errorf("deliveries %s, want %d", data, n)
		}
	}
}

func channelOp(suffix string) func(fixture) string {
	return fill(eventChannelPath + "/{channelId}" + suffix)
}

func deliveryOp(suffix string) func(fixture) string {
	return fill(httpapi.Prefix + "/event/delivery/{deliveryId}" + suffix)
}

// eventResponseCases are the event catalogue's and deliveries' operations.
var eventResponseCases = []responseCase{
	// GET /event/types
	{name: "event types", op: "listEventTypes", method: http.MethodGet, target: path(eventTypesPath),
		token: "dave", reqValid: true, wantStatus: 200,
		checkData: func(t *testing.T, data json.RawMessage) {
			var types []deskkit.EventType
			if err := json.Unmarshal(data, &types); err != nil {
				t.Fatalf("data %s: %v", data, err)
			}
			found := false
			for _, ty := range types {
				found = found || ty.Name == channel.EventChannelDisabled && ty.Description != "" && ty.Example != nil
			}
			if !found {
				t.Errorf("the catalogue lacks channel.disabled: %s", data)
			}
		}},
	{name: "event types with a query", op: "listEventTypes", method: http.MethodGet, target: path(eventTypesPath + "?all=1"),
		token: "dave", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "event types directory down", op: "listEventTypes", method: http.MethodGet, target: path(eventTypesPath),
		token: "outage", reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},

	// GET /event/channel
	{name: "every channel", op: "listAllEventChannels", method: http.MethodGet, target: path(eventChannelPath), prepare: storedWebhook,
		token: "bob", reqValid: true, wantStatus: 200, wantData: func(fx fixture) any { return []channel.Channel{fx.channel.Channel} }},
	{name: "every channel masked", op: "listAllEventChannels", method: http.MethodGet, target: path(eventChannelPath), prepare: storedWebhook,
		token: "dave", reqValid: true, wantStatus: 200, wantData: func(fx fixture) any {
			c := fx.channel.Channel
			c.Address = "https://hooks.example.com/***"
			return []channel.Channel{c}
		}},
	{name: "every channel with a query", op: "listAllEventChannels", method: http.MethodGet, target: path(eventChannelPath + "?channelType=EMAIL"),
		token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
	{name: "every channel database down", op: "listAllEventChannels", method: http.MethodGet, target: path(eventChannelPath),
		token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
}

// eventIDCases are the cases every operation on one channel or delivery
// answers alike: a bad id, a principal who may not, another tenant's id,
// an outage (the answers every operation shares are genericCases').
func eventIDCases(op, method string, target func(string) func(fixture) string, prepare func(*testing.T, *env)) []responseCase {
	return []responseCase{
		{name: op + " id 0", op: op, method: method, target: target("0"),
			token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
		{name: op + " not allowed", op: op, method: method, target: target(""), prepare: prepare,
			token: "dave", reqValid: true, wantStatus: 403, wantKey: httpapi.KeyForbidden},
		{name: op + " unknown id", op: op, method: method, target: target("999"),
			token: "bob", reqValid: true, wantStatus: 404, wantKey: httpapi.KeyNotFound},
		{name: op + " database down", op: op, method: method, target: target(""), prepare: prepare,
			token: "bob", down: true, reqValid: true, wantStatus: 503, wantKey: httpapi.KeyServiceUnavailable},
	}
}

// onChannel and onDelivery make an eventIDCases target: the fixture's
// channel or delivery for "", else the id given.
func onChannel(suffix string) func(string) func(fixture) string {
	return func(id string) func(fixture) string {
		if id == "" {
			return channelOp(suffix)
		}
		return path("%s", eventChannelPath+"/"+id+suffix)
	}
}

func onDelivery(suffix string) func(string) func(fixture) string {
	return func(id string) func(fixture) string {
		if id == "" {
			return deliveryOp(suffix)
		}
		return path("%s", httpapi.Prefix+"/event/delivery/"+id+suffix)
	}
}

const since = "?since=2026-01-01T00:00:00Z"

func init() {
	eventResponseCases = slices.Concat(eventResponseCases,
		// PATCH /event/channel/{id}/enable and /disable
		[]responseCase{
			{name: "enable", op: "enableEventChannel", method: http.MethodPatch, target: channelOp("/enable"), prepare: disabledWithDelivery,
				token: "bob", reqValid: true, wantStatus: 200, checkData: wantChannelState(true)},
			{name: "disable", op: "disableEventChannel", method: http.MethodPatch, target: channelOp("/disable"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200, checkData: wantChannelState(false)},
		},
		eventIDCases("enableEventChannel", http.MethodPatch, onChannel("/enable"), storedWebhook),
		eventIDCases("disableEventChannel", http.MethodPatch, onChannel("/disable"), storedWebhook),

		// GET /event/channel/{id}/deliveries
		[]responseCase{
			{name: "deliveries", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?status=PENDING&pageNo=1&pageSize=5"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200,
				checkData: func(t *testing.T, data json.RawMessage) {
					var page channel.DeliveryPage
					if err := json.Unmarshal(data, &page); err != nil {
						t.Fatalf("data %s: %v", data, err)
					}
					if page.Total != 1 || len(page.List) != 1 || page.List[0].Status != channel.DeliveryPending || page.List[0].EventType != channel.EventChannelDisabled {
						t.Errorf("deliveries %s", data)
					}
				}},
			{name: "deliveries bad status", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?status=LOST"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "deliveries filtered", op: "listEventDeliveries", method: http.MethodGet,
				target: channelOp("/deliveries?eventType=task.trashed," + channel.EventChannelDisabled + "&from=2000-01-01T00:00:00Z&to=2100-01-01+00:00:00"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200, checkData: wantDeliveries(1)},
			{name: "deliveries of another type", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?eventType=task.trashed"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200, checkData: wantDeliveries(0)},
			{name: "deliveries before from", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?from=2100-01-01T00:00:00%2B08:00"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200, checkData: wantDeliveries(0)},
			{name: "deliveries bad type", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?eventType=Task.Trashed"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "deliveries empty type", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?eventType=task.trashed,,x"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "deliveries bad from", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?from=yesterday"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "deliveries bad to", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?to=2026-02-30T00:00:00Z"), prepare: storedWebhook,
				token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "deliveries from after to", op: "listEventDeliveries", method: http.MethodGet, target: channelOp("/deliveries?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z"), prepare: storedWebhook,
				token: "bob", reqValid: true, wantStatus: 400, wantKey: httpapi.KeyValidation},
		},
		eventIDCases("listEventDeliveries", http.MethodGet, onChannel("/deliveries"), storedWebhook),

		// GET /event/channel/{id}/deliveries/hourly
		[]responseCase{
			{name: "hourly", op: "countEventDeliveriesHourly", method: http.MethodGet, target: channelOp("/deliveries/hourly?hours=3"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200,
				checkData: func(t *testing.T, data json.RawMessage) {
					var hours []channel.HourlyDeliveries
					if err := json.Unmarshal(data, &hours); err != nil {
						t.Fatalf("data %s: %v", data, err)
					}
					if len(hours) != 3 || hours[2].Pending != 1 || hours[0].Pending+hours[1].Pending+hours[2].Succeeded+hours[2].Failed != 0 {
						t.Errorf("hourly %s, want 3 hours with the one pending delivery in the last", data)
					}
				}},
			{name: "hourly default day", op: "countEventDeliveriesHourly", method: http.MethodGet, target: channelOp("/deliveries/hourly"), prepare: storedWebhook,
				token: "bob", reqValid: true, wantStatus: 200,
				checkData: func(t *testing.T, data json.RawMessage) {
					var hours []channel.HourlyDeliveries
					if err := json.Unmarshal(data, &hours); err != nil || len(hours) != 24 {
						t.Errorf("hourly %s (%v), want 24 hours", data, err)
					}
				}},
			{name: "hourly too many hours", op: "countEventDeliveriesHourly", method: http.MethodGet, target: channelOp("/deliveries/hourly?hours=169"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
		},
		eventIDCases("countEventDeliveriesHourly", http.MethodGet, onChannel("/deliveries/hourly"), storedWebhook),

		// POST /event/channel/{id}/recover
		[]responseCase{
			{name: "recover", op: "recoverEventDeliveries", method: http.MethodPost, target: channelOp("/recover" + since), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return map[string]any{"count": 0} }},
			{name: "recover without since", op: "recoverEventDeliveries", method: http.MethodPost, target: channelOp("/recover"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "recover bad since", op: "recoverEventDeliveries", method: http.MethodPost, target: channelOp("/recover?since=yesterday"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			// Issue 28, fault 8: since is read by the one date parser.
			{name: "recover since in lower case", op: "recoverEventDeliveries", method: http.MethodPost, target: channelOp("/recover?since=2026-01-01t08:00:00%2B08:00"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return map[string]any{"count": 0} }},
			{name: "recover since with no offset", op: "recoverEventDeliveries", method: http.MethodPost, target: channelOp("/recover?since=2026-01-01T08:00:00%2B24:00"), prepare: storedWebhook,
				token: "bob", wantStatus: 400, wantKey: httpapi.KeyValidation},
			{name: "recover disabled", op: "recoverEventDeliveries", method: http.MethodPost, target: channelOp("/recover" + since), prepare: disabledWithDelivery,
				token: "bob", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyChannelDisabled},
			{name: "recover throttled", op: "recoverEventDeliveries", method: http.MethodPost, target: channelOp("/recover" + since), prepare: resendsUsed,
				token: "bob", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyTooManyRequests},
		},
		eventIDCases("recoverEventDeliveries", http.MethodPost, onChannel("/recover"+since), storedWebhook),

		// GET /event/delivery/{id}
		[]responseCase{
			{name: "inspect", op: "getEventDelivery", method: http.MethodGet, target: deliveryOp(""), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200,
				checkData: func(t *testing.T, data json.RawMessage) {
					var d channel.DeliveryDetail
					if err := json.Unmarshal(data, &d); err != nil {
						t.Fatalf("data %s: %v", data, err)
					}
					if d.Delivery.ID == 0 || d.Event.ID == "" || len(d.Event.Payload) == 0 || d.Channel.Name == "" || len(d.Attempts) != 0 {
						t.Errorf("inspected %s", data)
					}
				}},
		},
		eventIDCases("getEventDelivery", http.MethodGet, onDelivery(""), published),

		// GET /event/delivery/{id}/attempts
		[]responseCase{
			{name: "attempts", op: "listEventAttempts", method: http.MethodGet, target: deliveryOp("/attempts"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200, wantData: func(fixture) any { return []channel.Attempt{} }},
		},
		eventIDCases("listEventAttempts", http.MethodGet, onDelivery("/attempts"), published),

		// POST /event/delivery/{id}/resend
		[]responseCase{
			{name: "resend", op: "resendEventDelivery", method: http.MethodPost, target: deliveryOp("/resend"), prepare: published,
				token: "bob", reqValid: true, wantStatus: 200,
				checkData: func(t *testing.T, data json.RawMessage) {
					var d channel.Delivery
					if err := json.Unmarshal(data, &d); err != nil {
						t.Fatalf("data %s: %v", data, err)
					}
					if d.Status != channel.DeliveryPending || d.NextAttemptDate == nil {
						t.Errorf("resent %s", data)
					}
				}},
			{name: "resend disabled", op: "resendEventDelivery", method: http.MethodPost, target: deliveryOp("/resend"), prepare: disabledWithDelivery,
				token: "bob", reqValid: true, wantStatus: 409, wantKey: httpapi.KeyChannelDisabled},
			{name: "resend throttled", op: "resendEventDelivery", method: http.MethodPost, target: deliveryOp("/resend"), prepare: resendsUsed,
				token: "bob", reqValid: true, wantStatus: 429, wantKey: httpapi.KeyTooManyRequests},
		},
		eventIDCases("resendEventDelivery", http.MethodPost, onDelivery("/resend"), published),
	)
}

// TestAmbiguousChannelPaths: a path that fits both
// /event/channel/type/{channelType} and /event/channel/{id}/... goes to the
// static segment (400 for an unknown type, 405 for a method it does not
// take), and {id} takes only integers: no request reaches a channel by the
// name "type" (why the linters' no-ambiguous-paths rule is
// off; see vacuum.yaml).
func TestAmbiguousChannelPaths(t *testing.T) {
	e := newChannelEnv(t, dbtest.OpenSQLite(t), channel.Config{})
	e.call(t, http.MethodGet, channelTypePath+"deliveries", "alice", "").wantError(t, http.StatusBadRequest, httpapi.KeyValidation, "channelType")
	// The static resources /event/channel/type/enable and .../recover are
	// the lists of types "enable" and "recover": GET only.
	e.call(t, http.MethodPatch, eventChannelPath+"/type/enable", "alice", "").wantError(t, http.StatusMethodNotAllowed, httpapi.KeyMethodNotAllowed, "")
	e.call(t, http.MethodPost, eventChannelPath+"/type/recover?since=2026-01-01T00:00:00Z", "alice", "").wantError(t, http.StatusMethodNotAllowed, httpapi.KeyMethodNotAllowed, "")
}

// A burst of resends gets 429 with Retry-After past the tenant's limit, and
// a second server over the same database (another replica) shares it.
func TestResendThrottle(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		cfg := channel.Config{AllowPrivateNetworks: true, ResendsPerMinute: 3}
		e := newChannelEnv(t, db, cfg)
		other := newChannelEnv(t, db, cfg)
		hook := newReceiver(t, http.StatusInternalServerError, "")
		added, err := e.host.reg.Add(t.Context(), alice, channel.Input{Type: "WEBHOOK", Name: "hook", Address: hook.url})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.host.reg.Publish(t.Context(), db, alice.TenantID, deskkit.Event{
			Type: channel.EventChannelDisabled, Title: "A channel was disabled",
			Data: map[string]any{"channelId": 1, "name": "x", "reason": "test", "actor": nil},
		}); err != nil {
			t.Fatal(err)
		}
		page, err := e.host.reg.Deliveries(t.Context(), alice, added.ID, channel.DeliveryFilter{}, 1, 10)
		if err != nil || len(page.List) != 1 {
			t.Fatalf("deliveries: %+v, %v", page, err)
		}
		target := httpapi.Prefix + "/event/delivery/" + strconv.FormatInt(page.List[0].ID, 10) + "/resend"

		// 10 at once, through both servers.
		type result struct {
			status     int
			retryAfter string
		}
		results := make([]result, 10)
		var wg sync.WaitGroup
		for i := range results {
			srv := e.url
			if i%2 == 1 {
				srv = other.url
			}
			wg.Go(func() {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv+target, nil)
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Authorization", "Bearer alice")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				results[i] = result{resp.StatusCode, resp.Header.Get("Retry-After")}
			})
		}
		wg.Wait()
		var ok, refused int
		for _, r := range results {
			switch {
			case r.status == http.StatusOK:
				ok++
			case r.status == http.StatusTooManyRequests && r.retryAfter == "60":
				refused++
			default:
				t.Errorf("a resend answered %d, Retry-After %q", r.status, r.retryAfter)
			}
		}
		if ok != 3 || refused != 7 {
			t.Fatalf("a burst of 10 resends over two servers: %d answered 200, %d 429; want 3 and 7", ok, refused)
		}

		// Recover shares the limit; the wait is what is left of the
		// minute, on either server.
		e.host.clock.Advance(25 * time.Second)
		other.host.clock.Advance(25 * time.Second)
		a := other.call(t, http.MethodPost, eventChannelPath+"/"+strconv.FormatInt(added.ID, 10)+"/recover?since=2026-01-01T00:00:00Z", "alice", "")
		a.wantError(t, http.StatusTooManyRequests, httpapi.KeyTooManyRequests, "")
		a.wantRetryAfter(t, 35*time.Second)
		if !strings.Contains(a.msg, "at most 3 resends and recovers a minute per tenant") {
			t.Errorf("the 429's msg %q does not say the limit", a.msg)
		}

		// After the minute, resends pass again.
		e.host.clock.Advance(35 * time.Second)
		e.call(t, http.MethodPost, target, "alice", "").wantOK(t, &channel.Delivery{})
	})
}

// TestDeliveryFiltersNameTheParameter: a bad filter of the deliveries is a
// 400 envelope whose message names the parameter and its rule, in English
// and Chinese; the registry is not asked past the refusal.
func TestDeliveryFiltersNameTheParameter(t *testing.T) {
	e := setup(t)
	storedWebhook(t, e)
	base := eventChannelPath + "/" + strconv.FormatInt(e.fx.channel.ID, 10) + "/deliveries?"
	for _, c := range []struct{ query, want string }{
		{"eventType=Task", `eventType has "Task", which is no event type`},
		{"eventType=a,,b", `eventType has "", which is no event type`},
		{"eventType=" + strings.Repeat("t,", 20) + "t", "eventType must name at most 20 event types"},
		{"from=yesterday", "from must be a date as RFC 3339"},
		{"to=2026-13-01T00:00:00Z", "to must be a date and time that exist"},
		{"from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "from must be before to"},
		{"from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00Z", "from must be before to"},
		{"from=2026-11-01T00:00:00Z&from=2026-11-01T00:00:00Z", "from must be given once"},
	} {
		a := e.call(t, http.MethodGet, base+c.query, "bob", "")
		if a.status != http.StatusBadRequest || a.key != httpapi.KeyValidation || !strings.Contains(a.msg, c.want) {
			t.Errorf("%s: %d %s %q, want 400 with %q", c.query, a.status, a.key, a.msg, c.want)
		}
	}
}
