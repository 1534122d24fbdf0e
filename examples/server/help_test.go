package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/deskkit/deskkit/channel"
)

// -h and help name the commands and the secrets' environment variables.
func TestHelpNamesCommandsAndSecrets(t *testing.T) {
	ctx := context.Background()
	want := []string{"serve", "token", "seed", "help", "-version",
		"DESKKIT_SECRET ", "DESKKIT_SECRET_PREVIOUS", "DESKKIT_SMTP_PASSWORD", "DESKKIT_TWILIO_AUTH_TOKEN",
		"DESKKIT_ALIYUN_ACCESS_KEY_ID", "DESKKIT_ALIYUN_ACCESS_KEY_SECRET", "DESKKIT_TENCENT_SECRET_ID", "DESKKIT_TENCENT_SECRET_KEY",
		"Channel types"}
	// Every registered channel type, with what it is and its aliases.
	for _, ti := range channel.TypeInfos() {
		want = append(want, string(ti.Type)+" ", ti.Summary)
		want = append(want, ti.Aliases...)
	}
	for _, c := range []struct {
		name       string
		args       []string
		onStdout   bool
		alsoWanted []string
	}{
		{"-h", []string{"-h"}, false, []string{"Flags of serve", "-addr", "DESKKIT_ADDR"}},
		{"serve -h", []string{"serve", "-h"}, false, []string{"Flags of serve", "-retention",
			"-metrics-addr", envMetricsAddr, "-sms-templates", "-sms-sign-name", "-tencent-sms-app-id", "aliyun or tencent", "-pprof", envPprof, envOTLPEndpoint, envOTLPTracesEndpoint, "-default-language", envDefaultLanguage}},
		{"help", []string{"help"}, true, []string{"Flags of serve", "-addr"}},
		{"help token", []string{"help", "token"}, true, []string{"Flags of token", "-username", "-revoke", "-locale", "-tenant-locale", "-time-zone", "-tenant-time-zone", "-console", "-portal"}},
		{"help seed", []string{"help", "seed"}, true, []string{"Flags of seed", "-entries"}},
		{"token -h", []string{"token", "-h"}, false, []string{"Flags of token", "-tenant"}},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(ctx, c.args, &stdout, &stderr, env(nil)); err != nil {
			t.Errorf("%s: %v, want nil", c.name, err)
			continue
		}
		out, other := stderr.String(), stdout.String()
		if c.onStdout {
			out, other = other, out
		}
		if other != "" {
			t.Errorf("%s: wrote %q on the other stream", c.name, other)
		}
		for _, w := range append(want, c.alsoWanted...) {
			if !strings.Contains(out, w) {
				t.Errorf("%s does not mention %q:\n%s", c.name, w, out)
			}
		}
	}
	for _, args := range [][]string{{"help", "bogus"}, {"help", "token", "seed"}} {
		if err := run(ctx, args, io.Discard, io.Discard, env(nil)); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// -version, version and a command's -version print one line with the
// version from the build information, and do nothing else.
func TestVersion(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"-version"}, {"version"}, {"token", "-version"}, {"seed", "-version"}} {
		var stdout, stderr bytes.Buffer
		if err := run(ctx, args, &stdout, &stderr, env(nil)); err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		got := stdout.String()
		if !strings.HasPrefix(got, "deskkit server ") || !strings.HasSuffix(got, runtime.Version()+"\n") || strings.Count(got, "\n") != 1 || stderr.Len() != 0 {
			t.Errorf("%q printed %q (stderr %q); want one line: deskkit server VERSION ..., %s", args, got, stderr.String(), runtime.Version())
		}
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			"deskkit server v0.3.0, go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0bd7ed9f00"}, {Key: "vcs.time", Value: "2026-11-23T21:53:51Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "deskkit server (devel) git 0bd7ed9f00 2026-11-23T21:53:51Z+dirty, go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"deskkit server (devel), built from source without version control information (go run, or -buildvcs=false), go1.26.8"},
		{nil, "deskkit server (no build information)"},
	} {
		if got := versionOf(c.info, c.info != nil); got != c.want {
			t.Errorf("versionOf = %q, want %q", got, c.want)
		}
	}
}

// The README says which Go builds deskkit: the version go.mod asks for.
func TestReadmeStatesGoVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Go " + string(m[1]) + " or later"; !bytes.Contains(readme, []byte(want)) {
		t.Errorf("README.md does not say %q (go.mod: go %s)", want, m[1])
	}
}

// Every flag of serve is in the flag table of the server's manual
// (README.md), so that a new flag (-metrics-addr, -pprof, ...) cannot ship
// undocumented.
func TestServeFlagsDocumented(t *testing.T) {
	var help bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &help, io.Discard, env(nil)); err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^  (-[a-z-]+)`).FindAllStringSubmatch(help.String(), -1)
	if len(flags) < 20 {
		t.Fatalf("found %d flags in serve's help, want them all:\n%s", len(flags), help.String())
	}
	page, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range flags {
		f := m[1]
		if f == "-version" {
			continue // a command as much as a flag: in Usage, not in the table
		}
		if !regexp.MustCompile(`(?m)^\| [^\n]*` + "`" + regexp.QuoteMeta(f) + "`").Match(page) {
			t.Errorf("README.md's flag table lacks %s", f)
		}
	}
}
