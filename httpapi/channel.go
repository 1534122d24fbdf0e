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
//
// The test route is mounted when r is a ChannelTester too.
func channelRoutes(r ChannelService) []Operation {
	h := channelHandlers{r: r}
	ops := []Operation{
		Op("addEventChannel", http.MethodPost, "/event/channel", h.add),
		Op("replaceEventChannel", http.MethodPut, "/event/channel", h.replace),
		Op("listEventChannels", http.MethodGet, "/event/channel/type/{channelType}", h.list),
		Op("deleteEventChannel", http.MethodDelete, "/event/channel/{id}", h.delete),
	}
	if t, ok := r.(ChannelTester); ok {
		h.t = t
		ops = append(ops, Op("testEventChannel", http.MethodPost, "/event/channel/test", h.test))
	}
	return ops
}

type channelHandlers struct {
	r ChannelService
	t ChannelTester // nil if r is none
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

// channelRequest is the body of an add, a replace and a test: one shape,
// so that a client can send the form it shows for all three. id is
// optional here; the registry refuses it on an add and requires it on a
// replace, and on a test it names the stored channel whose secret signs
// the message.
type channelRequest struct {
	Body struct {
		ID      channelID `json:"id"`
		Type    string    `json:"channelType"`
		Name    string    `json:"name"`
		Address string    `json:"address"`
		Secret  *string   `json:"secret"`
	} `body:"json"`
}

func (r channelRequest) input() (channel.Input, error) {
	b := r.Body
	id, err := b.ID.int64()
	if err != nil {
		return channel.Input{}, err
	}
	return channel.Input{ID: id, Type: b.Type, Name: b.Name, Address: b.Address, Secret: b.Secret}, nil
}

type channelTypeRequest struct {
	Type string `path:"channelType"`
}

type channelDeleteRequest struct {
	ID int64 `path:"id"`
}

func (h channelHandlers) add(ctx context.Context, p deskkit.Principal, req channelRequest) (channel.Added, error) {
	in, err := req.input()
	if err != nil {
		return channel.Added{}, err
	}
	return h.r.Add(ctx, p, in)
}

func (h channelHandlers) replace(ctx context.Context, p deskkit.Principal, req channelRequest) (channel.Channel, error) {
	in, err := req.input()
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

func (h channelHandlers) test(ctx context.Context, p deskkit.Principal, req channelRequest) (channel.TestResult, error) {
	in, err := req.input()
	if err != nil {
		return channel.TestResult{}, err
	}
	return h.t.Test(ctx, p, in)
}
