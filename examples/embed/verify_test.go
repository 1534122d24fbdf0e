package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	"golang.org/x/crypto/bcrypt"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// logBook is the app's log as JSON lines, kept for the test to read the
// codes the log sender wrote. The app writes it from request goroutines.
type logBook struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBook) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// logLine is a line of the log sender.
type logLine struct {
	Msg     string `json:"msg"`
	To      string `json:"to"`
	BizKey  string `json:"bizKey"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

func (l *logBook) lines(t *testing.T) []logLine {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for s := range strings.Lines(l.buf.String()) {
		var line logLine
		if err := json.Unmarshal([]byte(s), &line); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		out = append(out, line)
	}
	return out
}

var sixDigits = regexp.MustCompile(`\b\d{6}\b`)

// code is the code in the last message to address for bizKey.
func (l *logBook) code(t *testing.T, to string, b verify.BizKey) string {
	t.Helper()
	lines := l.lines(t)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].To == to && lines[i].BizKey == string(b) {
			if c := sixDigits.FindString(lines[i].Text); c != "" {
				return c
			}
		}
	}
	t.Fatalf("no %s code to %s in the log", b, to)
	return ""
}

// envelope is deskkit's answer.
type envelope struct {
	Code string          `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// verifyHost is the host, run over loopback, with its log and database.
type verifyHost struct {
	t    *testing.T
	base string
	db   *bun.DB
	log  *logBook
}

// startVerifyHost runs the host with a log the test reads, and adds to the
// seed a colleague of Ada's (Grace, user 2 of Acme) and a user of another
// tenant (Alan, user 3 of Globex).
func startVerifyHost(t *testing.T) *verifyHost {
	t.Helper()
	log := &logBook{}
	srv, db := startHostWith(t, &appOptions{Logger: slog.New(slog.NewJSONHandler(log, nil)), PasswordCost: bcrypt.MinCost})
	addColleagues(t, db)
	return &verifyHost{t: t, base: srv.URL, db: db, log: log}
}

func addColleagues(t *testing.T, db *bun.DB) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.NewInsert().Model(&tenantRow{ID: 2, Name: "Globex"}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	others := []userRow{
		{ID: 2, TenantID: 1, Username: "grace", Mobile: "+8613900139000", Country: "CN", Email: "grace@example.com"},
		{ID: 3, TenantID: 2, Username: "alan", Email: "alan@example.com"},
	}
	if _, err := db.NewInsert().Model(&others).Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// do sends a request as Ada (key "" sends none) with a JSON body (nil:
// none), and returns the status and the body.
func (h *verifyHost) do(key, method, path string, body any) (int, string) {
	h.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			h.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.base+path, r)
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// api calls a deskkit route as Ada and returns the status and envelope.
func (h *verifyHost) api(method, path string, body any) (int, envelope) {
	h.t.Helper()
	status, b := h.do("key-ada", method, path, body)
	var env envelope
	if err := json.Unmarshal([]byte(b), &env); err != nil {
		h.t.Fatalf("%s %s: %d, not an envelope: %v\n%s", method, path, status, err, b)
	}
	return status, env
}

// ok is api for a call that must succeed; it decodes the data into out
// unless out is nil.
func (h *verifyHost) ok(method, path string, body, out any) {
	h.t.Helper()
	status, env := h.api(method, path, body)
	if status != http.StatusOK || env.Code != "S" {
		h.t.Fatalf("%s %s: %d %s %q", method, path, status, env.Code, env.Msg)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			h.t.Fatal(err)
		}
	}
}

// sendEmail sends Ada a code for b to address and reads it from the log.
func (h *verifyHost) sendEmail(b verify.BizKey, address string) string {
	h.t.Helper()
	h.ok(http.MethodPost, "/api/v1/user/current/email/send", map[string]any{"bizKey": b, "toAddress": [][]string{{address}}}, nil)
	return h.log.code(h.t, address, b)
}

// linkEmail sends Ada a code for b to address and checks it: the answer is
// a link secret.
func (h *verifyHost) linkEmail(b verify.BizKey, address string) string {
	h.t.Helper()
	code := h.sendEmail(b, address)
	var link verify.Link
	h.ok(http.MethodGet, "/api/v1/user/current/email/check?"+url.Values{
		"bizKey": {string(b)}, "email": {address}, "verificationCode": {code},
	}.Encode(), nil, &link)
	return link.Secret
}

// linkSMS is linkEmail by text message.
func (h *verifyHost) linkSMS(b verify.BizKey, mobile, country string) string {
	h.t.Helper()
	h.ok(http.MethodPost, "/api/v1/user/current/sms/send", map[string]any{"bizKey": b, "mobile": mobile, "country": country}, nil)
	var link verify.Link
	h.ok(http.MethodGet, "/api/v1/user/current/sms/check?"+url.Values{
		"bizKey": {string(b)}, "mobile": {mobile}, "country": {country}, "verificationCode": {h.log.code(h.t, mobile, b)},
	}.Encode(), nil, &link)
	return link.Secret
}

// row reads Ada's row of the host's table.
func (h *verifyHost) row() userRow {
	h.t.Helper()
	var r userRow
	if err := h.db.NewSelect().Model(&r).Where("u.id = 1").Scan(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// adaDetail is Ada as the seed makes her and GET /user/current shows her.
var adaDetail = verify.Detail{
	ID: 1, TenantID: 1, TenantName: "Acme", Username: "ada",
	FirstName: "Ada", LastName: "Lovelace", FullName: "Ada Lovelace",
	Mobile: "+8613800138000", Country: "CN", ITC: 86, Email: "ada@example.com",
	Title: "Analyst", Gender: "FEMALE",
}

// TestCurrentUser: deskkit's /user/current shows the host's own row.
func TestCurrentUser(t *testing.T) {
	t.Parallel()
	h := startVerifyHost(t)

	var d verify.Detail
	h.ok(http.MethodGet, "/api/v1/user/current", nil, &d)
	if diff := cmp.Diff(adaDetail, d); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	var tenant verify.TenantDetail
	h.ok(http.MethodGet, "/api/v1/user/current/tenant", nil, &tenant)
	if diff := cmp.Diff(verify.TenantDetail{ID: 1, Name: "Acme"}, tenant); diff != "" {
		t.Errorf("tenant (-want +got):\n%s", diff)
	}

	// A change the host makes in its table is what deskkit shows next.
	if _, err := h.db.NewUpdate().Model((*userRow)(nil)).Set("title = 'Countess'").Where("u.id = 1").Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.ok(http.MethodGet, "/api/v1/user/current", nil, &d)
	if d.Title != "Countess" {
		t.Errorf("title after the host's update = %q", d.Title)
	}
}

// TestModifyEmail runs MODIFY_EMAIL end to end: a code to the current
// address buys a link secret, a code to the new address and the secret
// change it in the host's table, and a notice goes to the old address.
func TestModifyEmail(t *testing.T) {
	t.Parallel()
	h := startVerifyHost(t)
	const newEmail = "ada@lovelace.example"

	link := h.linkEmail(verify.ModifyEmail, "ada@example.com")
	code := h.sendEmail(verify.ModifyEmail, newEmail)
	var d verify.Detail
	h.ok(http.MethodPatch, "/api/v1/user/current/email", map[string]any{
		"bizKey": verify.ModifyEmail, "email": newEmail, "verificationCode": code, "linkSecret": link,
	}, &d)
	want := adaDetail
	want.Email = newEmail
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("detail after the change (-want +got):\n%s", diff)
	}
	if got := h.row().Email; got != newEmail {
		t.Errorf("the host's row has e-mail %q, want %q", got, newEmail)
	}

	var notices []logLine
	for _, l := range h.log.lines(t) {
		if l.To == "ada@example.com" && strings.Contains(l.Subject, "was changed") {
			notices = append(notices, l)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0].Text, "a***@lovelace.example") {
		t.Errorf("notices to the old address: %+v, want one naming the masked new address", notices)
	}

	// The secret was spent with the change.
	code = h.sendEmail(verify.ModifyEmail, "ada@babbage.example")
	status, env := h.api(http.MethodPatch, "/api/v1/user/current/email", map[string]any{
		"bizKey": verify.ModifyEmail, "email": "ada@babbage.example", "verificationCode": code, "linkSecret": link,
	})
	if status != http.StatusForbidden {
		t.Errorf("a change with a spent link secret: %d %+v, want 403", status, env)
	}
	if got := h.row().Email; got != newEmail {
		t.Errorf("after the refused change the row has %q", got)
	}
}

// TestTaken: the host's unique indexes and Holder answer 409 for a
// username or address another user of the tenant has, and none for one of
// another tenant's users.
func TestTaken(t *testing.T) {
	t.Parallel()
	h := startVerifyHost(t)

	status, env := h.api(http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "grace"})
	if status != http.StatusConflict || env.Msg != errUsernameTaken.ClientMessage() {
		t.Errorf("PATCH username grace: %d %+v, want 409 with %q", status, env, errUsernameTaken.ClientMessage())
	}
	if got := h.row().Username; got != "ada" {
		t.Errorf("username after the refused change = %q", got)
	}
	status, env = h.api(http.MethodPost, "/api/v1/user/current/email/send", map[string]any{
		"bizKey": verify.ModifyEmail, "toAddress": [][]string{{"grace@example.com"}},
	})
	if status != http.StatusConflict {
		t.Errorf("a code to Grace's address: %d %+v, want 409", status, env)
	}

	// Alan is of another tenant: his username is free in Acme.
	var d verify.Detail
	h.ok(http.MethodPatch, "/api/v1/user/current", map[string]any{"username": "alan"}, &d)
	if d.Username != "alan" || h.row().Username != "alan" {
		t.Errorf("username after PATCH alan: %q, row %q", d.Username, h.row().Username)
	}
}

// TestHostUsers calls the host's verify.Directory directly, as the
// Verifier does, in a transaction: tenant isolation, the compare-and-set of
// SetMobile and SetEmail, and the conflicts of the unique indexes. Each
// case's transaction is rolled back after it, so that each starts from the
// seed; Ada's row is read in the transaction.
func TestHostUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := startHostWith(t, &appOptions{Logger: slog.New(slog.DiscardHandler)})
	addColleagues(t, db)
	users := hostUsers{db}
	ada := userRow{
		ID: 1, TenantID: 1, Username: "ada", FirstName: "Ada", LastName: "Lovelace", FullName: "Ada Lovelace",
		Mobile: "+8613800138000", Country: "CN", Email: "ada@example.com", Title: "Analyst", Gender: "FEMALE",
	}
	str := func(s string) *string { return &s }
	cases := []struct {
		name    string
		call    func(u hostUsers, db bun.IDB) error
		wantErr error // nil: success
		change  func(*userRow)
	}{
		{"SetEmail", func(u hostUsers, db bun.IDB) error {
			return u.SetEmail(ctx, db, 1, 1, "ada@example.com", "ada@lovelace.example")
		}, nil, func(u *userRow) { u.Email = "ada@lovelace.example" }},
		{"SetEmail with a stale old", func(u hostUsers, db bun.IDB) error {
			return u.SetEmail(ctx, db, 1, 1, "ada@old.example", "ada@lovelace.example")
		}, deskkit.ErrConflict, nil},
		{"SetEmail with old empty for a user who has one", func(u hostUsers, db bun.IDB) error {
			return u.SetEmail(ctx, db, 1, 1, "", "ada@lovelace.example")
		}, deskkit.ErrConflict, nil},
		{"SetEmail to Grace's address", func(u hostUsers, db bun.IDB) error {
			return u.SetEmail(ctx, db, 1, 1, "ada@example.com", "grace@example.com")
		}, deskkit.ErrConflict, nil},
		{"SetEmail to the address of another tenant's user", func(u hostUsers, db bun.IDB) error {
			return u.SetEmail(ctx, db, 1, 1, "ada@example.com", "alan@example.com")
		}, nil, func(u *userRow) { u.Email = "alan@example.com" }},
		{"SetEmail of user 1 in another tenant", func(u hostUsers, db bun.IDB) error {
			return u.SetEmail(ctx, db, 2, 1, "ada@example.com", "ada@lovelace.example")
		}, deskkit.ErrNotFound, nil},
		{"SetEmail of an unknown user", func(u hostUsers, db bun.IDB) error {
			return u.SetEmail(ctx, db, 1, 99, "", "ada@lovelace.example")
		}, deskkit.ErrNotFound, nil},
		{"SetMobile", func(u hostUsers, db bun.IDB) error {
			return u.SetMobile(ctx, db, 1, 1, "+8613800138000", "+4915112345678", "DE")
		}, nil, func(u *userRow) { u.Mobile, u.Country = "+4915112345678", "DE" }},
		{"SetMobile with a stale old", func(u hostUsers, db bun.IDB) error {
			return u.SetMobile(ctx, db, 1, 1, "+8613700137000", "+4915112345678", "DE")
		}, deskkit.ErrConflict, nil},
		{"SetMobile to Grace's number", func(u hostUsers, db bun.IDB) error {
			return u.SetMobile(ctx, db, 1, 1, "+8613800138000", "+8613900139000", "CN")
		}, deskkit.ErrConflict, nil},
		{"SetMobile to none", func(u hostUsers, db bun.IDB) error {
			return u.SetMobile(ctx, db, 1, 1, "+8613800138000", "", "")
		}, nil, func(u *userRow) { u.Mobile, u.Country = "", "" }},
		{"UpdateProfile", func(u hostUsers, db bun.IDB) error {
			return u.UpdateProfile(ctx, db, 1, 1, verify.Profile{Username: str("countess"), Title: str(""), Address: str("London")})
		}, nil, func(u *userRow) { u.Username, u.Title, u.Address = "countess", "", "London" }},
		{"UpdateProfile to Grace's username", func(u hostUsers, db bun.IDB) error {
			return u.UpdateProfile(ctx, db, 1, 1, verify.Profile{Username: str("grace"), Title: str("Countess")})
		}, deskkit.ErrConflict, nil},
		{"UpdateProfile of user 1 in another tenant", func(u hostUsers, db bun.IDB) error {
			return u.UpdateProfile(ctx, db, 2, 1, verify.Profile{Title: str("Countess")})
		}, deskkit.ErrNotFound, nil},
		{"UpdateProfile of nothing for an unknown user", func(u hostUsers, db bun.IDB) error {
			return u.UpdateProfile(ctx, db, 1, 99, verify.Profile{})
		}, deskkit.ErrNotFound, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck // the point: nothing is kept

			err = c.call(users, tx)
			if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("err = %v, want %v", err, c.wantErr)
			}
			want := ada
			if c.change != nil {
				c.change(&want)
			}
			var got userRow
			if err := tx.NewSelect().Model(&got).Where("u.id = 1").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Ada after (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostUsersReadsAndNull: reads are confined to the tenant, and an
// address cleared is NULL, which any number of users may share.
func TestHostUsersReadsAndNull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := startHostWith(t, &appOptions{Logger: slog.New(slog.DiscardHandler)})
	addColleagues(t, db)
	users := hostUsers{db}

	if _, err := users.User(ctx, 2, 1); !errors.Is(err, deskkit.ErrNotFound) {
		t.Errorf("User of tenant 2, id 1: %v, want ErrNotFound", err)
	}
	if _, err := users.Tenant(ctx, 9); !errors.Is(err, deskkit.ErrNotFound) {
		t.Errorf("Tenant 9: %v, want ErrNotFound", err)
	}
	for _, c := range []struct {
		tenant  int64
		kind    verify.Kind
		address string
		want    int64
	}{
		{1, verify.KindEmail, "grace@example.com", 2},
		{1, verify.KindSMS, "+8613800138000", 1},
		{1, verify.KindEmail, "alan@example.com", 0}, // Globex's
		{2, verify.KindEmail, "alan@example.com", 3},
		{2, verify.KindSMS, "+8613800138000", 0},
	} {
		if got, err := users.Holder(ctx, c.tenant, c.kind, c.address); err != nil || got != c.want {
			t.Errorf("Holder(%d, %s, %s) = %d, %v; want %d", c.tenant, c.kind, c.address, got, err, c.want)
		}
	}

	for _, id := range []int64{1, 2} {
		old := map[int64]string{1: "+8613800138000", 2: "+8613900139000"}[id]
		if err := users.SetMobile(ctx, db, 1, id, old, "", ""); err != nil {
			t.Fatalf("clear the mobile of user %d: %v", id, err)
		}
	}
	n, err := db.NewSelect().Model((*userRow)(nil)).Where("u.tenant_id = 1 AND u.mobile IS NULL").Count(ctx)
	if err != nil || n != 2 {
		t.Errorf("users of Acme without a mobile, stored NULL: %d, %v; want 2", n, err)
	}
	if got, err := users.Holder(ctx, 1, verify.KindSMS, ""); err != nil || got != 0 {
		t.Errorf(`Holder of "" = %d, %v; want 0`, got, err)
	}
}

// TestHostUsersWritesThroughTx: SetEmail writes through the transaction it
// is given, not through its own database handle: the change is seen inside
// the transaction only, and a rollback takes it back.
func TestHostUsersWritesThroughTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := startHostWith(t, &appOptions{Logger: slog.New(slog.DiscardHandler)})
	users := hostUsers{db}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // rolled back below; this is for a t.Fatal
	if err := users.SetEmail(ctx, tx, 1, 1, "ada@example.com", "ada@tx.example"); err != nil {
		t.Fatal(err)
	}
	var inside string
	if err := tx.NewSelect().Model((*userRow)(nil)).Column("email").Where("u.id = 1").Scan(ctx, &inside); err != nil {
		t.Fatal(err)
	}
	outside, err := users.User(ctx, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if inside != "ada@tx.example" || outside.Email != "ada@example.com" {
		t.Errorf("before the rollback: %q inside the transaction, %q outside; want the new address inside only", inside, outside.Email)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	after, err := users.User(ctx, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if after.Email != "ada@example.com" {
		t.Errorf("after the rollback: %q, want ada@example.com", after.Email)
	}
}

// TestSetPassword runs the host's own flow that a PASSWORD_UPDATE code
// guards: a fresh link secret changes the password once; a spent one, or
// one won for another bizKey, is 403 and changes nothing.
func TestSetPassword(t *testing.T) {
	t.Parallel()
	h := startVerifyHost(t)

	secret := h.linkEmail(verify.PasswordUpdate, "ada@example.com")
	signin := h.linkSMS("SIGNIN", "+8613800138000", "CN")
	const password = "correct horse battery staple"
	steps := []struct {
		name     string
		key      string
		body     any
		status   int
		password string // the password the stored hash must match afterwards; "" none
	}{
		{"no key", "", map[string]string{"linkSecret": secret, "password": password}, http.StatusUnauthorized, ""},
		{"not JSON", "key-ada", "linkSecret", http.StatusBadRequest, ""},
		{"an unknown field", "key-ada", map[string]string{"linkSecret": secret, "password": password, "old": "x"}, http.StatusBadRequest, ""},
		{"a short password", "key-ada", map[string]string{"linkSecret": secret, "password": "short"}, http.StatusBadRequest, ""},
		{"a password over 72 bytes", "key-ada", map[string]string{"linkSecret": secret, "password": strings.Repeat("x", 73)}, http.StatusBadRequest, ""},
		// Issue 28, fault 5: bytes that are not UTF-8 were hashed as U+FFFD.
		{"a password not UTF-8", "key-ada", json.RawMessage(`{"linkSecret": "` + secret + "\", \"password\": \"correct horse \xff\xfe\"}"), http.StatusBadRequest, ""},
		{"a SIGNIN secret", "key-ada", map[string]string{"linkSecret": signin, "password": password}, http.StatusForbidden, ""},
		{"no secret", "key-ada", map[string]string{"password": password}, http.StatusForbidden, ""},
		// The refusals above did not spend the secret.
		{"a fresh PASSWORD_UPDATE secret", "key-ada", map[string]string{"linkSecret": secret, "password": password}, http.StatusOK, password},
		{"the same secret again", "key-ada", map[string]string{"linkSecret": secret, "password": "another password"}, http.StatusForbidden, password},
	}
	for _, s := range steps {
		status, body := h.do(s.key, http.MethodPost, "/password", s.body)
		if status != s.status {
			t.Errorf("%s: %d %q, want %d", s.name, status, body, s.status)
		}
		if status == http.StatusForbidden && !strings.Contains(body, "linkSecret is not valid") {
			t.Errorf("%s: 403 body %q, want it to say why", s.name, body)
		}
		hash := h.row().PasswordHash
		switch {
		case s.password == "" && hash != "":
			t.Errorf("%s: a password hash is stored", s.name)
		case s.password != "" && bcrypt.CompareHashAndPassword([]byte(hash), []byte(s.password)) != nil:
			t.Errorf("%s: the stored hash does not match %q", s.name, s.password)
		}
	}
}
