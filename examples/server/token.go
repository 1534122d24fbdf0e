package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/verify"
)

// maxTokenInput bounds what token -revoke reads from stdin: a token is 46
// bytes, and a pipe from the wrong command should not be read to its end.
const maxTokenInput = 4096

// tokenCmd creates the tenant and user if missing and prints a new token for
// the user, and nothing else, on stdout; with -revoke it revokes the token
// read from stdin instead.
func tokenCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, logger *slog.Logger) error {
	fs := newFlagSet("token", stdout, stderr, getenv)
	tenantName := fs.String("tenant", "", "tenant name, created if missing (required)")
	username := fs.String("username", "", "user name, created if missing (required)")
	admin := fs.Bool("admin", false, "-admin makes the user an admin, -admin=false a non-admin; without it a new user is a non-admin and an existing one keeps its role")
	var ttl time.Duration
	fs.Var(durationFlag{&ttl}, "ttl", "lifetime of the token, e.g. 720h; 0 never expires")
	email := fs.String("email", "", "set the user's e-mail address (without verification: the operator vouches for it)")
	mobile := fs.String("mobile", "", "set the user's mobile number, in any form valid for -country")
	country := fs.String("country", "", "ISO 3166-1 region of -mobile, such as CN or US")
	locale := fs.String("locale", "", "set the user's preferred language, a valid BCP 47 tag such as en or zh-CN, which API answers use when the request's Accept-Language names none the server has (one it has no messages in is stored, with a warning); \"\" leaves it as it is")
	tenantLocale := fs.String("tenant-locale", "", "set the tenant's default language (a valid BCP 47 tag: en, zh-CN; one the server has no messages in is stored, with a warning), for its users without one of their own and its channels' event messages; \"\" leaves it as it is")
	timeZone := fs.String("time-zone", "", "set the user's time zone, an IANA name such as Asia/Shanghai or UTC, which the web console shows times in; \"\" leaves it as it is")
	tenantTimeZone := fs.String("tenant-time-zone", "", "set the tenant's time zone (an IANA name: Asia/Shanghai, UTC), for its users without one of their own; \"\" leaves it as it is")
	revoke := fs.Bool("revoke", false, "revoke the token read from stdin (its first line) instead of issuing one")
	consoleLink := fs.Bool("console", false, "print a one-time sign-in link to the web console (valid "+readableDuration(console.DefaultLinkTTL)+", single use) instead of the token; the token it signs in with expires with the session ("+readableDuration(console.DefaultLinkTTL+console.DefaultSessionTTL)+") unless -ttl says otherwise")
	portal := fs.String("portal", "", "print a portal link instead of the token: it opens a console session for the user limited to SCOPES, comma-separated, of trash, channels and profile (valid "+readableDuration(console.DefaultPortalLinkTTL)+", single use; the session lasts "+readableDuration(console.DefaultSessionTTL)+" and issues no token); it is signed with the server secret, so run it with the server's "+envSecret+" when the server has one")
	returnURL := fs.String("return", "", "with -portal: the host's page the console's \"Back to\" link leads to (an http or https URL on one of -host-origins); the link is refused otherwise")
	var hostOrigins []string
	addHostOriginsFlag(fs, &hostOrigins)
	baseURLFlag := fs.String("base-url", "", "the server's URL, which the -console or -portal link starts with (default http:// and "+envAddr+", or "+defaultAddr+")")
	dbURL := fs.databaseURL()
	if err := fs.parse(args); err != nil {
		return err
	}
	if *revoke {
		for _, name := range []string{"tenant", "username", "admin", "ttl", "email", "mobile", "country", "locale", "tenant-locale", "time-zone", "tenant-time-zone", "console", "portal", "base-url", "return", "host-origins"} {
			if fs.given(name) {
				return fmt.Errorf("-revoke takes the token on stdin and no -%s", name)
			}
		}
		return revokeToken(ctx, *dbURL, stdin, stderr, logger)
	}
	switch {
	case *tenantName == "":
		return errors.New("-tenant is required")
	case *username == "":
		return errors.New("-username is required")
	case (*mobile == "") != (*country == ""):
		return errors.New("-mobile and -country go together")
	case fs.given("base-url") && !*consoleLink && !fs.given("portal"):
		return errors.New("-base-url goes with -console or -portal")
	case fs.given("portal") && *consoleLink:
		return errors.New("-portal and -console exclude each other: -console signs in with a new token to the whole console, -portal opens a session limited to its scopes")
	case fs.given("return") && !fs.given("portal"):
		return errors.New("-return goes with -portal: it is where the portal's session leads back to")
	case fs.given("portal") && fs.given("ttl"):
		return errors.New("-ttl goes with a token, and -portal issues none: its link is valid " + readableDuration(console.DefaultPortalLinkTTL) + " and its session lasts " + readableDuration(console.DefaultSessionTTL))
	}
	var base string
	var err error
	var scopes []console.Scope
	var secret []byte
	if fs.given("portal") {
		if scopes, err = portalScopes(*portal); err != nil {
			return err
		}
		// -return is checked before anything is written, by the rule the
		// console applies when it signs the link.
		if *returnURL != "" {
			if err := console.CheckReturnURL(*returnURL, hostOrigins); err != nil {
				return fmt.Errorf("-return: %s (-host-origins, %s)", returnRule(err), envHostOrigins)
			}
		}
		// The server's secret: DESKKIT_SECRET, checked as serve checks it,
		// or else the one kept in the database, read below.
		if s := getenv(envSecret); s != "" {
			if len(s) < verify.MinSecretLength {
				return fmt.Errorf("%s must be at least %d characters; make one with: openssl rand -hex 32", envSecret, verify.MinSecretLength)
			}
			secret = []byte(s)
		}
	}
	if *consoleLink || scopes != nil {
		if base, err = consoleBase(*baseURLFlag, getenv(envAddr)); err != nil {
			return err
		}
		if *consoleLink && !fs.given("ttl") {
			ttl = console.DefaultLinkTTL + console.DefaultSessionTTL
		}
	}
	var m verify.Mobile
	if *mobile != "" {
		if m, err = verify.NormalizeMobile(*mobile, *country); err != nil {
			return fmt.Errorf("-mobile, -country: %w", err)
		}
	}
	if *email != "" {
		if *email, err = verify.NormalizeEmail("email", *email); err != nil {
			return fmt.Errorf("-email: %w", err)
		}
	}
	if *locale, err = directory.CheckLocale("locale", *locale); err != nil {
		return fmt.Errorf("-locale: %w", err)
	}
	if *tenantLocale, err = directory.CheckLocale("tenantLocale", *tenantLocale); err != nil {
		return fmt.Errorf("-tenant-locale: %w", err)
	}
	if err := directory.CheckTimeZone("timeZone", *timeZone); err != nil {
		return fmt.Errorf("-time-zone: %w", err)
	}
	if err := directory.CheckTimeZone("tenantTimeZone", *tenantTimeZone); err != nil {
		return fmt.Errorf("-tenant-time-zone: %w", err)
	}
	warnLocale(ctx, logger, "-locale", *locale)
	warnLocale(ctx, logger, "-tenant-locale", *tenantLocale)
	// Without -admin the role stays as it is: leaving a flag out must not
	// demote an admin.
	role := directory.Role{}
	if fs.given("admin") {
		role = directory.Role{Admin: *admin, Set: true}
	}

	db, err := openDB(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	// One instant for the whole command, so that the expiry logged is the
	// one stored.
	now := time.Now()
	dir, err := directory.New(db, &directory.Config{Now: func() time.Time { return now }})
	if err != nil {
		return err
	}
	if scopes != nil && secret == nil {
		// Read, never created: a secret made here would sign links that a
		// server running with DESKKIT_SECRET refuses.
		if secret, err = readStoredSecret(ctx, db); err != nil {
			return err
		}
	}
	tenant, err := dir.EnsureTenant(ctx, *tenantName)
	if err != nil {
		return fmt.Errorf("-tenant: %w", err)
	}
	if *tenantLocale != "" {
		if err := dir.SetTenantLocale(ctx, tenant.ID, *tenantLocale); err != nil {
			return fmt.Errorf("-tenant-locale: %w", err)
		}
		tenant.Locale = *tenantLocale
	}
	if *tenantTimeZone != "" {
		if err := dir.SetTenantTimeZone(ctx, tenant.ID, *tenantTimeZone); err != nil {
			return fmt.Errorf("-tenant-time-zone: %w", err)
		}
	}
	user, err := dir.EnsureUserRole(ctx, tenant.ID, *username, role)
	if err != nil {
		return fmt.Errorf("-username: %w", err)
	}
	if *locale != "" {
		if err := dir.SetUserLocale(ctx, tenant.ID, user.ID, *locale); err != nil {
			return fmt.Errorf("-locale: %w", err)
		}
		user.Locale = *locale
	}
	if *timeZone != "" {
		if err := dir.SetUserTimeZone(ctx, tenant.ID, user.ID, *timeZone); err != nil {
			return fmt.Errorf("-time-zone: %w", err)
		}
	}
	if m.E164 != "" {
		if err := dir.SetMobile(ctx, nil, tenant.ID, user.ID, m.E164, m.Country); err != nil {
			return fmt.Errorf("-mobile: %w", err)
		}
		user.Mobile = m.E164
	}
	if *email != "" {
		if err := dir.SetEmail(ctx, nil, tenant.ID, user.ID, *email); err != nil {
			return fmt.Errorf("-email: %w", err)
		}
		user.Email = *email
	}
	if scopes != nil {
		return printPortalLink(ctx, db, user, tenant, portalOptions{scopes: scopes, returnURL: *returnURL, hostOrigins: hostOrigins}, secret, base, now, stdout, logger)
	}
	token, err := dir.IssueTokenTTL(ctx, user, ttl)
	if err != nil {
		return err
	}
	attrs := []any{
		slog.String("tenant", tenant.Name), slog.Int64("tenantId", tenant.ID),
		slog.String("username", user.Username), slog.Int64("userId", user.ID), slog.Bool("admin", user.Admin),
		slog.String("ttl", readableDuration(ttl)),
		slog.String("mobile", user.Mobile), slog.String("email", user.Email),
	}
	if user.Locale != "" {
		attrs = append(attrs, slog.String("locale", user.Locale))
	}
	if tenant.Locale != "" {
		attrs = append(attrs, slog.String("tenantLocale", tenant.Locale))
	}
	if *timeZone != "" {
		attrs = append(attrs, slog.String("timeZone", *timeZone))
	}
	if *tenantTimeZone != "" {
		attrs = append(attrs, slog.String("tenantTimeZone", *tenantTimeZone))
	}
	if ttl > 0 {
		attrs = append(attrs, slog.String("expiresAt", expiresAt(now, ttl).Format(time.RFC3339)))
	}
	if *consoleLink {
		// The token is never shown: the link signs in with it, once.
		code, err := console.CreateLink(ctx, db, directory.TokenHash(token), now, console.DefaultLinkTTL)
		if err != nil {
			return err
		}
		attrs = append(attrs, slog.String("linkExpiresAt", now.Add(console.DefaultLinkTTL).UTC().Format(time.RFC3339)))
		logger.InfoContext(ctx, "console link issued", attrs...)
		_, err = fmt.Fprintln(stdout, base+console.LinkPath(code))
		return err
	}
	logger.InfoContext(ctx, "token issued", attrs...)
	_, err = fmt.Fprintln(stdout, token)
	return err
}

// returnRule is the rule a -return URL broke, in the flag's words.
func returnRule(err error) string {
	if ie, ok := errors.AsType[*deskkit.InputError](err); ok {
		return ie.Rule.String()
	}
	return err.Error()
}

// portalScopes reads -portal's comma-separated scopes.
func portalScopes(list string) ([]console.Scope, error) {
	known := []console.Scope{console.ScopeTrash, console.ScopeChannels, console.ScopeProfile}
	var out []console.Scope
	for part := range strings.SplitSeq(list, ",") {
		s := console.Scope(strings.ToLower(strings.TrimSpace(part)))
		if s == "" {
			continue
		}
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("-portal: unknown scope %q; the scopes are trash, channels and profile, comma-separated", part)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-portal needs at least one scope: trash, channels or profile, comma-separated, such as -portal trash,channels")
	}
	return out, nil
}

// readStoredSecret is the server secret kept in the database by a server
// started without DESKKIT_SECRET, or an error naming DESKKIT_SECRET when
// there is none.
func readStoredSecret(ctx context.Context, db *bun.DB) ([]byte, error) {
	var s string
	err := db.NewRaw("SELECT secret FROM deskkit_server_secret WHERE id = 1").Scan(ctx, &s)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("-portal: no server secret: %s is not set and the database keeps none (a server started without %s keeps one there); set %s to the server's", envSecret, envSecret, envSecret)
	}
	if err != nil {
		return nil, fmt.Errorf("read the server secret: %w", err)
	}
	if s = strings.TrimSpace(s); len(s) < verify.MinSecretLength {
		return nil, errors.New("the server secret in the database is too short")
	}
	return []byte(s), nil
}

