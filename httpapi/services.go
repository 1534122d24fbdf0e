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

// The services httpapi mounts, one interface each: exactly the methods
// its routes call. *trash.Trash, *verify.Verifier and
// *channel.ChannelRegistry implement them; a host may mount a wrapper of
// its own (metrics, audit) or a fake instead. A wrapper embeds the
// interface and overrides what it wraps; a fake that serves only some
// routes embeds it too, and the routes whose methods it leaves to the
// embedded nil answer 500 (the panic is recovered and logged). Each
// method answers as the service's method of the same name does, errors
// included, and its errors go through the error table.

// TrashService is the trash routes' service (Config.Trash): GET
// /task/trash/search, /task/trash/count and /task/trash/{id}, PATCH /task/trash/{id}/back
// and /task/trash/back, DELETE /task/trash/{id} and /task/trash.
type TrashService interface {
	Search(ctx context.Context, p deskkit.Principal, q trash.Query) (trash.Page, error)
	Get(ctx context.Context, p deskkit.Principal, id int64) (trash.Entry, error)
	Count(ctx context.Context, p deskkit.Principal, projectID int64) (int64, error)
	Restore(ctx context.Context, p deskkit.Principal, id int64) error
	RestoreAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error)
	Clear(ctx context.Context, p deskkit.Principal, id int64) error
	ClearAll(ctx context.Context, p deskkit.Principal, projectID int64) (int, error)
}

// VerifyService is the current user's routes' service (Config.Verifier):
// the profile and tenant (GET and PATCH /user/current, GET
// /user/current/tenant), codes sent and checked (/user/current/sms/... and
// /user/current/email/...), and addresses changed with proof (PATCH
// /user/current/mobile and /user/current/email).
type VerifyService interface {
	Detail(ctx context.Context, p deskkit.Principal) (verify.Detail, error)
	Tenant(ctx context.Context, p deskkit.Principal) (verify.TenantDetail, error)
	UpdateProfile(ctx context.Context, p deskkit.Principal, pr verify.Profile) (verify.Detail, error)
	SendSMS(ctx context.Context, p deskkit.Principal, req verify.SMSSend) (verify.Sent, error)
	SendEmail(ctx context.Context, p deskkit.Principal, req verify.EmailSend) (verify.Sent, error)
	CheckSMS(ctx context.Context, p deskkit.Principal, req verify.SMSCheck) (verify.Link, error)
	CheckEmail(ctx context.Context, p deskkit.Principal, req verify.EmailCheck) (verify.Link, error)
	ChangeMobile(ctx context.Context, p deskkit.Principal, req verify.MobileChange) (verify.Detail, error)
	ChangeEmail(ctx context.Context, p deskkit.Principal, req verify.EmailChange) (verify.Detail, error)
}

// ChannelService is the event routes' service (Config.Channels): the
// tenant's channels (POST, PUT and GET /event/channel, GET
// /event/channel/type/{channelType} and /event/channel/{id}, DELETE
// /event/channel/{id}, PATCH
// /event/channel/{id}/enable and /disable), test messages (POST
// /event/channel/test), a webhook's signing secret (POST
// /event/channel/{id}/secret/reveal and /rotate), the event catalogue (GET /event/types), and
// deliveries (GET /event/channel/{id}/deliveries and .../hourly, POST
// /event/channel/{id}/recover, GET /event/delivery/{id} and its attempts, POST
// /event/delivery/{id}/resend).
type ChannelService interface {
	Add(ctx context.Context, p deskkit.Principal, in channel.Input) (channel.Added, error)
	Replace(ctx context.Context, p deskkit.Principal, in channel.Input) (channel.Channel, error)
	List(ctx context.Context, p deskkit.Principal, channelType string) ([]channel.Channel, error)
	ListAll(ctx context.Context, p deskkit.Principal) ([]channel.Channel, error)
	Get(ctx context.Context, p deskkit.Principal, id int64) (channel.Channel, error)
	Delete(ctx context.Context, p deskkit.Principal, id int64) error
	Enable(ctx context.Context, p deskkit.Principal, id int64) (channel.Channel, error)
	Disable(ctx context.Context, p deskkit.Principal, id int64) (channel.Channel, error)
	Test(ctx context.Context, p deskkit.Principal, in channel.Input) (channel.TestResult, error)
	RevealSecret(ctx context.Context, p deskkit.Principal, id int64) (channel.SigningSecret, error)
	RotateSecret(ctx context.Context, p deskkit.Principal, id int64, rot channel.SecretRotation) (channel.SigningSecret, error)
	EventTypes() []deskkit.EventType
	Deliveries(ctx context.Context, p deskkit.Principal, channelID int64, f channel.DeliveryFilter, pageNo, pageSize int) (channel.DeliveryPage, error)
	DeliveryCounts(ctx context.Context, p deskkit.Principal, channelID int64, hours int) ([]channel.HourlyDeliveries, error)
	Recover(ctx context.Context, p deskkit.Principal, channelID int64, since time.Time) (int, error)
	Attempts(ctx context.Context, p deskkit.Principal, deliveryID int64) ([]channel.Attempt, error)
	Inspect(ctx context.Context, p deskkit.Principal, deliveryID int64) (channel.DeliveryDetail, error)
	Resend(ctx context.Context, p deskkit.Principal, deliveryID int64) (channel.Delivery, error)
	// DeliveryTotalsAll serves no route: the console's channel list shows
	// every channel's totals with it (the console takes these interfaces
	// too, so that a wrapper reaches its pages as it reaches the API).
	DeliveryTotalsAll(ctx context.Context, p deskkit.Principal, hours int) (map[int64]channel.DeliveryTotals, error)
}

var (
	_ TrashService   = (*trash.Trash)(nil)
	_ VerifyService  = (*verify.Verifier)(nil)
	_ ChannelService = (*channel.ChannelRegistry)(nil)
)

// Mounted reports whether svc is a service: a nil interface and an
// interface holding a nil pointer (a TrashService holding a nil
// *trash.Trash) both mean none, for New and for the console alike.
func Mounted(svc any) bool {
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
