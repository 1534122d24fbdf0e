// Package httpapi serves deskkit's services over HTTP, every route under
// /api/v1.
//
// # Overview
//
// New builds a Server (an http.Handler) from a Config naming the services to
// mount and an Authenticator that turns a bearer token into a
// deskkit.Principal. Serve it alone, or beside the host's routes through
// Server.Wrap; it answers every path it is given. Every answer is an
// envelope (package envelope). The OpenAPI 3 document of the API is
// generated when New runs and served without authentication at GET
// /api/v1/openapi.json (see "The OpenAPI document").
//
// The package's Example mounts the trash and shows an answer, an unknown
// parameter, a wrong method and a missing token; ExampleServer_Handle adds
// a route of the host's own. The operations, with what each takes and
// answers and the rules of verification, channels, names and the trash
// as a client meets them, are listed in the served document and in the
// reference server's manual (examples/server/README.md, "The API").
//
// The services are taken as one interface each, exactly the methods the
// routes call: TrashService, VerifyService and ChannelService.
// *trash.Trash, *verify.Verifier and *channel.ChannelRegistry implement
// them, and a host may mount a wrapper (metrics, audit) or a fake
// instead, embedding the interface for what it does not override. A nil
// service, or a nil pointer in a service field, mounts nothing.
//
// # Routes as data
//
// Each service's routes are one typed list of operations: the
// operationId, the method, a path template under /api/v1 with {name}
// path parameters, the handler, and its request and answer types. The
// request is a struct whose tags say where each field comes from (a path
// or query parameter, or the JSON body, read by DecodeJSON) and, with
// jsonschema-go's tags (description, example, enum, minimum, maxLength,
// required...), what the OpenAPI document says of it. Routing, the Allow
// header, the unknown-parameter check, decoding, validation and the
// document all derive from these lists.
//
// The router is github.com/julienschmidt/httprouter. httprouter v1.3.0
// panics when a static segment and a wildcard share a position in one
// method's tree (PATCH /task/trash/back beside PATCH
// /task/trash/{id}/back); there, and only there, the wildcard is
// registered and its handler picks the operation whose template the path
// matches. A panic in a handler is logged with its stack and answered 500
// internal_error.
//
// Host routes: Handle mounts an Endpoint (path parameters through
// r.PathValue) with the same authentication, deadline, body limit,
// envelope, error table and unknown-parameter check as deskkit's routes;
// it takes the names of the query parameters the route accepts (none if
// none are given). Host routes are not in the OpenAPI document, which
// describes deskkit's operations only; Routes lists deskkit's routes and
// HostRoutes the host's. Handle may be called while the server serves:
// it builds a new router from all the routes and swaps it in whole, so a
// request is routed either before or after, never half-way; a Handle that
// panics (a template mounted twice, one httprouter cannot hold) mounts
// nothing.
//
// # Paths, methods and parameters
//
// A static segment of a template shadows a wildcard at the same position
// whatever the method, so
// /task/trash/search is the search and nothing else (DELETE there is 405,
// not a clear of an entry called "search"). A path no template matches is
// 404 route_not_found; a path served for other methods only is 405
// method_not_allowed with an Allow header, built from the operation lists,
// listing exactly the methods that serve it.
//
// HEAD and OPTIONS are served nowhere, the OpenAPI document included: a
// HEAD of an authenticated search costs a search for nothing, and leaving
// them out keeps Allow true. They are answered 405.
//
// Nothing under /api/v1 ever redirects, and no path is cleaned: empty
// segments (//), "." and ".." (also percent-encoded) and trailing slashes
// name no resource and are answered 404 with an envelope, so DELETE
// /api/v1/task/trash/7/.. can never become a clear-all. A host that embeds
// the API beside its own routes serves Server.Wrap(mux) rather than
// mounting the API on an http.ServeMux, which would redirect such paths to
// their cleaned form before the API sees them.
//
// Requests are routed on the path as the client wrote it, escapes and all
// (URL.EscapedPath), and logged that way: an encoded slash (%2F) in any
// segment is 404 route_not_found, so /api/v1/task%2Ftrash%2F10 is not the
// /api/v1/task/trash/10 a proxy or firewall rule on the path never saw.
// Integer parameters (ids, projectId) have one spelling: decimal digits,
// no sign, no leading zero; +5, 05 and, in a path, %35 are 400 rather than
// 5. Query values are read after URL decoding, so projectId=%35 is 5. The
// integers of filter values and a channel id written as a string in a body
// are spelt the same way; ParseID reads ids so for a host's own routes.
//
// Every route rejects query parameters it does not declare, and
// parameters given twice, with 400: a typo never reaches a destructive
// operation as a no-op (DELETE /task/trash/7?dryRun=true is 400, not a
// clear). Filter indexes are written without leading zeros: filters[00].key
// is 400 rather than a second filters[0].key.
//
// # Errors
//
// One table maps errors to HTTP, read top down, from specific to generic.
// A service's own error, made with deskkit.NewError, also matches its
// class (deskkit.ErrInvalid, ...); it
// gets a key of its own by a row above its class's row, and otherwise
// shares its class's row. The client's message is the error's own when it
// implements deskkit.ClientMessager (input errors name the field and the
// rule), the row's otherwise; Retry-After comes from deskkit.RetryAfterer.
//
//	error                          status code eKey                            headers
//	verify.ErrCodeWrong            400    E1   verification_code_wrong
//	verify.ErrCodeExpired          400    E1   verification_code_expired
//	verify.ErrCodeMissing          400    E1   verification_code_missing
//	verify.ErrCodeExhausted        429    E3   verification_code_exhausted
//	verify.ErrTooManyFailures      429    E3   verification_failures_exceeded  Retry-After
//	verify.ErrSendThrottled        503    E2   verification_send_throttled     Retry-After
//	verify.ErrSendFailed           502    E2   verification_send_failed
//	verify.ErrAddressTaken         409    E1   verification_address_taken
//	verify.ErrAlreadyBound         409    E1   verification_already_bound
//	verify.ErrNotBound             409    E1   verification_not_bound
//	verify.ErrLinkSecret           403    E1   link_secret_invalid
//	channel.ErrNameTaken           409    E1   channel_name_taken
//	channel.ErrQuotaExceeded       409    E3   channel_quota_exceeded
//	channel.ErrChannelDisabled     409    E1   channel_disabled
//	channel.ErrAddressBlocked      400    E1   channel_address_blocked
//	channel.ErrDeliveryFailed      502    E2   channel_test_failed
//	body over MaxBodyBytes         413    E0   request_too_large
//	deskkit.ErrInvalid             400    E0   param_validation_error
//	deskkit.ErrUnauthenticated     401    E0   unauthorized                    WWW-Authenticate: Bearer
//	deskkit.ErrForbidden           403    E1   forbidden
//	deskkit.ErrNotFound            404    E1   resource_not_found
//	deskkit.ErrConflict            409    E1   resource_conflict
//	deskkit.ErrRateLimited         429    E3   too_many_requests               Retry-After
//	outage (see below)             503    E2   service_unavailable             Retry-After
//	no route                       404    E0   route_not_found
//	wrong method                   405    E0   method_not_allowed              Allow
//	anything else, panics          500    E2   internal_error                  (logged; text never sent)
//
// A channel over its quota is 409, not 429: waiting does not help, deleting
// a channel does; it keeps E3, the code of quotas, and has no Retry-After.
// A test message the far end refused (channel.ErrDeliveryFailed, of class
// deskkit.ErrUnavailable) is 502 with what the far end answered, by a row
// above the 503 row its class would match: the fault is at the channel's
// address, for the client to fix, not an outage of the API. The throttle
// of test messages is the ordinary 429 too_many_requests with Retry-After.
//
// The OpenAPI document lists the same table, and each operation's
// responses. Malformed query strings, unknown or repeated parameters,
// malformed JSON, unknown JSON fields, keys given twice in one object (at
// any depth: the last would otherwise win), wrong types, numbers out of
// range, strings that are not UTF-8 or escape half a surrogate pair
// ("\ud800"; encoding/json would store either as U+FFFD) are all 400 with
// a message naming the field. The message says what
// the field must be from its Go type ("toAddress must be an array of arrays
// of addresses"), and a number written with a leading zero (024172, not
// JSON) is named as such, with the advice to write it as a string. A body over
// Config.MaxBodyBytes (1 MiB) is 413 request_too_large, its message naming
// the limit. JSON keys match field names exactly, although
// encoding/json does not: "MOBILE" is not the field mobile, and is answered
// as a key the request does not have.
//
// # Languages
//
// Every answer's msg is written for a person, in the reader's language:
// "Success", each row's message, the services' own messages (errors that
// are deskkit.LocalizedMessagers), the router's 404 and 405, and every
// field-level message of the parameter checks and DecodeJSON. The
// machine-read parts never change with the language: code, ext.eKey, the
// JSON keys, event types, and the field names inside messages. The answer
// names its language in Content-Language ("en", "zh-Hans").
//
// The language is Config.Messages.Match of, in this order: the request's
// Accept-Language (quality values order it; zh, zh-CN, zh-Hans and
// zh-Hans-CN are all Simplified Chinese), the user's preferred locale and
// the tenant's default locale, then Config.DefaultLanguage, then English.
// A choice that names none of Messages' languages is skipped. The
// user's and tenant's locales come from the Authenticator when it also
// implements deskkit.LocaleResolver, asked once per authenticated request
// after Authenticate; its error is answered as any error (one wrapping
// deskkit.ErrUnavailable is a 503). Without it, and for a request whose
// authentication fails (401, which has no principal), only Accept-Language
// and the default remain.
//
// The language is on the context the service is called with
// (deskkit.WithLanguage), so that what it sends for the request (a
// verification code) is written in it too; when nothing names a language
// and DefaultLanguage is empty, the context carries none, and the service
// keeps its own default (verify writes English, and a template SMS
// provider its own DefaultLocale). Config.Messages is
// deskkit.NewMessages() by default, English and Simplified Chinese; a host
// that rewords a message or adds a language passes its own, built from
// catalogues in an fs.FS:
//
//	msgs, err := deskkit.NewMessages(os.DirFS("catalogues")) // ja.json, zh-Hans.json...
//	api, err := httpapi.New(&httpapi.Config{Authenticator: auth, Messages: msgs, DefaultLanguage: "ja"})
//
// The same Messages go to verify.Config.Messages and
// channel.Config.Messages, so that codes and event messages read as the
// answers do. English answers are the messages as the code writes them.
//
// # The OpenAPI document
//
// The document is generated, never written by hand, by
// github.com/swaggest/openapi-go's OpenAPI 3.1 reflector: paths, methods,
// operationIds and parameters from the operation lists and their request
// structs; request and answer schemas from the Go types and their struct
// tags (the services' answer types carry theirs); error statuses,
// envelope codes and headers from the error table, by the keys each
// operation answers besides those every operation answers (400, 401,
// 405, 500, 503, and 413 for a JSON body); summaries, descriptions and
// an example request and answer per operation. Each operation's success
// is an envelope type of its own (TrashPageResult, UserDetailResult...)
// whose data has the operation's schema, so that generated clients
// (oapi-codegen, openapi-typescript) get typed data. The served document
// covers the services New mounted. The committed httpapi/openapi.json
// is the document with every service mounted; a test checks that it
// equals what the code generates (go generate ./httpapi rewrites it), and
// CI lints it with Redocly and vacuum and generates and runs clients from
// it.
//
// The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12: a
// value that may be null has "null" among its types. kin-openapi,
// Redocly, vacuum and Schemathesis read 3.1; Dredd's OpenAPI 3 parser
// reads 3.0 only.
//
// # Deadlines and outages
//
// Every operation's context gets Config.RequestTimeout (10 s by default)
// before authentication, so that no request waits for ever on the
// database pool or a statement. An outage is answered 503
// service_unavailable with Retry-After (Config.RetryAfter, 5 s, unless the
// error is a deskkit.RetryAfterer) and a generic message, never 500: that
// is deskkit.ErrUnavailable, whatever deskkit recognises as an outage
// (the pool or a statement out of time, connections refused or reset, too
// many clients, shutdown, SQLite busy, the request deadline), a
// closed pool, and any error once the request deadline has passed. Nothing
// such a request did was committed; the client may retry.
//
// Outages are logged once per Config.OutageLogInterval (10 s), on the
// clock of Config.Now: the first 503 is logged, the ones that follow within
// the interval are only counted, and the next line says how many
// ("suppressed"). When the outage ends, that is at the first request that
// succeeds after 503s were left out, a line "service available again"
// gives their count at once, rather than with the next outage; so that a
// database that fails and recovers many times a second does not log a line
// each time, that line too comes at most once per interval (a count not
// given yet comes with a later line). A client that went away (its
// context cancelled) is not logged at all.
//
// # Request ids, metrics and traces
//
// Every request gets an id: its X-Request-Id if valid (ValidRequestID: 1
// to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-', what UUIDs,
// trace ids and proxies' ids are made of, and nothing that could forge a
// log line), otherwise a new one, 32 random hex digits (an invalid id is
// replaced, never refused). The answer echoes it in X-Request-Id, every
// error envelope carries it in ext.requestId, and the request's context
// carries it (deskkit.RequestID): every line deskkit logs for the request
// gets it as request_id once the host wraps its slog handler with
// deskkit.LogHandler, as the reference server does. A host that logs
// requests itself wraps its whole handler with RequestIDs, which assigns
// the id outside the host's access log and routes; the Server inside
// keeps the id it finds in the request's context.
//
// Config.MeterProvider and Config.TracerProvider (nil: the global
// providers, which record nothing until the host installs some; nothing
// is registered on a global registry) record, under the scope
// github.com/deskkit/deskkit/httpapi, the histogram
// http.server.request.duration in seconds (OpenTelemetry's name, buckets
// and attributes): http.route, the template of the operation that served
// the request (/api/v1/task/trash/{id}, as Routes writes it; never the
// path, and absent when no route matched, for 404s and 405s), the
// http.request.method (_OTHER for a method HTTP does not define) and
// http.response.status_code. Each request is a server span named "METHOD
// /route/template" ("GET" alone when no route matched), a child of the
// span the global propagator (otel.GetTextMapPropagator) extracts from its
// headers, if the host set one; its status is Error for 5xx answers only,
// and its client.address the client's: the connection's, or behind
// Config.TrustedProxies the one they name (Proxies; Server.Client answers
// the same for a host's own logs). The services' spans are its children. BenchmarkMetricsCost measures what
// the metrics cost a request (examples/bench/README.md gives the figures).
//
// # Testing
//
// The tests drive every route on SQLite and PostgreSQL and validate the
// real answers against the OpenAPI document with kin-openapi; fuzz tests
// send arbitrary search queries and bodies to every route that takes them.
package httpapi
