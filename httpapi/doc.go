// Package httpapi serves deskkit's services over HTTP, every route under
// /api/v1.
//
// # Overview
//
// New builds a Server (an http.Handler) from a Config naming the services to
// mount and an Authenticator that turns a bearer token into a
// deskkit.Principal. Serve it alone, or beside the host's routes through
// Server.Wrap; it answers every path it is given. Every answer is an
// envelope (package envelope). The OpenAPI 3.1 document of the API is
// generated when New runs and served without authentication at GET
// /api/v1/openapi.json (see "The OpenAPI document").
//
//	api, err := httpapi.New(&httpapi.Config{Authenticator: auth, Trash: tr, Channels: reg})
//	srv := &http.Server{Addr: ":8080", Handler: api.Wrap(mux)} // mux: the host's own routes
//
// The package's Example mounts the trash and shows an answer, an unknown
// parameter, a wrong method and a missing token; ExampleServer_Handle adds
// a route of the host's own, and ExampleServer_WriteError answers a host's
// error. The operations, with what each takes and answers and the rules of
// verification, channels, names and the trash as a client meets them, are
// listed in the served document and in the reference server's manual
// (examples/server/README.md, "The API").
//
// The services are taken as one interface each, exactly the methods the
// routes call: TrashService, VerifyService and ChannelService.
// *trash.Trash, *verify.Verifier and *channel.ChannelRegistry implement
// them, and a host may mount a wrapper (metrics, audit) or a fake
// instead, embedding the interface for what it does not override. A nil
// service, or a nil pointer in a service field, mounts nothing.
//
// Every request, the API's and the web console's (package console), goes
// the same way: the host's authenticator is asked once; the reader's
// language is resolved once (Languages) and travels on the request's
// context as a deskkit.Localizer, which the answer, the page and the
// services write with; the service is called through the same interface;
// and an error is answered by the one error table (ProblemOf).
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
// document all derive from these lists; Routes lists them.
//
// A host adds routes of its own with Server.Handle, with the same
// authentication, deadline, body limit, envelope, error table and
// unknown-parameter check as deskkit's routes; they are not in the
// OpenAPI document, and HostRoutes lists them.
//
// # Paths, methods and parameters
//
// The rules a client meets on every route, deskkit's and the host's:
//
//   - Nothing under /api/v1 ever redirects, and no path is cleaned: empty
//     segments (//), "." and ".." (also percent-encoded) and trailing
//     slashes name no resource and are answered 404 with an envelope, so
//     DELETE /api/v1/task/trash/7/.. can never become a clear-all. A host
//     that embeds the API beside its own routes serves Server.Wrap(mux),
//     never the API mounted on an http.ServeMux (Wrap says why).
//   - Requests are routed, and logged, on the path as the client wrote it
//     (URL.EscapedPath): an encoded slash (%2F) in any segment is 404
//     route_not_found, so /api/v1/task%2Ftrash%2F10 is not the
//     /api/v1/task/trash/10 a proxy or firewall rule on the path never saw.
//   - A static segment of a template shadows a wildcard at the same
//     position whatever the method: /task/trash/search is the search and
//     nothing else (DELETE there is 405, not a clear of an entry called
//     "search"). A path no template matches is 404 route_not_found; a path
//     served for other methods only is 405 method_not_allowed, with an
//     Allow header listing exactly the methods that serve it.
//   - HEAD and OPTIONS are served nowhere (405), the OpenAPI document
//     included: a HEAD of an authenticated search costs a search for
//     nothing, and leaving them out keeps Allow true.
//   - Integers have one spelling (ParseID): decimal digits, no sign, no
//     leading zero; +5, 05 and, in a path, %35 are 400 rather than 5.
//     Query values are read after URL decoding, so projectId=%35 is 5.
//     Dates have one spelling too (ParseTime).
//   - Every route rejects query parameters it does not declare, and
//     parameters given twice, with 400: a typo never reaches a destructive
//     operation as a no-op (DELETE /task/trash/7?dryRun=true is 400, not a
//     clear). Filter indexes are written without leading zeros:
//     filters[00].key is 400 rather than a second filters[0].key.
//   - JSON bodies are read by DecodeJSON's rules: a key once, spelt
//     exactly, of the right type. Malformed input is 400 with a message
//     naming the field; a body over Config.MaxBodyBytes (1 MiB) is 413.
//
// # Errors
//
// One table maps errors to HTTP, read top down, from specific to generic.
// A service's own error, made with deskkit.NewError, also matches its
// class (deskkit.ErrInvalid, ...); it gets a key of its own by a row above
// its class's row, and otherwise shares its class's row. The client's
// message is the error's own when it implements deskkit.ClientMessager
// (input errors name the field and the rule), the row's otherwise;
// Retry-After comes from deskkit.RetryAfterer. Server.WriteError answers
// a host's errors by the same table, and ProblemOf gives a row's answer to
// whatever else shows an error (the console's pages).
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
// The OpenAPI document lists the same table, and each operation's
// responses.
//
// # Deadlines and outages
//
// Every operation's context gets Config.RequestTimeout (10 s) before
// authentication, so that no request waits for ever on the database pool
// or a statement. An outage is answered 503 service_unavailable with
// Retry-After and a generic message, never 500: nothing such a request did
// was committed, and the client may retry. Outages are logged once per
// Config.OutageLogInterval, not once per request. The three Config fields
// say what counts as an outage and how it is logged.
//
// # Languages
//
// Every answer's msg is written for a person, in the reader's language,
// named in Content-Language ("en", "zh-Hans"); the machine-read parts never
// change with it: code, ext.eKey, the JSON keys, event types, and the
// field names inside messages. The language is the first that
// Config.Messages has of: the request's Accept-Language, the user's
// preferred locale and the tenant's default locale (when the Authenticator
// is also a deskkit.LocaleResolver), Config.DefaultLanguage, English. The
// service is called with it on its context, so that what it sends for the
// request (a verification code) is written in it too. Config.Messages and
// Config.DefaultLanguage give the details, and how a host adds a language;
// Languages is the choice itself, which the console makes the same way.
//
// # Request ids, metrics and traces
//
// Every request gets an id: its X-Request-Id if valid (ValidRequestID),
// otherwise a new one. The answer echoes it, every error envelope carries
// it in ext.requestId, and every line deskkit logs for the request gets it
// as request_id once the host wraps its slog handler with
// deskkit.LogHandler; RequestIDs gives the host's own routes and access
// log the same id. Config.MeterProvider and Config.TracerProvider (nil: the
// global providers, which record nothing until the host installs some;
// nothing is registered on a global registry) get a duration histogram
// and a server span per request, labelled by route template, never by
// path: those fields list the names and attributes.
//
// # The OpenAPI document
//
// The document is generated, never written by hand, from the operation
// lists, the request and answer types with their struct tags, and the
// error table. Each operation's success is an envelope type of its own
// (TrashPageResult, UserDetailResult...) whose data has the operation's
// schema, so that generated clients (oapi-codegen, openapi-typescript) get
// typed data. The served document covers the services New mounted; the
// committed httpapi/openapi.json, with every service mounted, is kept
// equal to what the code generates (go generate ./httpapi rewrites it).
// examples/server/README.md ("The API") says how it is built and which
// tools read it.
//
// # Testing
//
// The tests drive every route on SQLite and PostgreSQL and validate the
// real answers against the OpenAPI document with kin-openapi; fuzz tests
// send arbitrary search queries and bodies to every route that takes them.
package httpapi