// portalOptions are -portal's scopes, -return and -host-origins.
type portalOptions struct {
	scopes      []console.Scope
	returnURL   string
	hostOrigins []string
}

// printPortalLink prints a portal link for user, limited to o's scopes and
// leading back to o's return URL, signed as the server signs them: through
// a console built as serve builds it, over the same database and secret,
// so the running server opens it (when it has the same -host-origins).
func printPortalLink(ctx context.Context, db *bun.DB, user directory.User, tenant directory.Tenant, o portalOptions, secret []byte, base string, now time.Time, stdout io.Writer, logger *slog.Logger) error {
	scopes := o.scopes
	a, err := newApp(db, appConfig{Logger: logger, Now: func() time.Time { return now }, Verify: verifyConfig{secret: secret}, HostOrigins: o.hostOrigins})
	if err != nil {
		return err
	}
	link, err := a.console.PortalLinkFor(ctx, console.PortalRequest{
		Principal: deskkit.Principal{TenantID: tenant.ID, UserID: user.ID, Admin: user.Admin},
		Scopes:    scopes, ReturnURL: o.returnURL,
	})
	if err != nil {
		return fmt.Errorf("-portal: %w", err)
	}
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	// The link itself is not logged: it opens the session.
	logger.InfoContext(ctx, "console link issued", slog.String("kind", "portal"), slog.String("scopes", strings.Join(names, ",")),
		slog.String("tenant", tenant.Name), slog.Int64("tenantId", tenant.ID),
		slog.String("username", user.Username), slog.Int64("userId", user.ID), slog.Bool("admin", user.Admin),
		slog.String("linkExpiresAt", now.Add(console.DefaultPortalLinkTTL).UTC().Format(time.RFC3339)))
	_, err = fmt.Fprintln(stdout, base+link)
	return err
}

