// Command server is deskkit's reference server: the trash, verification and
// event channel APIs over a user directory of its own, with a small demo
// host that owns tasks and sprints, so that deleting, searching, restoring
// and clearing all work against real rows.
//
//	go run ./examples/server
//
// starts it on 127.0.0.1:8080 with the SQLite file deskkit.db in the working
// directory and creates the tenant "demo" with the admin user "demo". On the
// first start it prints curl commands carrying a bearer token for that user;
// only the token's hash is kept, so later starts mint none and print how to
// get one instead. The token commands it prints run the program as it was
// started (a built binary by its path; go run's, built in a temporary
// directory, as go run ./examples/server), and repeat the server's
// -database-url, and -console's its address, when they are not the
// defaults. In development mode (no DESKKIT_SECRET, SMTP server or SMS
// provider; devmode.go) the log shows the verification codes those lines
// ask for, as "code"; a production configuration never does. The first
// build compiles SQLite and takes minutes on two cores.
//
// README.md, beside this file, is the server's manual: every flag and
// environment variable, the subcommands, the demo host, the API's
// operations and rules, the web console, events, metrics and traces, and
// how to run the tests. help prints the flags of each command.
//
// # Usage
//
//	server [serve] [-addr ADDR] [-database-url URL] [-retention DURATION] [-demo=false] [flags]
//	server token -tenant NAME -username NAME [-admin | -admin=false] [-ttl DURATION]
//	       [-email ADDR] [-mobile NUMBER -country REGION] [-database-url URL]
//	server token -tenant NAME -username NAME -console [-base-url URL] [-ttl DURATION] [-database-url URL]
//	server token -revoke [-database-url URL] < FILE-HOLDING-THE-TOKEN
//	server seed -projects P -entries N [-tenant NAME] [-database-url URL]
//	server help [serve|token|seed]
//	server -version
//
// Every flag has an environment variable (-addr is DESKKIT_ADDR,
// -database-url DESKKIT_DATABASE_URL, ...); a flag given on the command
// line wins over it. Secrets come from the environment only, never from
// flags, which every process listing shows: DESKKIT_SECRET (the server
// secret, at least 32 characters; set it in production),
// DESKKIT_SECRET_PREVIOUS, DESKKIT_SMTP_PASSWORD,
// DESKKIT_TWILIO_AUTH_TOKEN, and the SMS providers' keys
// DESKKIT_ALIYUN_ACCESS_KEY_ID / _SECRET and DESKKIT_TENCENT_SECRET_ID /
// _KEY.
//
// -version (or version) prints the module version from the binary's build
// information: a release tag ("v0.3.0") when built from a module version,
// "(devel)" with the commit (vcs.revision, vcs.time, "+dirty" for
// uncommitted changes) when built from a checkout, and the Go version.
// Building needs Go 1.26.8 or later (go.mod); use 1.26.10 or later, which
// fixes standard-library vulnerabilities the server reaches (README.md).
//
// Logs are JSON lines on stderr. The server answers GET /healthz (the
// process is up) and GET /readyz (the database answers) next to the API
// under /api/v1, a web console at /console/ and the API reference at
// /docs, and shuts down gracefully on SIGINT and SIGTERM: the requests in
// flight finish, then the event workers finish their attempts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
	// The time zones the console shows times in, and the token
	// subcommand's -time-zone checks, load on a machine without a zone
	// database too.
	_ "time/tzdata"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// Defaults of the flags.
const (
	defaultAddr        = "127.0.0.1:8080"
	defaultDatabaseURL = "sqlite:deskkit.db"
)

// Environment variables read when the matching flag is not given.
const (
	envAddr        = "DESKKIT_ADDR"
	envDatabaseURL = "DESKKIT_DATABASE_URL"
	envRetention   = "DESKKIT_TRASH_RETENTION"
	envDemo        = "DESKKIT_DEMO"
)

// errUsage is a command line the flag package has already complained about.
var errUsage = errors.New("usage error")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runStdin(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run is runStdin with an empty standard input, for the commands that read
// none.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	return runStdin(ctx, args, strings.NewReader(""), stdout, stderr, getenv)
}

