package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// goRun is how the printed commands run the server from a checkout.
const goRun = "go run ./examples/server"

// firstStart is a server started in-process as a newcomer starts it, over a
// fresh SQLite file: its printed lines (up to the last demo line) and log.
type firstStart struct {
	out  string
	log  *lockedBuffer
	stop func() error // stops the server; returns run's error
}

// startFirst runs the server with args and vars until it has printed its
// demo lines; a start that fails returns run's error as stop's.
func startFirst(t *testing.T, args []string, vars map[string]string) firstStart {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	log := &lockedBuffer{}
	done := make(chan error, 1)
	args = append([]string{"-addr", "127.0.0.1:0", "-database-url", "sqlite:" + filepath.Join(t.TempDir(), "deskkit.db")}, args...)
	go func() {
		done <- run(ctx, args, outW, log, env(vars))
		outW.Close()
	}()
	var out strings.Builder
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "This token is shown once") {
			break
		}
	}
	go io.Copy(io.Discard, outR) //nolint:errcheck // drain whatever else is printed
	var once bool
	var err error
	stop := func() error {
		if !once {
			once = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return firstStart{out: out.String(), log: log, stop: stop}
}

// curlLine is a curl command the server printed: its method, body and URL.
var curlLine = regexp.MustCompile(`(?m)^  curl -H 'Authorization: Bearer (dk_[A-Za-z0-9_-]+)' -H 'Content-Type: application/json'(?: -X (\w+))? -d '([^']*)' '([^']*)'$`)

// printedCall finds the printed curl line whose URL ends in path, and
// sends it as curl would (without the shell: the line's quotes hold its
// words).
func printedCall(t *testing.T, out, path string, edit func(body string) string) (int, string) {
	t.Helper()
	for _, m := range curlLine.FindAllStringSubmatch(out, -1) {
		token, method, body, url := m[1], m[2], m[3], m[4]
		if !strings.HasSuffix(url, path) {
			continue
		}
		if method == "" {
			method = http.MethodPost // curl -d
		}
		if edit != nil {
			body = edit(body)
		}
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	t.Fatalf("no printed curl line calls %s:\n%s", path, out)
	return 0, ""
}

// mailLines are the log's "verify: mail not sent, logged" lines.
func mailLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(log, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "verify: mail not sent, logged" {
			out = append(out, m)
		}
	}
	return out
}

// TestFirstStartLeadsToACode: the first start's lines, followed as printed
// with nothing configured (development mode), lead to a code someone can
// read: the BIND_EMAIL send logs the code as "code", the lines say where,
// and the printed PATCH with that code adds the address.
func TestFirstStartLeadsToACode(t *testing.T) {
	s := startFirst(t, nil, nil)
	if !strings.Contains(s.out, `the line "verify: mail not sent, logged" has it as "code"`) {
		t.Errorf("the first start's lines do not say where the code is:\n%s", s.out)
	}
	if !strings.Contains(s.log.String(), `"msg":"verification codes are logged in clear, as \"code\": development only"`) {
		t.Errorf("the log does not mark that codes are shown:\n%s", s.log)
	}
	if status, body := printedCall(t, s.out, "/api/v1/user/current/email/send", nil); status != http.StatusOK {
		t.Fatalf("the printed BIND_EMAIL send: %d %s", status, body)
	}
	lines := mailLines(t, s.log.String())
	if len(lines) != 1 {
		t.Fatalf("want one mail logged, got %v\n%s", lines, s.log)
	}
	code, _ := lines[0]["code"].(string)
	if !regexp.MustCompile(`^[0-9]{6}$`).MatchString(code) || lines[0]["to"] != "demo@example.com" {
		t.Fatalf("the logged mail carries no code: %v", lines[0])
	}
	status, body := printedCall(t, s.out, "/api/v1/user/current/email", func(b string) string {
		return strings.Replace(b, `"verificationCode":"CODE"`, `"verificationCode":"`+code+`"`, 1)
	})
	if status != http.StatusOK || !strings.Contains(body, `"email":"demo@example.com"`) {
		t.Errorf("the printed PATCH with the logged code: %d %s", status, body)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestProductionNeverLogsCodes: with DESKKIT_SECRET set, or -dev-log-codes
// =false, the mail is logged without its code and the lines say so; with
// DESKKIT_SECRET, -dev-log-codes (flag or variable) is refused by name.
func TestProductionNeverLogsCodes(t *testing.T) {
	secret := map[string]string{envSecret: strings.Repeat("s", 32)}
	for name, c := range map[string]struct {
		args []string
		vars map[string]string
	}{
		"secret":              {nil, secret},
		"dev-log-codes=false": {[]string{"-dev-log-codes=false"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			s := startFirst(t, c.args, c.vars)
			if !strings.Contains(s.out, "This configuration logs no code") {
				t.Errorf("the lines do not say that no code is logged:\n%s", s.out)
			}
			if status, body := printedCall(t, s.out, "/api/v1/user/current/email/send", nil); status != http.StatusOK {
				t.Fatalf("the printed BIND_EMAIL send: %d %s", status, body)
			}
			lines := mailLines(t, s.log.String())
			if len(lines) != 1 {
				t.Fatalf("want one mail logged, got %v", lines)
			}
			if _, shown := lines[0]["code"]; shown || lines[0]["text"] != nil || !strings.Contains(lines[0]["subject"].(string), "[code]") {
				t.Errorf("a code was logged: %v", lines[0])
			}
			if err := s.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
	for name, c := range map[string]struct {
		args []string
		vars map[string]string
	}{
		"flag":     {[]string{"-dev-log-codes"}, secret},
		"variable": {nil, map[string]string{envSecret: secret[envSecret], envDevLogCodes: "true"}},
	} {
		t.Run("refused by "+name, func(t *testing.T) {
			// A server that is not refused serves until cancelled: it is
			// stopped once it says it listens.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-database-url", "sqlite:" + filepath.Join(t.TempDir(), "x.db")}, c.args...), outW, io.Discard, env(c.vars))
				outW.Close()
			}()
			started := false
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "deskkit is listening on ") {
					started = true
					break
				}
			}
			go io.Copy(io.Discard, outR) //nolint:errcheck // drain
			cancel()
			err := <-done
			if started {
				t.Errorf("the server started with codes shown and %s set", envSecret)
			}
			want := "-dev-log-codes (DESKKIT_DEV_LOG_CODES) shows verification codes in the log: refused with DESKKIT_SECRET set, which marks a production configuration"
			if err == nil || err.Error() != want {
				t.Errorf("run = %v, want %q", err, want)
			}
		})
	}
}

// TestSettleLogCodes: codes are shown in development mode (no secret, no
// SMTP server, the log SMS provider) unless -dev-log-codes=false, outside
// it only with -dev-log-codes, and never with DESKKIT_SECRET.
func TestSettleLogCodes(t *testing.T) {
	smtp := func(c *verifyConfig) { c.smtp.Addr = "127.0.0.1:25" }
	smsHTTP := func(c *verifyConfig) { c.smsProvider = "http" }
	secret := func(c *verifyConfig) { c.secret = []byte(strings.Repeat("s", 32)) }
	for _, c := range []struct {
		name       string
		edit       []func(*verifyConfig)
		given, set bool
		want       bool
		refused    bool
	}{
		{name: "development", want: true},
		{name: "development, hidden", given: true, set: false, want: false},
		{name: "SMTP server", edit: []func(*verifyConfig){smtp}},
		{name: "SMS gateway", edit: []func(*verifyConfig){smsHTTP}},
		{name: "secret", edit: []func(*verifyConfig){secret}},
		{name: "SMTP server, shown", edit: []func(*verifyConfig){smtp}, given: true, set: true, want: true},
		{name: "secret, shown", edit: []func(*verifyConfig){secret}, given: true, set: true, refused: true},
		{name: "secret and SMTP, shown", edit: []func(*verifyConfig){secret, smtp}, given: true, set: true, refused: true},
		{name: "secret, hidden", edit: []func(*verifyConfig){secret}, given: true, set: false, want: false},
	} {
		cfg := verifyConfig{smsProvider: "log", devLogCodes: c.set}
		for _, e := range c.edit {
			e(&cfg)
		}
		want := c.want
		err := cfg.settleLogCodes(c.given)
		switch {
		case c.refused && err == nil:
			t.Errorf("%s: accepted", c.name)
		case !c.refused && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !c.refused && cfg.devLogCodes != want:
			t.Errorf("%s: codes shown %v, want %v", c.name, cfg.devLogCodes, want)
		}
	}
}

// TestServerInvocation: the printed commands run the program as it was
// started, but a binary of go run (gone when it exits) or of go test,
// which are named as go run ./examples/server.
func TestServerInvocation(t *testing.T) {
	for _, c := range []struct{ arg0, want string }{
		{"", goRun},
		{"/tmp/go-build2716392804/b001/exe/server", goRun},
		{"/var/folders/x7/k2/T/go-build184/b001/exe/server", goRun},
		{"/home/ann/.cache/gotmp/go-build9/b021/exe/server", goRun},
		{"/tmp/go-build2716392804/b001/server.test", goRun},
		{"./deskkit", "./deskkit"},
		{"deskkit", "deskkit"},
		{"/usr/local/bin/deskkit", "/usr/local/bin/deskkit"},
		{"/home/ann/go-builds/deskkit", "/home/ann/go-builds/deskkit"},
		{"/home/ann/go-build/exe/server", "/home/ann/go-build/exe/server"},
		{"/opt/my tools/deskkit", "'/opt/my tools/deskkit'"},
		{"/opt/ann's/deskkit", `'/opt/ann'\''s/deskkit'`},
	} {
		if got := serverInvocation(c.arg0); got != c.want {
			t.Errorf("serverInvocation(%q) = %q, want %q", c.arg0, got, c.want)
		}
	}
}

// TestBuiltBinaryPrintsItsName: a binary built with go build prints its
// own invocation in the token commands of its first start, not go run's.
func TestBuiltBinaryPrintsItsName(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server")
	}
	bin := buildServer(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-database-url", "sqlite:"+filepath.Join(dir, "deskkit.db"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DESKKIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stderr = io.Discard
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "This token is shown once") {
			break
		}
	}
	go io.Copy(io.Discard, stdout) //nolint:errcheck // drain
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the server did not stop cleanly: %v", err)
	}
	for _, want := range []string{
		"  " + bin + " token -tenant demo -username demo -console",
		"  " + bin + " token -tenant demo -username demo -portal trash",
	} {
		if !strings.Contains(out.String(), want+" ") && !strings.Contains(out.String(), want+"\n") {
			t.Errorf("the binary's first start lacks\n%s\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "go run") {
		t.Errorf("a built binary printed go run lines:\n%s", out.String())
	}
}
