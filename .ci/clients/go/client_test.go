package clients

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"deskkit.test/clients/deskkitclient"
)

// TestGeneratedClient drives the reference server, on SQLite and on
// PostgreSQL, through the client oapi-codegen generated from the
// committed document, reading typed fields of data: a trash search's
// total and first entry, the current user's name, a channel list.
func TestGeneratedClient(t *testing.T) {
	bin := buildServer(t)
	t.Run("sqlite", func(t *testing.T) {
		checkServer(t, bin, "sqlite:"+filepath.Join(t.TempDir(), "deskkit.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		checkServer(t, bin, postgresDatabase(t))
	})
}

func checkServer(t *testing.T, bin, dbURL string) {
	base := startServer(t, bin, dbURL)
	token := runOut(t, bin, "token", "-database-url", dbURL, "-tenant", "acme", "-username", "ann", "-admin")
	ctx := context.Background()
	auth := func(ctx context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	c, err := deskkitclient.NewClientWithResponses(base, deskkitclient.WithRequestEditorFn(auth))
	if err != nil {
		t.Fatal(err)
	}

	// A task of the demo host, deleted into the trash (the demo routes are
	// the host's own, not in the document).
	var sprint, task struct {
		Data struct{ ID int64 } `json:"data"`
	}
	demo(t, base, token, http.MethodPost, "/api/v1/demo/sprint", `{"projectId":1,"name":"S1"}`, &sprint)
	demo(t, base, token, http.MethodPost, "/api/v1/demo/task", fmt.Sprintf(`{"projectId":1,"sprintId":%d,"name":"Write the client test"}`, sprint.Data.ID), &task)
	demo(t, base, token, http.MethodDelete, fmt.Sprintf("/api/v1/demo/task/%d", task.Data.ID), "", nil)

	name := "client"
	search, err := c.SearchTrashWithResponse(ctx, &deskkitclient.SearchTrashParams{TargetType: "TASK", TargetName: &name})
	if err != nil {
		t.Fatal(err)
	}
	if search.JSON200 == nil {
		t.Fatalf("search: %d %s", search.StatusCode(), search.Body)
	}
	page := search.JSON200.Data
	if page.Total != 1 || len(page.List) != 1 || page.List[0].TargetName != "Write the client test" || page.List[0].TargetId != task.Data.ID {
		t.Errorf("search: total %d, list %+v; want the deleted task %d", page.Total, page.List, task.Data.ID)
	}

	user, err := c.GetCurrentUserWithResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if user.JSON200 == nil || user.JSON200.Data.Username != "ann" || user.JSON200.Data.TenantName != "acme" {
		t.Errorf("current user: %d %s", user.StatusCode(), user.Body)
	}

	added, err := c.AddEventChannelWithResponse(ctx, deskkitclient.ChannelAdd{
		ChannelType: "EMAIL", Name: "Ops mail", Address: "ops@example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	if added.JSON200 == nil {
		t.Fatalf("add a channel: %d %s", added.StatusCode(), added.Body)
	}
	list, err := c.ListAllEventChannelsWithResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if list.JSON200 == nil {
		t.Fatalf("list channels: %d %s", list.StatusCode(), list.Body)
	}
	if ch := list.JSON200.Data; len(ch) != 1 || ch[0].Name != "Ops mail" || ch[0].Id != added.JSON200.Data.Id || !ch[0].Enabled {
		t.Errorf("channels: %+v; want the one added, %d", ch, added.JSON200.Data.Id)
	}
}

// buildServer builds the reference server from the repository this folder
// is in.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "server")
	cmd := exec.Command("go", "build", "-o", bin, "./examples/server")
	cmd.Dir = filepath.Join("..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the reference server: %v\n%s", err, out)
	}
	return bin
}

// startServer starts the server on a free loopback port over dbURL and
// returns its base URL once it listens; it is stopped when the test ends.
func startServer(t *testing.T, bin, dbURL string) string {
	t.Helper()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-database-url", dbURL)
	cmd.Env = append(os.Environ(), "DESKKIT_SECRET="+strings.Repeat("c", 32))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if base, ok := strings.CutPrefix(lines.Text(), "deskkit is listening on "); ok {
			go func() {
				for lines.Scan() {
				}
			}()
			return strings.TrimSpace(base)
		}
	}
	t.Fatalf("the server did not say where it listens: %v\n%s", lines.Err(), stderr.String())
	return ""
}

// runOut runs bin with args and returns its standard output, trimmed.
func runOut(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DESKKIT_SECRET="+strings.Repeat("c", 32))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// demo calls one of the demo host's routes and decodes its answer into
// v, if v is not nil.
func demo(t *testing.T, base, token, method, path, body string, v any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
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
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, buf.String())
	}
	if v != nil {
		if err := json.Unmarshal(buf.Bytes(), v); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// postgresDatabase creates a database of its own on the server
// DESKKIT_TEST_DATABASE_URL names and returns its URL; it is dropped when
// the test ends. Without the variable the test skips, unless
// DESKKIT_REQUIRE_POSTGRES=1.
func postgresDatabase(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("DESKKIT_TEST_DATABASE_URL")
	if dsn == "" {
		if os.Getenv("DESKKIT_REQUIRE_POSTGRES") == "1" {
			t.Fatal("DESKKIT_TEST_DATABASE_URL is unset and DESKKIT_REQUIRE_POSTGRES=1")
		}
		t.Skip("PostgreSQL not available: DESKKIT_TEST_DATABASE_URL is unset")
	}
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	t.Cleanup(func() { admin.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "clients_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