// runStdin is the whole program, with its environment passed in so that
// tests can drive it: it returns when the command is done or, for serve,
// when ctx is cancelled and the server has shut down. Only token -revoke
// reads stdin.
func runStdin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	// Lines logged for a request carry its id (X-Request-Id) as request_id.
	logger := slog.New(deskkit.LogHandler(slog.NewJSONHandler(stderr, nil)))
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "help":
		// help [COMMAND] is COMMAND -h, on stdout, where a pager reads it.
		sub := "serve"
		if len(args) > 0 {
			sub = args[0]
		}
		if len(args) > 1 || (sub != "serve" && sub != "token" && sub != "seed") {
			fmt.Fprintf(stderr, "help takes one of serve, token or seed\n")
			return errUsage
		}
		return runStdin(ctx, []string{sub, "-h"}, stdin, stdout, stdout, getenv)
	case "version":
		fmt.Fprintln(stdout, version())
		return nil
	case "serve":
		err = serveCmd(ctx, args, stdout, stderr, getenv, logger)
	case "token":
		err = tokenCmd(ctx, args, stdin, stdout, stderr, getenv, logger)
	case "seed":
		err = seedCmd(ctx, args, stdout, stderr, getenv, logger)
	default:
		fmt.Fprintf(stderr, "unknown command %q; want serve, token, seed or help\n", cmd)
		return errUsage
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// flagSet is a command's flags, and the environment variables that stand in
// for flags the command line does not give.
type flagSet struct {
	*flag.FlagSet
	getenv  func(string) string
	env     map[string]string // flag name → variable
	stdout  io.Writer         // where -version prints
	version *bool
}

func newFlagSet(name string, stdout, stderr io.Writer, getenv func(string) string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	v := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), usageHead, name)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), usageSecrets)
		fmt.Fprint(fs.Output(), usageChannelTypes())
	}
	return &flagSet{FlagSet: fs, getenv: getenv, env: map[string]string{}, stdout: stdout, version: v}
}

// usageHead starts every command's -h, naming the command whose flags follow.
const usageHead = `deskkit reference server

Usage:
  server [serve] [flags]   serve the API (the command when none is given)
  server token [flags]     issue a bearer token (creating tenant and user), a -console sign-in or -portal link, or -revoke one
  server seed [flags]      bulk-load trash entries for benchmarks
  server help [command]    this help, or a command's flags
  server -version          print the version

Flags of %s (each may be set by its environment variable instead; the flag wins):
`

// usageSecrets ends every -h: the variables read from the environment only.
const usageSecrets = `
Secrets come from the environment only, never from flags (which every process listing shows):
  ` + envSecret + `            the server secret, at least 32 characters, that codes are hashed and
                            channel secrets encrypted under; unset, one is created and kept in the
                            database in clear: set it in production
  ` + envSecretPrevious + `   the secret before a rotation, so codes in flight stay valid
  ` + envSMTPPassword + `     SMTP AUTH password
  ` + envTwilioAuthToken + ` Twilio auth token
  ` + envAliyunKeyID + `, ` + envAliyunKeySecret + `
                            Aliyun SMS AccessKey (-sms-provider aliyun)
  ` + envTencentSecretID + `, ` + envTencentSecretKey + `
                            Tencent Cloud SMS API key (-sms-provider tencent)
`

// usageChannelTypes ends every -h: the channel types the API and the
// console take, as the registry lists them.
func usageChannelTypes() string {
	var b strings.Builder
	b.WriteString("\nChannel types (channelType of POST /api/v1/event/channel, the console's Channels page):\n")
	for _, ti := range channel.TypeInfos() {
		line := ti.Summary
		if len(ti.Aliases) > 0 {
			line += " (alias " + strings.Join(ti.Aliases, ", ") + ")"
		}
		fmt.Fprintf(&b, "  %-17s %s\n", ti.Type, line)
	}
	return b.String()
}

// version is the program's version from its build information: the module
// version, the commit it was built from when the build recorded one, and
// the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(info, ok)
}

func versionOf(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "deskkit server (no build information)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	out := "deskkit server " + v
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		out += " " + settings["vcs"] + " " + rev
		if t := settings["vcs.time"]; t != "" {
			out += " " + t
		}
		if settings["vcs.modified"] == "true" {
			out += "+dirty"
		}
	} else if v == "(devel)" {
		out += ", built from source without version control information (go run, or -buildvcs=false)"
	}
	return out + ", " + info.GoVersion
}

