// Package console is the reference server's web console (/console/) and API
// reference (/docs): pages rendered on the server with html/template, made
// livelier by htmx 2 (vendored, embedded, served from the console's own
// origin), usable at 360 px and 1440 px wide and without JavaScript.
//
// # Overview
//
// New builds a Console, an http.Handler for the paths Handles names, from a
// Config naming the database of its sessions, the API's Authenticator and
// the very service objects the API mounts (*trash.Trash, *verify.Verifier,
// *channel.ChannelRegistry). Every page calls those services with the
// session's deskkit.Principal, so the console shows and does exactly what
// the API would for the same token: the services' own authorization
// (admins, project managers, tenants) applies unchanged, and their errors
// are shown as sentences (403 "You are not allowed to do this", 404 "Not
// found", 429 with the wait) rather than envelopes.
//
// Each page group lives in a file of its own (trash.go, docs.go, ...) and
// registers its routes from routes in console.go: c.page for signed-in pages
// (a pageFunc gets the live *consoleSession), c.mux.HandleFunc for public ones.
// Templates are templates/NAME.html, each parsed with templates/layout.html;
// c.render(w, r, s, status, "NAME", data) writes one. Behaviour lives in
// static files (console.js, profile.js): the Content-Security-Policy allows
// no inline script, and htmx does not run scripts it swaps in.
//
// # Pages
//
//   - Trash (trash.go): pick a project, search by name, type and deletion
//     date, sort and page; restore or clear an entry, or a project's whole
//     trash, after a confirmation page that states the count.
//   - Channels (channels.go, admins): every channel with its type, state,
//     subscriptions and the last day's deliveries; add and replace with the
//     events filter from the registry's catalogue; test with the far end's
//     answer; the webhook secret once, with a copy button; enable, disable
//     and delete (through a confirmation). Per channel its deliveries with a
//     status filter, a chart of deliveries per hour by result over 24 hours
//     (SVG drawn on the server, with a table as its text alternative) and
//     "recover failures since"; per delivery its attempts (status code,
//     duration, the reply's first KiB) and a resend. The list asks
//     DeliveryCounts once per channel (at most 45 channels a tenant).
//     Management is hidden from non-admins, and what they open by URL is
//     refused by the registry, as the API refuses it.
//   - Profile (profile.go): edit the profile; change the e-mail address or
//     mobile number as a guided flow in the API's order (a code to the
//     current address, its check, a code to the new one, the change; the
//     bind flow for a user without one), with the limits' messages, the wait
//     counted down by profile.js from a data- attribute, and the attempts
//     left. The flow's link secret travels in a hidden field of the next
//     step's form (pages are no-store; the secret is single use for 10
//     minutes), and the flow's forms are not boosted by htmx, so that each
//     step is a whole page.
//   - API reference (docs.go): /docs renders the served OpenAPI document
//     with Redoc.
//
// # Sessions and authority
//
// A person signs in by pasting a bearer token, which the API's Authenticator
// checks, or through a one-time link that `server token -console` prints.
// The session is a row of deskkit_console_sessions: the SHA-256 of a random
// 256-bit id (the cookie holds the id; the database only its hash), the
// tenant and user, 12 hours of life from sign-in (Config.SessionTTL), and
// the hash of the bearer token it signed in with. Each request looks the
// token up again by that hash (Authenticator.AuthenticateHash), so the
// session acts with the token's principal as it is now (an admin flag taken
// away is gone from the console at once) and a revoked or expired token
// ends the session: its row is deleted and the person is sent to sign in.
// The console never holds authority of its own.
//
// The cookie is HttpOnly and SameSite=Strict, Secure when the request came
// over TLS and then named with the __Host- prefix. Signing out deletes the
// session's row.
//
// # One-time links
//
// CreateLink stores the SHA-256 of a random code beside the token's hash,
// valid for 10 minutes (DefaultLinkTTL). The link's GET only shows a page
// (so a mail scanner's fetch does not use it up); that page POSTs the code,
// at once through console.js or by the person's click. Because the POST
// starts within the site, the SameSite=Strict cookie it sets goes with the
// redirect that follows; a redirect chain started by a link elsewhere would
// go without it. The POST deletes the link in the statement that reads it,
// so a link opens one session. `token -console` issues a token for the link
// that is never shown and expires when the longest session could end
// (10 minutes + 12 hours) unless -ttl says otherwise.
//
// # Forms and cross-site requests
//
// Every form that changes something carries the session's CSRF token, an
// HMAC-SHA256 of a fixed label under the session id (nothing stored; the
// database cannot tell it), compared in constant time before the handler
// runs. Independently, http.CrossOriginProtection refuses unsafe requests
// that a browser marks as cross-site (Sec-Fetch-Site, or an Origin that is
// not the Host), sign-in included.
//
// Sign-in attempts (tokens and links) are limited in the database
// (deskkit_console_limits, internal/limiter's shape), so the limits hold
// across replicas: per client address (the connection's; the reference
// server trusts no X-Forwarded-For), for all clients together, and, once a
// token names its tenant, the sessions a tenant may open per window.
//
// # Headers
//
// Every answer of the console and of /docs carries a Content-Security-Policy
// that allows script only from the console's origin (no inline or eval'd
// script; inline styles are allowed, which Redoc needs), X-Frame-Options:
// DENY, Referrer-Policy: no-referrer (the one-time link's code never leaves
// in a Referer) and X-Content-Type-Options: nosniff. htmx is configured
// (the htmx-config meta tag) not to eval, not to run scripts it swaps in and
// not to keep pages in localStorage. Pages are Cache-Control: no-store;
// static files are served under a path carrying a hash of their content,
// cached for a year.
//
// Paths are served as written: an unclean path (//, . or .. segments,
// escapes) is a 404 page, never the redirect to its cleaned form that an
// http.ServeMux would answer, which could lead out of the console into the
// API.
//
// # Storage
//
// Migrate creates the console's three tables (deskkit_console_sessions,
// deskkit_console_links, deskkit_console_limits) on SQLite and PostgreSQL
// from migrations/, under its own migrations table
// (deskkit_console_migrations), so that the console's schema moves with the
// console and its tests can create it without the rest of the server. Times
// are Unix milliseconds, which compare alike on both databases. Expired
// sessions, links and limit windows are deleted at each sign-in.
//
// # Rendering cost
//
// Pages are rendered from templates, but the trash's result rows are
// written in Go (trashRowsHTML, every value escaped): pipelines cost a
// reflective call per value and per escaper, and a page of rows rendered
// that way took 1.6 times the API search under it. Now the page takes 1.0
// to 1.3 times the API call (BenchmarkConsoleTrashPage* in the server's
// tests: the same project and page, SQLite and PostgreSQL).
//
// # Testing
//
// console_test.go drives the handler over httptest on SQLite and
// PostgreSQL. The reference server's console_browser_test.go drives the real
// server in headless Chromium through chromedp; without a browser those
// tests skip, and DESKKIT_REQUIRE_BROWSER=1 (CI) makes that a failure.
package console
