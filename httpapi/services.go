package httpapi

import (
	"context"
	"reflect"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// The services httpapi mounts, as the small interfaces it calls: exactly
// the methods its routes use, composed per route group. *trash.Trash,
// *verify.Verifier and *channel.ChannelRegistry implement them; a host may
// mount a wrapper of its own (metrics, audit) or a fake instead. Each
// method answers as the service's method of the same name does, errors
// included, and its errors go through the error table.
//
// Capabilities added later are optional interfaces, found by type
// assertion on the mounted value, so that a wrapper written today keeps
// compiling; a wrapper that does not implement an optional interface does
// not get its routes (they answer 404). ChannelTester is such an optional
// interface now.

// TrashSearcher reads the trash: GET /task/trash/search and
// GET /task/trash/count.
type TrashSearcher interface {
	Search(ctx context.Context, p deskkit.Principal, q trash.Query) (trash.Page, error)
	Count(ctx context.Context, p deskkit.Principal, projectID int64) (int64, error)
}

// TrashRestorer puts entries back: PATCH /task/trash/{id}/back and
// PATCH /task/trash/back.
type TrashRestorer interface {
	Restore(ctx context.Context, p deskkit.Principal, id int64) error
	RestoreAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error)
}

// TrashClearer removes entries for good: DELETE /task/trash/{id} and
// DELETE /task/trash.
type TrashClearer interface {
	Clear(ctx context.Context, p deskkit.Principal, id int64) error
	ClearAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error)
}

// TrashService is the trash routes' service (Config.Trash).
type TrashService interface {
	TrashSearcher
	TrashRestorer
	TrashClearer
}

// ProfileService is the current user's profile and tenant:
// GET and PATCH /user/current, GET /user/current/tenant.
type ProfileService interface {
	Detail(ctx context.Context, p deskkit.Principal) (verify.Detail, error)
	Tenant(ctx context.Context, p deskkit.Principal) (verify.TenantDetail, error)
	UpdateProfile(ctx context.Context, p deskkit.Principal, pr verify.Profile) (verify.Detail, error)
}

// CodeSender sends verification codes: POST /user/current/sms/send and
// POST /user/current/email/send.
type CodeSender interface {
	SendSMS(ctx context.Context, p deskkit.Principal, req verify.SMSSend) (verify.Sent, error)
	SendEmail(ctx context.Context, p deskkit.Principal, req verify.EmailSend) (verify.Sent, error)
}

// CodeChecker checks verification codes: GET /user/current/sms/check and
// GET /user/current/email/check.
type CodeChecker interface {
	CheckSMS(ctx context.Context, p deskkit.Principal, req verify.SMSCheck) (verify.Link, error)
	CheckEmail(ctx context.Context, p deskkit.Principal, req verify.EmailCheck) (verify.Link, error)
}

// AddressChanger changes the user's addresses with proof:
// PATCH /user/current/mobile and PATCH /user/current/email.
type AddressChanger interface {
	ChangeMobile(ctx context.Context, p deskkit.Principal, req verify.MobileChange) (verify.Detail, error)
	ChangeEmail(ctx context.Context, p deskkit.Principal, req verify.EmailChange) (verify.Detail, error)
}

// VerifyService is the current user's routes' service (Config.Verifier).
type VerifyService interface {
	ProfileService
	CodeSender
	CodeChecker
	AddressChanger
}

// ChannelStore keeps the tenant's event channels: POST and PUT
// /event/channel, GET /event/channel/type/{channelType},
// DELETE /event/channel/{id}.
type ChannelStore interface {
	Add(ctx context.Context, p deskkit.Principal, in channel.Input) (channel.Added, error)
	Replace(ctx context.Context, p deskkit.Principal, in channel.Input) (channel.Channel, error)
	List(ctx context.Context, p deskkit.Principal, channelType string) ([]channel.Channel, error)
	Delete(ctx context.Context, p deskkit.Principal, id int64) error
}

// ChannelTester sends test messages: POST /event/channel/test. It is
// optional: mounted when Config.Channels implements it.
type ChannelTester interface {
	Test(ctx context.Context, p deskkit.Principal, in channel.Input) (channel.TestResult, error)
}

// EventService is the event catalogue, every channel of the tenant and
// their deliveries: GET /event/types, GET /event/channel, PATCH
// /event/channel/{id}/enable and /disable, GET
// /event/channel/{id}/deliveries, POST /event/channel/{id}/recover, GET
// /event/delivery/{id}/attempts and POST /event/delivery/{id}/resend. It is
// optional: mounted when Config.Channels implements it.
type EventService interface {
	EventTypes() []deskkit.EventType
	ListAll(ctx context.Context, p deskkit.Principal) ([]channel.Channel, error)
	Enable(ctx context.Context, p deskkit.Principal, id int64) (channel.Channel, error)
	Disable(ctx context.Context, p deskkit.Principal, id int64) (channel.Channel, error)
	Deliveries(ctx context.Context, p deskkit.Principal, channelID int64, status string, pageNo, pageSize int) (channel.DeliveryPage, error)
	DeliveryCounts(ctx context.Context, p deskkit.Principal, channelID int64, hours int) ([]channel.HourlyDeliveries, error)
	Recover(ctx context.Context, p deskkit.Principal, channelID int64, since time.Time) (int, error)
	Attempts(ctx context.Context, p deskkit.Principal, deliveryID int64) ([]channel.Attempt, error)
	Resend(ctx context.Context, p deskkit.Principal, deliveryID int64) (channel.Delivery, error)
}

// ChannelService is the event channels' routes' service
// (Config.Channels); see ChannelTester and EventService.
type ChannelService interface {
	ChannelStore
}

var (
	_ TrashService   = (*trash.Trash)(nil)
	_ VerifyService  = (*verify.Verifier)(nil)
	_ ChannelService = (*channel.ChannelRegistry)(nil)
	_ ChannelTester  = (*channel.ChannelRegistry)(nil)
	_ EventService   = (*channel.ChannelRegistry)(nil)
)

// mounted reports whether a service was given: a nil interface and an
// interface holding a nil pointer (Trash: (*trash.Trash)(nil)) both mean
// none.
func mounted(svc any) bool {
	if svc == nil {
		return false
	}
	v := reflect.ValueOf(svc)
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return !v.IsNil()
	}
	return true
}
