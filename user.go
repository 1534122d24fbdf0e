package deskkit

// UserInfo is how a user is shown beside something they did: the name to
// display and the address of their avatar image (perhaps empty). Services
// that show users (a trash entry's deleter, a channel's owner) take it from
// a resolver hook the host implements, in this one shape.
type UserInfo struct {
	Name   string `json:"name"`
	Avatar string `json:"avatar"`
}
