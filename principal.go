package deskkit

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