// fromEnv makes variable stand in for flag name.
func (f *flagSet) fromEnv(name, variable string) {
	f.env[name] = variable
	fl := f.Lookup(name)
	fl.Usage += " (env " + variable + ")"
}

// parse parses args, then sets each flag the command line left out from its
// environment variable, if that is set.
func (f *flagSet) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if *f.version {
		fmt.Fprintln(f.stdout, version())
		return flag.ErrHelp // done, as after -h
	}
	if f.NArg() > 0 {
		if strings.HasPrefix(f.Arg(0), directory.TokenPrefix) {
			// Not echoed: it is a secret, and logs keep stderr.
			fmt.Fprintf(f.Output(), "unexpected argument %s...: token -revoke reads the token from stdin\n", directory.TokenPrefix)
		} else {
			fmt.Fprintf(f.Output(), "unexpected argument %q\n", f.Arg(0))
		}
		return errUsage
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for name, variable := range f.env {
		v := f.getenv(variable)
		if given[name] || v == "" {
			continue
		}
		if err := f.Set(name, v); err != nil {
			return fmt.Errorf("%s=%q: %w", variable, v, err)
		}
	}
	return nil
}

// given tells whether the command line set flag name, so that a command
// can tell "-admin=false" from no -admin at all.
func (f *flagSet) given(name string) bool {
	found := false
	f.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

func (f *flagSet) databaseURL() *string {
	p := f.String("database-url", defaultDatabaseURL, "database: sqlite:PATH, or postgres://user@host:port/db; a failover formation's hosts in turn, the primary first found: postgres://user@h1:p1,h2:p2/db?target_session_attrs=read-write (or host=h1,h2 port=p1,p2 dbname=db user=user target_session_attrs=read-write)")
	f.fromEnv("database-url", envDatabaseURL)
	return p
}

// durationFlag is a time.Duration flag that also takes a bare "0" and
// rejects negative durations.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if n, nerr := strconv.Atoi(s); nerr == nil && n == 0 {
			d, err = 0, nil
		}
	}
	if err != nil {
		return errors.New("must be a duration such as 720h or 30m")
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	*f.d = d
	return nil
}

// openDB opens and migrates the database: the trash's, the directory's and
// the demo host's tables. Every command runs the migrations, so that any of
// them works on an empty database.
func openDB(ctx context.Context, rawURL string) (*bun.DB, error) {
	return openDBWith(ctx, rawURL, database.Options{})
}

func migrateAll(ctx context.Context, db *bun.DB) error {
	if err := trash.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate trash: %w", err)
	}
	if err := directory.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate directory: %w", err)
	}
	if err := verify.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate verify: %w", err)
	}
	if err := channel.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate channels: %w", err)
	}
	if err := migrateDemo(ctx, db); err != nil {
		return fmt.Errorf("migrate demo host: %w", err)
	}
	if err := console.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate console: %w", err)
	}
	return nil
}

// goRunBinary reports whether arg0, the program's path, is a binary that go
// run built: go run links the program in a work directory under $GOTMPDIR
// (or the system's temporary directory), as go-build<digits>/b<digits>/exe/
// <name>, and removes it when the program exits, so a command printed with
// that path would name a file gone by the time someone runs it. A binary
// someone built (go build -o deskkit ./examples/server) is run as it was
// started.
func goRunBinary(arg0 string) bool {
	exe := filepath.Dir(arg0)
	b := filepath.Dir(exe)
	return filepath.Base(exe) == "exe" && goBuildDir.MatchString(filepath.Base(b)) &&
		goWorkDir.MatchString(filepath.Base(filepath.Dir(b)))
}

var (
	goBuildDir = regexp.MustCompile(`^b[0-9]+$`)
	goWorkDir  = regexp.MustCompile(`^go-build[0-9]+$`)
)

// shellWord is s as one word of a POSIX shell: as it is when it holds no
// character the shell treats specially, else quoted (shellQuote).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-=:@%,") == "" {
		return s
	}
	return shellQuote(s)
}
