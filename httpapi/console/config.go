package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi"
)

// Defaults of Config.
const (
	// DefaultBasePath is where the console's pages are served.
	DefaultBasePath = "/console/"
	// DefaultDocsPath is where the API reference is served.
	DefaultDocsPath = "/docs"
	// DefaultOpenAPIURL is the OpenAPI document the API reference renders,
	// where httpapi serves it.
	DefaultOpenAPIURL  = "/api/v1/openapi.json"
	DefaultProductName = "deskkit"
	DefaultSessionTTL  = 12 * time.Hour
	DefaultLinkTTL     = 10 * time.Minute
	// DefaultPortalLinkTTL is how long a portal link can be followed: a
	// host mints one when its user presses a button and sends the browser
	// there at once.
	DefaultPortalLinkTTL = 2 * time.Minute
	DefaultSignInWindow  = 10 * time.Minute
	// DefaultSignInsPerClient bounds invalid sign-in attempts from one
	// client address per DefaultSignInWindow: a person mistypes a few
	// times, a guesser needs billions of tries against a 256-bit token.
	DefaultSignInsPerClient = 20
	// DefaultSignInsPerTenant bounds the sessions one tenant opens per
	// window, so that a leaked token cannot fill the sessions table.
	DefaultSignInsPerTenant = 200
	// DefaultSignInsGlobal bounds the invalid attempts of all clients
	// together per window that are answered 401; past it they answer 429.
	// Valid tokens and links are never refused by it: the 256 bits of a
	// token, not a shared budget, are what stop a guesser spread over
	// many addresses.
	DefaultSignInsGlobal = 2000
	// DefaultSignInsPerUser bounds the sign-ins of one user (tenant and
	// user) per window, by token or by one-time or portal link: a person
	// opens the console a few times, and a leaked link of theirs opens no
	// more.
	DefaultSignInsPerUser = 20
)

// MinSecretBytes is the least length of Config.Secret.
const MinSecretBytes = 32

// Authenticator turns a bearer token into the principal it names, as the
// API's does, and checks a token again by its stored hash on every request
// of a session that signed in with it.
type Authenticator interface {
	httpapi.Authenticator
	// AuthenticateHash returns the principal of the token whose hash
	// (Config.TokenHash) is hash, or an error wrapping
	// deskkit.ErrUnauthenticated once the token is revoked or expired.
	AuthenticateHash(ctx context.Context, hash string) (deskkit.Principal, error)
}

// PrincipalResolver is the host's answer to "who is this user now?",
// required: the console asks it on every request of every session, and
// before a session opens, so that a session acts for its user as the host
// knows them at that moment. A user demoted since the link was minted or
// the session opened acts as a non-admin at the next request; a user
// deleted or disabled ends the session. The reference server's directory
// answers it with one indexed read.
//
// It is the authority on the user; Authenticator (token sign-in) is the
// authority on the token, and Config.Allow, if set, on the host's own
// policy for the principal Principal returns (the user signed out of the
// host, say). A session never acts with more than each of them gives:
// its admin flag is the one the link or token had, and the one Principal
// answers now.
type PrincipalResolver interface {
	// Principal returns the principal of user userID of tenant tenantID
	// as it is now, its admin flag included; its TenantID and UserID must
	// be those asked for. An error wrapping deskkit.ErrUnauthenticated,
	// deskkit.ErrForbidden or deskkit.ErrNotFound says the user is gone or
	// may not sign in: the session ends, and a link opens none (it stays
	// unused). An error wrapping deskkit.ErrUnavailable shows the page
	// "try again" and keeps the session; any other error is logged and
	// answered 500, and keeps it.
	Principal(ctx context.Context, tenantID, userID int64) (deskkit.Principal, error)
}

// Namer is an optional hook: the names the header shows for a session's
// user and tenant, instead of their ids. It is asked when a session opens.
type Namer interface {
	// Names returns the display names of p's user and tenant. An empty
	// name, or an error (logged), shows the id instead.
	Names(ctx context.Context, p deskkit.Principal) (user, tenant string, err error)
}

// ProjectNamer is an optional hook: the names of projects, which pages
// show instead of their ids.
type ProjectNamer interface {
	// ProjectNames returns the names of those of ids that are projects of
	// tenant; an id left out, or an error (logged), shows as its id.
	ProjectNames(ctx context.Context, tenant int64, ids []int64) (map[int64]string, error)
}

