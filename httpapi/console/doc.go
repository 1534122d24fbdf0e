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
// One browser holds one session, and it holds every scope the links opened
// in it for the same principal (tenant, user and admin flag): a host's
// Trash button then its Webhooks button leave both pages open. Each link
// opens a session with a new id holding the old one's scopes and its own;
// a link for anyone else, or a token sign-in, replaces the session and
// keeps nothing of it. (Two links redeemed at the same instant in one
// browser may leave it one of the two sessions: follow the button again.)
//
// PortalLinkFor takes a PortalRequest with a ReturnURL, the host's page to
// go back to: it must be an http(s) URL whose origin is exactly (scheme,
// host, port) one of Config.HostOrigins, or the link is refused with an
// error naming returnUrl (we refuse rather than drop it, so that a host's
// mistake shows at once). It is signed into the link and kept with the
// session, and shown as "Back to <Config.ProductName>" in the header and on
// the pages of an ended session and of an expired or used link; a portal
// session that ends is such a page, never the token sign-in.
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
// session opens every page and checks its token on every request; the
// sign-in page shows Config.TokenCommand and LinkCommand.
//
// # Sessions
//
// A session is a row: the SHA-256 of a random 256-bit id (the cookie holds
// the id), the principal, its scopes, and Config.SessionTTL (12 hours) of
// life. The cookie is HttpOnly and SameSite=Strict; Secure, and named
// __Host-, when the client came over https (TLS, or a proxy of
// Config.TrustedProxies saying so). Signing out deletes the row.
//
// # Forms, cross-site requests and limits
//
// Every form that changes something carries the session's CSRF token, an
// HMAC-SHA256 of a fixed label under the session id, compared in constant
// time. Independently, http.CrossOriginProtection refuses unsafe requests
// a browser marks as cross-site, sign-in and portal links included.
//
// Sign-in limits (Config.SignIn*, in the database): valid sign-ins per
// user, invalid tokens and links per client address, sessions per tenant;
// no number of invalid attempts refuses another's valid one. The address
// is the connection's, or behind Config.TrustedProxies the one they give.
//
// # Theming and framing
//
// Config.ProductName, LogoURL and AccentColor set the header, titles and
// colours; BasePath and DocsPath place the pages. Every answer carries a Content-Security-Policy that allows script
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
// Pages are Cache-Control: no-store; static files, under a path carrying
// their hash, are cached a year. An unclean path is a 404, never a
// redirect.
//
// # Names
//
// The header shows "User: …", "Tenant: …" and the role, by the names
// Config.Names gives, asked once when a session opens and kept with it.
// The trash shows projects (its picker included) and the sprints of tasks
// by the names Config.Projects and Config.Sprints give, asked once per page
// for all of them; without them, or for what they do not know, ids.
//
// # Pages
//
//   - Trash: search a project's trash by name, type and deletion date,
//     sorted and paged; restore or clear an entry, or a whole project's
//     trash after a confirmation stating the count. With a trash service
//     that can tell (Config.Trash), only the actions the reader may take
//     are offered, by the rule the actions enforce (trash.Trash.Allowed,
//     ProjectRights); one that would do nothing is a notice, not a success.
//   - Channels (admins): every channel with its state and last day's
//     deliveries; add (a webhook's custom headers as name/value rows, its
//     own and three blank), replace, test, enable, disable, delete; per
//     channel its deliveries by status, event type and time (in the
//     reader's zone), a 24-hour chart (SVG, a table as its text) and
//     "recover failures since"; a test's reply; per delivery the event as
//     sent and each attempt's request beside its answer, secrets and
//     signatures masked, with a way back to its channel, and a resend.
//   - Profile: edit it; change the e-mail address or mobile number as a
//     guided flow in the API's order, with the limits' messages.
//   - API reference: Redoc of Config.OpenAPIURL; Config.NoDocs turns it off.
//
// # Languages
//
// Every page comes in English and Simplified Chinese, written in the
// reader's language, chosen as the API chooses (httpapi.Languages): the one
// switched to in the footer (LanguageParam, kept in LanguageCookie), then
// Accept-Language, then the user's and the tenant's locales (the host's
// LocaleResolver: Config.Locales, or Config.Authenticator or Config.Names
// implementing it; a lookup that fails fails the page as an API request),
// then Config.DefaultLanguage ("en" if empty). Stored texts (names, a
// channel's disabled reason) are shown as stored. Times read and show in
// the reader's time zone with its offset ("17:00 UTC+8"), named in the
// footer: see ZoneResolver and ZoneParam (a host without the system's zone
// database imports time/tzdata).
//
// Texts are keyed by their English text; their Simplified Chinese is the
// console's embedded catalogue, which tests keep complete and punctuated
// by the catalogue alone. A host adds a language or rewords a text with
// catalogues of its own (Config.Messages says how).
//
// # Errors
//
// New returns an error naming the Config field and the rule it breaks, and
// one naming the missing table and Migrate when the database lacks the
// console's tables (one query of the catalogue, within 5 s). PortalLink
// returns ErrNoSecret without Config.Secret, an error wrapping
// deskkit.ErrInvalid for a principal without tenant or user, no scope, a
// scope not served or a ReturnURL off Config.HostOrigins, and a database
// error otherwise.
//
// # Storage and tests
//
// Migrate creates the console's tables (deskkit_console_*) on SQLite and
// PostgreSQL; expired rows are deleted at each sign-in. Tests drive the
// handler on both databases, and in Chromium through the reference server.
package console
