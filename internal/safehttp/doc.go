// Package safehttp is the outbound HTTP client for user-given URLs
// (webhooks, chat robots): it refuses to reach the server's own network,
// so a tenant cannot use a channel to probe or call internal services
// (server-side request forgery).
//
// # Overview
//
// The guard sits at dial time, not at URL-validation time. The client's
// dialer resolves the host itself, checks every address the resolver
// returned, dials only allowed ones, and checks again in the socket's
// Control hook just before connect. What was checked is therefore exactly
// what is connected to: a name that resolves to a public address when the
// URL is saved and to 127.0.0.1 when the message is sent (DNS rebinding)
// is refused at send time, and so is a name with one public and one
// private address (the private one is never dialled). CheckHost offers the
// part of the decision that needs no lookup, for validating URLs when they
// are saved; it is a convenience, not the guard.
//
// Blocked, always:
//
//   - every IPv4 prefix of the IANA special-purpose registry and the other
//     ranges of code.dny.dev/ssrf (this network 0/8, RFC 1918, CGNAT
//     100.64/10, loopback, link-local 169.254/16, documentation,
//     benchmarking, multicast, reserved 240/4...);
//   - every IPv6 address outside global unicast 2000::/3 (loopback ::1,
//     unique local fc00::/7, link-local fe80::/10, multicast, NAT64
//     64:ff9b::/96, IPv4-compatible ::/96) and the special-purpose prefixes
//     inside it (Teredo and 2001::/23, 6to4 2002::/16, documentation);
//   - cloud metadata endpoints, even with AllowPrivateNetworks: they hand
//     out the machine's credentials. 169.254.169.254 (AWS, GCP, Azure, OCI
//     and most others), AWS's 169.254.169.253, 169.254.169.123,
//     169.254.170.2 (ECS), 169.254.170.23 (EKS) and their fd00:ec2:: IPv6
//     twins, Tencent's 169.254.0.23, Azure's WireServer 168.63.129.16 (a
//     public address the ssrf list lets through), Alibaba's
//     100.100.100.200 and Oracle's 192.0.0.192. Link-local 169.254/16 and
//     fe80::/10 as a whole stay blocked too.
//
// An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is decided as its IPv4
// address and a zone is ignored, so every spelling of an address gets the
// same answer. IPv4 literals are read the way inet_aton reads them
// ("127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1") and are never handed
// to a resolver, which might send them to the network as names; a host
// whose last label is a number but that is no valid IPv4 address
// ("1.2.3.4.5") is refused. "localhost" and names under ".localhost" are
// loopback (RFC 6761) and never resolved.
//
// Config.AllowPrivateNetworks opens loopback, RFC 1918, CGNAT and unique
// local addresses for development and tests (the reference server's
// DESKKIT_CHANNEL_ALLOW_PRIVATE_NETWORKS); metadata and link-local stay
// closed.
//
// Any port is allowed: webhook receivers listen on 8443 and the like, and
// the address is what matters. Only TCP is dialled.
//
// Other limits: no proxy is ever used (a proxy from the environment would
// make the guard check the proxy, not the target); redirects are not
// followed (a 3xx is returned as the Reply, Location in its Header); one
// Do is bounded by Config.Timeout (10 s by default) from the dial to the
// last byte read, which covers a server that never answers and one that
// sends headers and then stalls; at most Config.MaxReplyBytes (64 KiB by
// default) of the body is read, the rest is not read at all, and reply
// headers are limited to 64 KiB.
//
// # Errors
//
// Do returns a *BlockedError (errors.Is(err, ErrBlocked)) when the guard
// refused every address of the host: no packet was sent to it. A timeout
// wraps context.DeadlineExceeded, whether Config.Timeout or the request's
// own deadline ran out. A URL that is not absolute http or https is a
// *deskkit.InputError for field "url". Error texts name the URL's scheme
// and host alone: robot URLs carry their key in the query, and many webhook
// URLs a token in the path.
//
// # Testing
//
// The tests never send a packet off the machine: decisions about public
// addresses are taken by CheckAddr alone, names resolve through a fake
// Resolver, and every dial goes to an httptest server on loopback with
// AllowPrivateNetworks set.
package safehttp
