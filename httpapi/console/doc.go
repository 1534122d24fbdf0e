// Package console is deskkit's web console, which a host application mounts
// next to its own routes and opens for its users: the trash, the event
// channels and the profile as pages rendered on the server with
// html/template, made livelier by htmx 2 (vendored, embedded, served from
// the console's own origin), usable at 360 px and 1440 px wide and without
// JavaScript; and an API reference rendering the OpenAPI document with
// Redoc.
//
// # Overview
//
// New builds a Console, an http.Handler for the paths Handles names
// (Config.BasePath, "/console/" by default, and Config.DocsPath, "/docs"),
// from a Config naming the database of its sessions and the very service
// objects the API mounts (*trash.Trash, *verify.Verifier,
// *channel.ChannelRegistry; a nil one hides its pages). Every page calls
// those services with the session's deskkit.Principal, so the console shows
// and does exactly what the API would for that principal: the services' own
// authorization (admins, project managers, tenants) applies unchanged, and
// their errors are shown as sentences (403 "You are not allowed to do
// this", 404 "Not found", 429 with the wait) rather than envelopes. Migrate
// creates the console's tables.
//
// A host hands the console its paths as they came, before any router that
// cleans paths (an http.ServeMux would redirect /console/../api/v1/x rather
// than refuse it):
//
//	if con.Handles(r.URL.Path) {
//		con.ServeHTTP(w, r)
//		return
//	}
//
// # Portal links
//
// A host with its own authentication opens the console for its signed-in
// user through a portal link: its server calls PortalLink with the user's
// principal (tenant, user, admin flag) and the scopes the link opens
// (ScopeTrash, ScopeChannels, ScopeProfile, one or several), and sends the
// browser to the path it returns; this is how a host's "Trash" or "Manage
// webhooks" button opens deskkit's page. The link carries a random nonce
// and its expiry, signed with HMAC-SHA256 under Config.Secret; the nonce's
// SHA-256, the principal and the scopes are a row of the console's table.
// Following the link shows a page that posts it (at once by script, or by
// the person's click), so that a mail scanner's or a preview's fetch does
// not use it up and the session cookie is set by a request of the
// console's own site; the post deletes the row in the statement that reads
// it, so a link opens one session, on any replica, and only within
// Config.PortalLinkTTL (2 minutes by default). A forged, altered, used or
// expired link is a 401 page.
//
// The session acts for the link's principal within its scopes: pages and
// forms of other scopes answer 403 and are absent from the navigation,
// and the API reference is not offered. Config.Allow, the host's answer to
// "may this principal still use the console?", is asked before a session
// opens and on every request of every session: an error ends the session
// (its row is deleted and the person is sent to a page saying so), so a
// host that signs its user out or withdraws access ends the console's
// session at the next click. An error wrapping deskkit.ErrUnavailable is
// shown as "try again" and keeps the session.
//
// # Token sign-in
//
// With Config.Authenticator (the API's, with AuthenticateHash) a person
// can also sign in by pasting a bearer token, or through a one-time link
// made by CreateLink (the reference server's `token -console`). Such a
// session opens every page, keeps the hash of the token it signed in with,
// and looks the token up again on every request: it acts with the token's
// principal as it is now (an admin flag taken away is gone at once), and a
// revoked or expired token ends it. The sign-in page shows
// Config.TokenCommand and Config.LinkCommand, the commands that issue a
// token or a link. Without an Authenticator the sign-in page only says to
// come back through the host.
//
// # Sessions
//
// A session is a row of the console's table: the SHA-256 of a random
// 256-bit id (the cookie holds the id; the database only its hash), the
// principal, its scopes, and 12 hours of life from sign-in
// (Config.SessionTTL). The cookie is HttpOnly and SameSite=Strict, Secure
// when the request came over TLS and then named with the __Host- prefix.
// Signing out deletes the row. The console never holds authority of its
// own: a session acts only as the token or the host allows.
//
// # Forms and cross-site requests
//
// Every form that changes something carries the session's CSRF token, an
// HMAC-SHA256 of a fixed label under the session id (nothing stored),
// compared in constant time before the handler runs. Independently,
// http.CrossOriginProtection refuses unsafe requests that a browser marks
// as cross-site (Sec-Fetch-Site, or an Origin that is not the Host),
// sign-in and portal links included.
//
// Sign-in attempts (tokens, one-time links, portal links) are limited in
// the database, so that the limits hold across replicas: per client address
// (the connection's; no X-Forwarded-For is trusted), for all clients
// together, and sessions opened per tenant per window (Config.SignIn*).
//
// # Theming and framing
//
// Config.ProductName, LogoURL and AccentColor set the header, the titles
// and the colour of links and buttons; BasePath and DocsPath place the
// pages. Every answer carries a Content-Security-Policy that allows script
// only from the console's origin (no inline or eval'd script; inline
// styles are allowed, which Redoc and the accent colour need), images from
// the console's origin and the logo's, Referrer-Policy: no-referrer (a
// link's secret never leaves in a Referer) and X-Content-Type-Options:
// nosniff. Framing is refused (frame-ancestors 'none', X-Frame-Options:
// DENY) unless Config.FrameAncestors lists origins, which alone may then
// frame the pages (X-Frame-Options, which cannot list several origins, is
// then left out). A frame of another site gets no SameSite=Strict cookie:
// frame the console from pages of the same site (app.example.com and
// desk.example.com).
//
// Pages are Cache-Control: no-store; static files are served under a path
// carrying a hash of their content, cached for a year. Paths are served as
// written: an unclean path (//, . or .. segments, escapes) is a 404 page,
// never a redirect.
//
// # Names
//
// The header shows the user's and the tenant's names from Config.Names,
// asked once when a session opens and kept with it (a rename shows at the
// next sign-in; a page pays no lookup), and the trash shows projects by the
// names Config.Projects gives, asked once per page for all the projects on
// it; without them, or for what they do not know, ids.
//
// # Pages
//
//   - Trash: pick a project, search by name, type and deletion date, sort
//     and page; restore or clear an entry, or a project's whole trash,
//     after a confirmation page that states the count.
//   - Channels (admins): every channel with its type, state, subscriptions
//     and the last day's deliveries (two service calls whatever the number
//     of channels); add (the type first, then only its fields) and replace
//     with the events filter from the registry's catalogue; test with the
//     far end's answer; the webhook secret once, with a copy button;
//     enable, disable and delete (through a confirmation). Per channel its
//     deliveries with a status filter, a chart of deliveries per hour over
//     24 hours (SVG drawn on the server, with a table as its text
//     alternative) and "recover failures since"; per delivery its attempts
//     and a resend.
//   - Profile: edit the profile (a save is one service call); change the
//     e-mail address or mobile number as a guided flow in the API's order,
//     with the limits' messages, the wait counted down, and the attempts
//     left.
//   - API reference: the served OpenAPI document (Config.OpenAPIURL)
//     rendered by Redoc; Config.NoDocs turns it off.
//
// # Languages
//
// Every page comes in English and Simplified Chinese, written in the
// reader's language: the one chosen with the switch in every page's footer
// (the query parameter LanguageParam, "?lang=zh-CN", kept in the cookie
// LanguageCookie), then the request's Accept-Language, then the session's
// user's preferred locale and its tenant's default locale, then
// Config.DefaultLanguage ("en" if empty). zh, zh-CN, zh-Hans and zh-Hans-CN
// all mean Simplified Chinese (deskkit.Messages.Match). The locales come
// from an optional hook of the host, LocaleResolver: Config.Locales, or
// else Config.Authenticator or Config.Names when it has the method
// Locales(ctx, principal) (user, tenant string, err error), the same as the
// host directory's locale hook for the API, so that one directory serves
// both. Pages carry <html lang="en"> or lang="zh-CN". The services' errors
// shown on a page are their deskkit.LocalizedMessager message in the
// page's language; dates keep their format ("2026-11-24 09:00 UTC"), and
// machine words (channel and event types, delivery statuses, bizKeys, field
// names) stay as the API writes them. Texts that come from stored data
// (a channel's disabled reason, names) are shown as stored.
//
// The console's texts are keyed by their English text, as deskkit's
// messages are, and their Simplified Chinese is the console's own
// catalogue, embedded; the package's tests fail when a text of a template,
// of the Go code or of a script lacks its translation, or when the
// catalogue holds one no page writes. A host adds a language or rewords a
// console text with catalogues of its own, given to deskkit.NewMessages and
// handed to the console as Config.Messages (the same Messages the API
// takes): each catalogue's *.json files, named by a language tag, map
// English texts to their translation.
//
//	//go:embed messages/*.json
//	var catalogues embed.FS // messages/ja.json, messages/zh-Hans.json, messages/en.json
//
//	m, err := deskkit.NewMessages(catalogues)
//	con, err := console.New(&console.Config{DB: db, Messages: m /* ... */})
//
// The host's texts come first; a text it does not translate is the
// console's own translation, or English. For example zh-Hans.json holding
// {"Trash": "废纸篓"} renames the trash in Chinese, and en.json holding
// {"Trash": "Recycle bin"} in English.
//
// # Errors
//
// New returns an error naming the Config field and the rule it breaks.
// PortalLink returns ErrNoSecret without Config.Secret, an error wrapping
// deskkit.ErrInvalid for a principal without tenant or user, no scope or a
// scope whose pages are not served, and a database error otherwise.
//
// # Storage
//
// Migrate creates the console's tables (sessions, one-time links, portal
// links, sign-in limits: deskkit_console_*) on SQLite and PostgreSQL under
// its own migrations table (deskkit_console_migrations). Times are Unix
// milliseconds, which compare alike on both databases. Expired sessions
// and links are deleted at each sign-in.
//
// # Testing
//
// The package's tests drive the handler over httptest on SQLite and
// PostgreSQL; the reference server's and the embedding example's tests
// drive it in headless Chromium through chromedp, portal links included
// (tenant isolation with forged ids, scopes, single use, expiry, framing,
// Allow ending a session).
package console
