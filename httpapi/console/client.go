package console

import (
	"context"
	"net/http"

	"github.com/deskkit/deskkit/httpapi"
)

// clientKey is the key of a request's client in its context.
type clientKey struct{}

// withClient returns r carrying its client as Config.TrustedProxies tell
// it: ServeHTTP does so once per request.
func (c *Console) withClient(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clientKey{}, c.proxies.Client(r)))
}

// clientOf is r's client, the one helper every limit and cookie of the
// console asks: its address (behind trusted proxies, the one they give)
// and whether it came over https. A request that did not come through
// ServeHTTP is its connection's.
func clientOf(r *http.Request) httpapi.Client {
	if cl, ok := r.Context().Value(clientKey{}).(httpapi.Client); ok {
		return cl
	}
	return httpapi.Proxies{}.Client(r)
}

// secure tells whether r's cookies are Secure, and the session's and the
// flash's named with the __Host- prefix: the client came over TLS, to
// this server or to a trusted proxy that says so.
func secure(r *http.Request) bool {
	return clientOf(r).HTTPS
}

// clientAddress is r's client address as the limits key it: the address,
// or the connection's RemoteAddr as it is when that holds none (a Unix
// socket).
func clientAddress(r *http.Request) string {
	if a := clientOf(r).Addr; a.IsValid() {
		return a.String()
	}
	return r.RemoteAddr
}
