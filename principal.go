package deskkit

import "context"

// Principal is the identity every service method acts for. The host's
// authentication resolves it (for HTTP, through httpapi.Authenticator); the
// services never look anywhere else for who is calling.
//
// TenantID scopes every query: rows of another tenant behave exactly as if
// they did not exist. Admin lets the principal manage whole projects of its
// own tenant; it grants nothing across tenants.
type Principal struct {
	UserID   int64 `json:"userId"`
	TenantID int64 `json:"tenantId"`
	Admin    bool  `json:"admin"`
}

// Valid reports whether p names a user of a tenant. Services answer
// ErrUnauthenticated for a principal that is not valid, so that a host which
// forgets to authenticate fails closed.
func (p Principal) Valid() bool {
	return p.UserID > 0 && p.TenantID > 0
}

// LocaleResolver is what a host's directory may implement to say which
// languages a principal reads: the user's preferred locale and the default
// locale of the user's tenant, each a BCP 47 tag ("zh-CN", "en") or "" for
// none. The HTTP API asks it after authentication (httpapi's Authenticator
// may implement it) and the console may too, and Messages.Match picks the
// language from the request's Accept-Language, then the user's locale, then
// the tenant's, then the server's default. An error is answered as the
// Authenticator's would be: one wrapping ErrUnavailable is an outage.
type LocaleResolver interface {
	Locales(ctx context.Context, p Principal) (user, tenant string, err error)
}