// consoleBase is the URL -console's link starts with: -base-url, or the
// server's listen address (DESKKIT_ADDR, or the default) over http, a
// wildcard host written 127.0.0.1 as the serve command prints it.
func consoleBase(flagValue, addr string) (string, error) {
	if flagValue != "" {
		u, err := url.Parse(flagValue)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return "", errors.New("-base-url must be an http or https URL such as https://deskkit.example.com")
		}
		return strings.TrimSuffix(flagValue, "/"), nil
	}
	if addr == "" {
		addr = defaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %w", envAddr, addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// revokeToken revokes the token on the first line of stdin. Neither its
// output nor its errors contain the token.
func revokeToken(ctx context.Context, dbURL string, stdin io.Reader, stderr io.Writer, logger *slog.Logger) error {
	if isTerminal(stdin) {
		fmt.Fprint(stderr, "Token to revoke: ")
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, maxTokenInput)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("-revoke: read stdin: %w", err)
	}
	token := strings.TrimSpace(line)
	if token == "" {
		return errors.New(`-revoke: no token on stdin; pipe it in: printf '%s\n' "$TOKEN" | server token -revoke`)
	}
	db, err := openDB(ctx, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	dir, err := directory.New(db, nil)
	if err != nil {
		return err
	}
	user, err := dir.RevokeToken(ctx, token)
	if errors.Is(err, directory.ErrNotFound) {
		return errors.New("-revoke: no such token in this database (never issued, or revoked already)")
	}
	if err != nil {
		return err
	}
	logger.InfoContext(ctx, "token revoked", slog.Int64("tenantId", user.TenantID),
		slog.String("username", user.Username), slog.Int64("userId", user.ID))
	return nil
}

// expiresAt is when a token issued at now with ttl expires, rounded up to
// the second as the directory stores it.
func expiresAt(now time.Time, ttl time.Duration) time.Time {
	return now.UTC().Add(ttl + time.Second - 1).Truncate(time.Second)
}

// readableDuration writes d as a person would: "720h", "1h30m", "never" for
// zero, rather than "720h0m0s" or slog's nanoseconds.
func readableDuration(d time.Duration) string {
	if d == 0 {
		return "never"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") { // "1h30m0s", "720h0m0s", "10m0s"
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") { // "720h0m"
		s = s[:len(s)-2]
	}
	return s
}

// demoToken makes sure the demo tenant and its user exist (created an
// admin; an existing user keeps the role an operator gave it) and returns a
// token for the user if it holds no usable one: on the first start. Later
// starts return "", since only hashes are kept and the first token cannot
// be shown again; minting one on every start would pile up live tokens.
func (a *app) demoToken(ctx context.Context) (string, error) {
	tenant, err := a.dir.EnsureTenant(ctx, demoTenant)
	if err != nil {
		return "", err
	}
	user, err := a.dir.EnsureUserRole(ctx, tenant.ID, demoUsername, directory.Role{Admin: true})
	if err != nil {
		return "", err
	}
	return a.dir.IssueTokenIfNone(ctx, user, 0)
}

// demoAccess is what printDemoAccess tells.
type demoAccess struct {
	base        string    // the server's address, http://127.0.0.1:8080
	token       string    // the demo user's new token, or "" on a later start
	databaseURL string    // the server's -database-url
	program     string    // how this server's commands are run (serverInvocation)
	codes       mailCodes // where a code sent by e-mail can be read
}

// printDemoAccess tells the person who started the server how to call it:
// curl lines carrying the token when there is one to show, and otherwise how
// to get a token and the same lines with $TOKEN; where the code that one of
// them asks for can be read, and how to use it. The token commands it prints
// run this program as it was started (go run ./examples/server, or the
// binary) and name the server's database (databaseURL) and, for -console's
// link, its address (base) when they are not the defaults: a token command
// without them would open deskkit.db in the working directory, creating it
// beside a server on PostgreSQL, and a link to 127.0.0.1:8080 would reach no
// one.
func printDemoAccess(stdout io.Writer, d demoAccess) {
	base := d.base
	dbArgs, redacted := databaseArgs(d.databaseURL)
	auth := `-H "Authorization: Bearer $TOKEN"`
	if d.token != "" {
		auth = "-H 'Authorization: Bearer " + d.token + "'"
	} else {
		fmt.Fprintf(stdout, "The demo user has a token already; only its hash is kept, so it cannot be shown again.\n"+
			"Get a new one with:\n"+
			"  TOKEN=$(%s token -tenant %s -username %s%s)\n", d.program, demoTenant, demoUsername, dbArgs)
	}
	fmt.Fprintf(stdout, "Search the demo tenant's trash with:\n  curl %s '%s/api/v1/task/trash/search?targetType=TASK'\n", auth, base)
	fmt.Fprintf(stdout, "Create a demo task, then delete it into the trash (use the id the first call answers):\n"+
		"  curl %s -H 'Content-Type: application/json' -d '{\"projectId\":1,\"name\":\"My first task\"}' '%s/api/v1/demo/task'\n"+
		"  curl %s -X DELETE '%s/api/v1/demo/task/1'\n", auth, base, auth, base)
	fmt.Fprintf(stdout, "See the signed-in user, then ask for a code to add an e-mail address:\n"+
		"  curl %s '%s/api/v1/user/current'\n"+
		"  curl %s -H 'Content-Type: application/json' -d '{\"bizKey\":\"BIND_EMAIL\",\"toAddress\":[[\"demo@example.com\"]]}' '%s/api/v1/user/current/email/send'\n",
		auth, base, auth, base)
	switch d.codes {
	case codesLogged:
		fmt.Fprintf(stdout, "The code is in this server's log, in clear (development mode: no %s, SMTP server or SMS provider; -dev-log-codes=false hides it):\n"+
			"the line \"verify: mail not sent, logged\" has it as \"code\". Add the address with it:\n", envSecret)
	case codesMailed:
		fmt.Fprintf(stdout, "The code goes to demo@example.com through the SMTP server (-smtp-addr). Add the address with it:\n")
	default:
		fmt.Fprintf(stdout, "This configuration logs no code (\"verify: mail not sent, logged\" shows the mail without it): set -smtp-addr (%s) to send codes.\n"+
			"Add the address with the code:\n", envSMTPAddr)
	}
	fmt.Fprintf(stdout, "  curl %s -H 'Content-Type: application/json' -X PATCH -d '{\"bizKey\":\"BIND_EMAIL\",\"email\":\"demo@example.com\",\"verificationCode\":\"CODE\"}' '%s/api/v1/user/current/email'\n",
		auth, base)
	fmt.Fprintf(stdout, "List the tenant's webhook channels, and add one (its signing secret is in the answer, once):\n"+
		"  curl %s '%s/api/v1/event/channel/type/WEBHOOK'\n"+
		"  curl %s -H 'Content-Type: application/json' -d '{\"channelType\":\"WEBHOOK\",\"name\":\"ops\",\"address\":\"https://hooks.example.com/deskkit\"}' '%s/api/v1/event/channel'\n",
		auth, base, auth, base)
	consoleArgs := dbArgs
	if base != "http://"+defaultAddr {
		consoleArgs += " -base-url " + shellQuote(base)
	}
	fmt.Fprintf(stdout, "Read the API reference at %s/docs, and sign in to the web console at %s/console/ with the token,\n"+
		"or with a one-time link (valid 10 minutes) from:\n"+
		"  %s token -tenant %s -username %s -console%s\n", base, base, d.program, demoTenant, demoUsername, consoleArgs)
	fmt.Fprintf(stdout, "or with a link limited to some pages (trash, channels, profile; valid 2 minutes) from:\n"+
		"  %s token -tenant %s -username %s -portal trash%s\n", d.program, demoTenant, demoUsername, consoleArgs)
	if redacted {
		fmt.Fprintln(stdout, "(Write the database password where the commands above read xxxxx; it is not printed.)")
	}
	if d.token != "" {
		fmt.Fprintln(stdout, "This token is shown once; later starts print how to get another.")
	}
}

// databaseArgs is " -database-url URL", shell-quoted, for a server whose
// database URL is not the default, and "" for one whose is. A password in
// the URL is printed as xxxxx (url.URL.Redacted), and redacted says so:
// what the server prints may end up in a log.
func databaseArgs(databaseURL string) (args string, redacted bool) {
	if databaseURL == "" || databaseURL == defaultDatabaseURL {
		return "", false
	}
	if u, err := url.Parse(databaseURL); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			databaseURL, redacted = u.Redacted(), true
		}
	}
	return " -database-url " + shellQuote(databaseURL), redacted
}

// shellQuote writes s as one word of a POSIX shell: in single quotes, a
// single quote inside it closing the quotes, escaped, and opening them again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// warnLocale warns that a valid locale names no language the server has
// messages in exactly (deskkit.Messages.Language): it is stored, for a
// later catalogue to serve, and meanwhile its readers get the next
// language known of them (the tenant's locale, the server's default), or
// English: zh-TW reads no Simplified Chinese.
func warnLocale(ctx context.Context, logger *slog.Logger, flag, locale string) {
	msgs, err := deskkit.NewMessages()
	if locale == "" || err != nil {
		return
	}
	if _, ok := msgs.Language(locale); ok {
		return
	}
	var have []string
	for _, t := range msgs.Languages() {
		have = append(have, t.String())
	}
	logger.WarnContext(ctx, flag+" names a language the server has no messages in; stored, and its readers get the next language known of them (the tenant's, the server's default), else English",
		slog.String("locale", locale), slog.String("languages", strings.Join(have, ", ")))
}