// SprintNamer is an optional hook: the names of sprints, which the trash
// page shows beside the tasks that belong to them.
type SprintNamer interface {
	// SprintNames returns the names of those of ids that are sprints of
	// tenant; an id left out, or an error (logged), shows no sprint.
	SprintNames(ctx context.Context, tenant int64, ids []int64) (map[int64]string, error)
}

// Config is what the console serves from: the database of its sessions,
// how people sign in, the service objects the API mounts, and how the
// pages look and where they are.
type Config struct {
	DB *bun.DB // required; Migrate must have run (New checks its tables)

	// Principals tells who a session's user is now, on every request:
	// required (see PrincipalResolver).
	Principals PrincipalResolver
	// Authenticator, with TokenHash, lets a person sign in by pasting a
	// bearer token or through a link made by CreateLink; nil turns both
	// off, and sessions open only through portal links.
	Authenticator Authenticator
	// TokenHash is the stored form of a token, the one Authenticator's
	// AuthenticateHash takes. Required with Authenticator.
	TokenHash func(token string) string
	// Secret signs portal links (HMAC-SHA256); at least MinSecretBytes
	// bytes. Without it PortalLink refuses to mint.
	Secret []byte
	// Allow, if set, is asked on every request of every session, and
	// before one opens, whether p (as Principals answered it) may still
	// use the console. nil lets it; an error wrapping
	// deskkit.ErrUnavailable shows the page "try again" and keeps the
	// session; any other error ends the session.
	Allow func(ctx context.Context, p deskkit.Principal) error
	// Names, Projects and Sprints, optional, name users, tenants,
	// projects and sprints: pages show names where they would show ids.
	Names    Namer
	Projects ProjectNamer
	Sprints  SprintNamer

	// Messages writes the pages in the reader's language: deskkit's
	// (English and Simplified Chinese) with the console's texts when nil.
	// A host adds a language or rewords a console text with catalogues of
	// its own, given to deskkit.NewMessages and handed here (the same
	// Messages the API takes): each catalogue's *.json files, named by a
	// language tag, map English texts to their translation.
	//
	//	//go:embed messages/*.json
	//	var catalogues embed.FS // messages/ja.json, messages/zh-Hans.json, messages/en.json
	//
	//	m, err := deskkit.NewMessages(catalogues)
	//	con, err := console.New(&console.Config{DB: db, Messages: m /* ... */})
	//
	// The host's texts come first; a text it does not translate is the
	// console's own translation, or English. For example zh-Hans.json
	// holding {"Trash": "废纸篓"} renames the trash in Chinese, and en.json
	// holding {"Trash": "Recycle bin"} in English.
	Messages *deskkit.Messages
	// DefaultLanguage is the language of a reader that nothing else tells
	// (a BCP 47 tag: "en", "zh-CN"); "en" if empty.
	DefaultLanguage string
	// Locales, optional, gives the user's and tenant's locales, which come
	// after Accept-Language; when nil, Authenticator or Names is asked if
	// it implements LocaleResolver.
	Locales LocaleResolver
	// Zones, optional, gives the time zones of the user and the tenant,
	// which pages show times in and read the filters' times in; without
	// one, the zone the reader picked in the footer (ZoneParam,
	// ZoneCookie), else UTC. When nil, Authenticator or Names is asked if
	// it implements ZoneResolver. The API answers in UTC whatever the zone.
	Zones ZoneResolver

	// The services, as the API takes them (httpapi.Config): a host that
	// wraps one (audit, metrics, a permission check) passes the wrapper
	// to both, and the pages go through it as the API calls do. Nil (or
	// an interface holding a nil pointer) hides the pages.
	//
	// A Trash that also has *trash.Trash's Allowed, ProjectRights and
	// Projects methods (a wrapper passes them on) has its pages offer only
	// the actions the reader may take, by the rule its actions enforce,
	// and a named list of projects to pick; without them every action is
	// offered (and refused on confirming) and a project is picked by id.
	Trash    httpapi.TrashService   // the trash page
	Verifier httpapi.VerifyService  // the profile pages
	Channels httpapi.ChannelService // the channel pages
	Logger   *slog.Logger           // slog.Default if nil
	Now      func() time.Time       // time.Now if nil

	// BasePath is the path every page is under: it starts and ends with
	// "/". DefaultBasePath if empty.
	BasePath string
	// DocsPath is the path of the API reference, DefaultDocsPath if
	// empty; NoDocs serves none. OpenAPIURL is the document it renders,
	// DefaultOpenAPIURL if empty.
	DocsPath   string
	NoDocs     bool
	OpenAPIURL string
	// ProductName is the name the header and titles show,
	// DefaultProductName if empty.
	ProductName string
	// LogoURL, optional, is an image the header shows before the product
	// name: a path of this site or an https URL, whose origin the
	// Content-Security-Policy then allows for images.
	LogoURL string
	// AccentColor, optional, colours links and buttons: a CSS hex colour
	// (#RGB or #RRGGBB). Keep it dark enough for white text.
	AccentColor string
	// FrameAncestors are the origins (scheme://host[:port]) whose pages
	// may show the console in a frame (Content-Security-Policy
	// frame-ancestors). Empty: none may, and X-Frame-Options is DENY.
	FrameAncestors []string
	// HostOrigins are the host application's origins (scheme://host[:port],
	// as FrameAncestors) that a portal link's ReturnURL may lead back to:
	// PortalLinkFor refuses a ReturnURL of any other origin (the match is
	// exact: scheme, host and port), and a page shows a stored one only
	// while its origin is still listed. Empty: links take no ReturnURL.
	HostOrigins []string
	// TrustedProxies are the reverse proxies in front of the console
	// whose forwarding headers tell the client: IP addresses and CIDR
	// prefixes ("10.0.0.0/8", "192.0.2.7"), as httpapi.Config's. Through
	// them a request's address (the sign-in limits' key) is the client's
	// in Forwarded or X-Forwarded-For, and its cookies are Secure, and the
	// session's named __Host-, when the proxy says the client came over
	// https (Forwarded proto=https, X-Forwarded-Proto: https). Empty, the
	// address is the connection's and only TLS to this server makes
	// cookies Secure. See httpapi.Proxies for the rules.
	TrustedProxies []string
	// TokenCommand and LinkCommand, optional, are the command lines the
	// sign-in page shows as the way to get a token or a one-time link.
	TokenCommand string
	LinkCommand  string

	SessionTTL    time.Duration // DefaultSessionTTL if 0
	LinkTTL       time.Duration // DefaultLinkTTL if 0
	PortalLinkTTL time.Duration // DefaultPortalLinkTTL if 0
	// Sign-in limits, per SignInWindow: invalid tokens and one-time
	// links per client address (SignInsPerClient; an address that spent
	// them is refused before its next attempt is looked up) and of all
	// clients together (SignInsGlobal: invalid attempts past it answer 429,
	// valid ones still sign in); valid tokens and links, one-time or
	// portal, per user; sessions opened per tenant. An invalid portal link
	// costs its sender's address one of SignInsPerClient, counted apart
	// from tokens. 0 means the default; negative turns a limit off.
	SignInWindow     time.Duration
	SignInsPerClient int
	SignInsPerUser   int
	SignInsPerTenant int
	SignInsGlobal    int
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Zones == nil {
		if zr, ok := c.Authenticator.(ZoneResolver); ok && c.Authenticator != nil {
			c.Zones = zr
		} else if zr, ok := c.Names.(ZoneResolver); ok && c.Names != nil {
			c.Zones = zr
		}
	}
	if c.BasePath == "" {
		c.BasePath = DefaultBasePath
	}
	if c.DocsPath == "" {
		c.DocsPath = DefaultDocsPath
	}
	if c.OpenAPIURL == "" {
		c.OpenAPIURL = DefaultOpenAPIURL
	}
	if c.DefaultLanguage == "" {
		c.DefaultLanguage = "en"
	}
	if c.ProductName == "" {
		c.ProductName = DefaultProductName
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.LinkTTL == 0 {
		c.LinkTTL = DefaultLinkTTL
	}
	if c.PortalLinkTTL == 0 {
		c.PortalLinkTTL = DefaultPortalLinkTTL
	}
	if c.SignInWindow == 0 {
		c.SignInWindow = DefaultSignInWindow
	}
	if c.SignInsPerClient == 0 {
		c.SignInsPerClient = DefaultSignInsPerClient
	}
	if c.SignInsPerUser == 0 {
		c.SignInsPerUser = DefaultSignInsPerUser
	}
	if c.SignInsPerTenant == 0 {
		c.SignInsPerTenant = DefaultSignInsPerTenant
	}
	if c.SignInsGlobal == 0 {
		c.SignInsGlobal = DefaultSignInsGlobal
	}
	return c
}

var (
	hexColor = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
	pathRE   = regexp.MustCompile(`^/([A-Za-z0-9._~-]+/)*$`)
)

func (c Config) validate() error {
	switch {
	case c.DB == nil:
		return errors.New("console: Config.DB is required")
	case c.Principals == nil:
		return errors.New("console: Config.Principals is required: the host's PrincipalResolver, which tells who a session's user is now (a demoted admin acts as a non-admin at the next request)")
	case c.Authenticator != nil && c.TokenHash == nil:
		return errors.New("console: Config.TokenHash is required with Config.Authenticator")
	case c.Secret != nil && len(c.Secret) < MinSecretBytes:
		return fmt.Errorf("console: Config.Secret must be at least %d bytes", MinSecretBytes)
	case c.SessionTTL < 0 || c.LinkTTL < 0 || c.PortalLinkTTL < 0 || c.SignInWindow < 0:
		return errors.New("console: durations must not be negative")
	case c.BasePath == "/" || !pathRE.MatchString(c.BasePath) || strings.Contains(c.BasePath, "/./") || strings.Contains(c.BasePath, "/../"):
		return fmt.Errorf("console: Config.BasePath %q must be a clean path below / that starts and ends with / (such as /console/)", c.BasePath)
	case !c.NoDocs && (!pathRE.MatchString(c.DocsPath+"/") || c.DocsPath == "/" || strings.HasPrefix(c.DocsPath+"/", c.BasePath)):
		return fmt.Errorf("console: Config.DocsPath %q must be a clean path such as /docs, outside BasePath", c.DocsPath)
	case c.AccentColor != "" && !hexColor.MatchString(c.AccentColor):
		return fmt.Errorf("console: Config.AccentColor %q must be a CSS hex colour such as #0b5cad", c.AccentColor)
	case !validTag(c.DefaultLanguage):
		return fmt.Errorf("console: Config.DefaultLanguage %q must be a BCP 47 language tag such as en or zh-CN", c.DefaultLanguage)
	case strings.ContainsAny(c.ProductName, "\r\n"):
		return errors.New("console: Config.ProductName must be one line")
	}
	if c.LogoURL != "" {
		if _, err := logoOrigin(c.LogoURL); err != nil {
			return err
		}
	}
	if c.OpenAPIURL != "" && (!strings.HasPrefix(c.OpenAPIURL, "/") || strings.HasPrefix(c.OpenAPIURL, "//")) {
		return fmt.Errorf("console: Config.OpenAPIURL %q must be a path of this site", c.OpenAPIURL)
	}
	for i, o := range c.FrameAncestors {
		if err := validOrigin(o); err != nil {
			return fmt.Errorf("console: Config.FrameAncestors[%d]: %w", i, err)
		}
	}
	for i, o := range c.HostOrigins {
		if err := validOrigin(o); err != nil {
			return fmt.Errorf("console: Config.HostOrigins[%d]: %w", i, err)
		}
	}
	if _, err := httpapi.ParseProxies(c.TrustedProxies); err != nil {
		return fmt.Errorf("console: Config.%w", err)
	}
	return nil
}

// validOrigin checks that o is an origin as CSP frame-ancestors takes it:
// http or https, a host, a port maybe, and nothing else.
func validOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(o, " ;,*'\"") ||
		u.Hostname() == "" {
		return fmt.Errorf("%q must be an origin such as https://app.example.com or http://localhost:3000 (scheme://host[:port], no path)", o)
	}
	return nil
}

// logoOrigin is the origin the CSP must allow for the logo: "" for a path
// of this site.
func logoOrigin(s string) (string, error) {
	bad := fmt.Errorf("console: Config.LogoURL %q must be a path of this site (/logo.svg) or an https URL", s)
	if strings.ContainsAny(s, " ;,'\"\r\n") {
		return "", bad
	}
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return "", bad
	}
	return u.Scheme + "://" + u.Host, nil
}

func validTag(s string) bool {
	_, err := language.Parse(s)
	return err == nil
}
