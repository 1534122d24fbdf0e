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
// from a Config naming the database of its sessions and the very services
// the API mounts (httpapi.TrashService, VerifyService, ChannelService, a
// host's wrappers included; a nil one hides its pages). Every page calls
// those services with the session's deskkit.Principal, so the console shows
// and does exactly what the API would for that principal: the services' own
// authorization (admins, project managers, tenants) applies unchanged, and
// an error shows the status, message and eKey the API answers
// (httpapi.ProblemOf), with a line of the console's own where the status
// calls for one (sign in again; a limit's wait).
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
// console's own site; the post deletes the row by a statement that fails
// if another request deleted it first, so a link opens one session, on any
// replica, and only within Config.PortalLinkTTL (2 minutes by default). A
// forged, altered (its base64 spelled otherwise included), used or expired
// link is a 401 page.
//
// The session acts for the link's user within its scopes: pages and forms
// of other scopes answer 403 and are absent from the navigation, and the
// API reference is not offered. Redemption checks the signature and expiry
// first, asking no database: a forged, altered or used link costs only its
// sender's address (a limit of its own), never the budget of valid links,
// which are limited per user (tenant and user). Then the host is asked
// (Principals, Allow) and the limits, and only then is the link used up,
// in the limits' transaction: a refusal leaves it valid.
//
// # Who a session acts for
//
// Config.Principals (PrincipalResolver, required) tells who a user is now;
// it is asked when a session opens and on every request of every session,
// which acts with its answer: a user demoted since the link was minted or
// the session opened acts as a non-admin at once, and a user the host no
// longer has ends the session. The admin flag is the link's or token's and
// the host's together: a link minted for a non-admin never opens an
// admin's session. Config.Allow, optional, is then asked whether that
// principal may still use the console (the host's own session signed out).
// A refusal of either ends the session (its row deleted, the person sent
// to a page saying so); deskkit.ErrUnavailable shows "try again".
//
// # Token sign-in
//
// With Config.Authenticator (the API's, with AuthenticateHash) a person
// can also sign in by pasting a bearer token, or through a one-time link
// made by CreateLink (the reference server's `token -console`). Such a
// session opens every page and looks its token up again on every request:
// a revoked or expired token ends it. The sign-in page shows
// Config.TokenCommand and LinkCommand; without an Authenticator it only
// says to come back through the host.
//
// # Sessions
//
// A session is a row of the console's table: the SHA-256 of a random
// 256-bit id (the cookie holds the id; the database only its hash), the
// principal, its scopes, and 12 hours of life from sign-in
// (Config.SessionTTL). The cookie is HttpOnly and SameSite=Strict; it is
// Secure, and named with the __Host- prefix, when the client came over
// https: TLS to this server, or a proxy of Config.TrustedProxies saying so
// (Forwarded proto=https, X-Forwarded-Proto). Signing out deletes the row.
// The console never holds authority of its own.
//
// # Forms, cross-site requests and limits
//
// Every form that changes something carries the session's CSRF token, an
// HMAC-SHA256 of a fixed label under the session id, compared in constant
// time. Independently, http.CrossOriginProtection refuses unsafe requests
// a browser marks as cross-site, sign-in and portal links included.
//
// Sign-in limits, in the database so they hold across replicas
// (Config.SignIn*): valid sign-ins per user, invalid tokens and links per
// client address (checked before the next is looked up), sessions per
// tenant. No number of invalid attempts refuses another's valid one.
// The client address is the connection's or, from a peer listed in
// Config.TrustedProxies, the one its Forwarded or X-Forwarded-For gives
// (httpapi.Proxies); any other peer's headers are never read.
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
//   - Trash: search a project's trash by name, type and deletion date,
//     sorted and paged; restore or clear an entry, or a whole project's
//     trash after a confirmation stating the count.
//   - Channels (admins): every channel with its state and last day's
//     deliveries; add (a webhook's custom headers as name/value rows, its
//     own and three blank), replace, test, enable, disable, delete; per
//     channel its deliveries by status, event type and time (in the
//     reader's zone), a 24-hour chart (SVG, a table as its text) and
//     "recover failures since"; per delivery its attempts and a resend.
//   - Profile: edit it; change the e-mail address or mobile number as a
//     guided flow in the API's order, with the limits' messages.
//   - API reference: Redoc of Config.OpenAPIURL; Config.NoDocs turns it off.
//
// # Languages
//
// Every page comes in English and Simplified Chinese, written in the
// reader's language, chosen as the API chooses (httpapi.Languages): the one
// switched to in every page's footer (the query parameter LanguageParam,
// "?lang=zh-CN", kept in the cookie LanguageCookie), then the request's
// Accept-Language, then the session's user's preferred locale and its
// tenant's default locale, then Config.DefaultLanguage ("en" if empty). The
// locales come from the host's LocaleResolver (Config.Locales, or
// Config.Authenticator or Config.Names implementing it), asked only when
// the request names no language the pages have; a lookup that fails fails
// the page as it fails an API request (a 503 to retry for an outage). Pages
// carry <html lang="en"> or lang="zh-CN"; dates keep their format
// ("2026-11-24 09:00 UTC"), and machine words (channel and event types,
// delivery statuses, bizKeys, field names) stay as the API writes them.
// Texts that come from stored data (a channel's disabled reason, names) are
// shown as stored.
//
// The console's texts are keyed by their English text, as deskkit's
// messages are, and their Simplified Chinese is the console's own
// catalogue, embedded; the package's tests fail when a text of a template,
// of the Go code or of a script lacks its translation, or when the
// catalogue holds one no page writes. A host adds a language or rewords a
// text with catalogues of its own (Config.Messages says how).
//
// # Errors
//
// New returns an error naming the Config field and the rule it breaks, and
// one naming the missing table and Migrate when the database lacks the
// console's tables (one query of the catalogue, within 5 s). PortalLink
// returns ErrNoSecret without Config.Secret, an error wrapping
// deskkit.ErrInvalid for a principal without tenant or user, no scope or a
// scope whose pages are not served, and a database error otherwise.
//
// # Storage
//
// Migrate creates the console's tables (sessions, one-time links, portal
// links, sign-in limits: deskkit_console_*) on SQLite and PostgreSQL under
// its own migrations table (deskkit_console_migrations). Times are Unix
// milliseconds. Expired sessions and links are deleted at each sign-in.
//
// # Testing
//
// The package's tests drive the handler over httptest on SQLite and
// PostgreSQL (demotions, forged links, spoofed proxy headers); the
// reference server's and the embedding example's drive it in headless
// Chromium through chromedp, portal links included.
package console
