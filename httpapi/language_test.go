package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// localeTokens is a token table whose principals have locales: it is a
// deskkit.LocaleResolver, as a host's directory may be.
type localeTokens struct {
	tokens
	locales map[int64][2]string // user id: the user's locale, the tenant's
	fail    error               // answered by Locales when set
}

var _ deskkit.LocaleResolver = localeTokens{}

func (l localeTokens) Locales(_ context.Context, p deskkit.Principal) (string, string, error) {
	if l.fail != nil {
		return "", "", l.fail
	}
	v := l.locales[p.UserID]
	return v[0], v[1], nil
}

var localeUsers = localeTokens{
	tokens: tokens{
		"alice": {UserID: 1, TenantID: 1}, // no locale of her own; tenant 1 has none
		"zhu":   {UserID: 5, TenantID: 1}, // prefers zh-CN
		"ten":   {UserID: 6, TenantID: 3}, // no locale of their own; tenant 3 reads zh-CN
		"eng":   {UserID: 7, TenantID: 3}, // prefers en in a zh-CN tenant
		"odd":   {UserID: 8, TenantID: 4}, // prefers a language the server lacks
	},
	locales: map[int64][2]string{
		5: {"zh-CN", ""},
		6: {"", "zh-CN"},
		7: {"en", "zh-CN"},
		8: {"fr", ""},
	},
}

// newLocaleAPI is newAPI with localeUsers and the settings of cfg.
func newLocaleAPI(t *testing.T, db *bun.DB, cfg Config) *Server {
	t.Helper()
	if err := trash.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	tr, err := trash.New(db, &recordingRestorer{}, &trash.Config{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Authenticator == nil {
		cfg.Authenticator = localeUsers
	}
	cfg.Trash, cfg.Now, cfg.Logger = tr, func() time.Time { return fixedNow }, discardLogger()
	srv, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("POST", "/test/ids", func(r *http.Request, _ deskkit.Principal) (any, error) {
		var b struct {
			IDs []int64 `json:"ids"`
			N   int32   `json:"n"`
		}
		if err := DecodeJSON(r, &b); err != nil {
			return nil, err
		}
		return len(b.IDs), nil
	})
	return srv
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// langCall is one request and what its answer must be.
type langCall struct {
	name, method, target, token, accept, body string
	status                                    int
	code, key, msg, lang                      string
}

func (c langCall) check(t *testing.T, srv http.Handler) {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req := httptest.NewRequest(c.method, c.target, body)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.accept != "" {
		req.Header.Set("Accept-Language", c.accept)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	r := response{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &r.env); err != nil {
		t.Fatalf("%s: not an envelope: %v\n%s", c.name, err, r.raw)
	}
	gotKey, _ := r.env.Ext["eKey"].(string)
	if r.status != c.status || r.env.Code != c.code || gotKey != c.key || r.env.Msg != c.msg {
		t.Errorf("%s: got %d %s %q %q, want %d %s %q %q", c.name, r.status, r.env.Code, gotKey, r.env.Msg, c.status, c.code, c.key, c.msg)
	}
	if got := rec.Header().Get("Content-Language"); got != c.lang {
		t.Errorf("%s: Content-Language %q, want %q", c.name, got, c.lang)
	}
}

// Every answer's msg, success or error, is in the language Accept-Language
// asks for, else the user's, else the tenant's, else the server's default;
// code, eKey and the JSON keys stay as they are.
func TestAnswersInTheReadersLanguage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		srv := newLocaleAPI(t, db, Config{})
		const search = "/api/v1/task/trash/count?projectId=1"
		ok := func(name, token, accept, msg, lang string) langCall {
			return langCall{name: name, method: "GET", target: search, token: token, accept: accept, status: 200, code: "S", msg: msg, lang: lang}
		}
		for _, c := range []langCall{
			ok("no preference at all", "alice", "", "Success", "en"),
			ok("en", "alice", "en", "Success", "en"),
			ok("en-US", "alice", "en-US", "Success", "en"),
			ok("zh", "alice", "zh", "成功", "zh-Hans"),
			ok("zh-CN", "alice", "zh-CN", "成功", "zh-Hans"),
			ok("zh-Hans", "alice", "zh-Hans", "成功", "zh-Hans"),
			ok("zh-Hans-CN", "alice", "zh-Hans-CN", "成功", "zh-Hans"),
			ok("quality values pick zh", "alice", "en;q=0.5, zh-CN;q=0.9", "成功", "zh-Hans"),
			ok("quality values pick en", "alice", "zh-CN;q=0.4, en;q=0.8", "Success", "en"),
			ok("the first language the server has", "alice", "fr, de;q=0.9, zh;q=0.5", "成功", "zh-Hans"),
			ok("none the server has: the default", "alice", "fr, de", "Success", "en"),
			ok("the user's locale", "zhu", "", "成功", "zh-Hans"),
			ok("Accept-Language before the user's", "zhu", "en", "Success", "en"),
			ok("the user's after an unknown language", "zhu", "fr", "成功", "zh-Hans"),
			ok("the tenant's locale", "ten", "", "成功", "zh-Hans"),
			ok("the user's before the tenant's", "eng", "", "Success", "en"),
			ok("a user locale the server lacks: the default", "odd", "", "Success", "en"),
			{name: "400 in zh", method: "GET", target: "/api/v1/task/trash/count?projectId=abc", token: "alice", accept: "zh-CN",
				status: 400, code: "E0", key: KeyValidation, msg: "projectId 必须是正整数", lang: "zh-Hans"},
			{name: "400 in en", method: "GET", target: "/api/v1/task/trash/count?projectId=abc", token: "alice", accept: "en",
				status: 400, code: "E0", key: KeyValidation, msg: "projectId must be a positive integer", lang: "en"},
			{name: "400 for the user's locale", method: "GET", target: "/api/v1/task/trash/count?projectId=1&bogus=1", token: "zhu",
				status: 400, code: "E0", key: KeyValidation, msg: "bogus 不是此操作的参数", lang: "zh-Hans"},
			{name: "400 of DecodeJSON in zh", method: "POST", target: "/api/v1/test/ids", token: "ten", body: `{"ids":"x"}`,
				status: 400, code: "E0", key: KeyValidation, msg: "ids 必须是由 整数 组成的数组", lang: "zh-Hans"},
			{name: "400 of DecodeJSON in en", method: "POST", target: "/api/v1/test/ids", token: "alice", body: `{"ids":"x"}`,
				status: 400, code: "E0", key: KeyValidation, msg: "ids must be an array of integers", lang: "en"},
			{name: "400 of DecodeJSON, a range, in zh", method: "POST", target: "/api/v1/test/ids", token: "zhu", body: `{"n":1e12}`,
				status: 400, code: "E0", key: KeyValidation, msg: "n 必须是取值在 int32 范围内的整数", lang: "zh-Hans"},
			{name: "404 resource in zh", method: "GET", target: "/api/v1/task/trash/999999", token: "alice", accept: "zh",
				status: 404, code: "E1", key: KeyNotFound, msg: "资源不存在", lang: "zh-Hans"},
			{name: "404 route in zh", method: "GET", target: "/api/v1/nowhere", accept: "zh",
				status: 404, code: "E0", key: KeyRouteNotFound, msg: "没有路由 GET /api/v1/nowhere", lang: "zh-Hans"},
			{name: "404 route in en", method: "GET", target: "/api/v1/nowhere", accept: "en",
				status: 404, code: "E0", key: KeyRouteNotFound, msg: "no route GET /api/v1/nowhere", lang: "en"},
			{name: "405 in zh", method: "DELETE", target: "/api/v1/task/trash/search", accept: "zh-Hans",
				status: 405, code: "E0", key: KeyMethodNotAllowed, msg: "/api/v1/task/trash/search 不允许方法 DELETE；允许：GET", lang: "zh-Hans"},
			{name: "401 in zh", method: "GET", target: search, accept: "zh-CN",
				status: 401, code: "E0", key: KeyUnauthorized, msg: "需要有效的访问令牌", lang: "zh-Hans"},
			{name: "401 has no principal: no user locale", method: "GET", target: search, token: "nobody",
				status: 401, code: "E0", key: KeyUnauthorized, msg: "a valid bearer token is required", lang: "en"},
		} {
			c.check(t, srv)
		}
	})
}

// The server's default language answers when nothing else says; a
// request whose authentication fails has only Accept-Language and it.
func TestDefaultLanguage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		srv := newLocaleAPI(t, db, Config{DefaultLanguage: "zh-CN"})
		for _, c := range []langCall{
			{name: "success", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "alice", status: 200, code: "S", msg: "成功", lang: "zh-Hans"},
			{name: "the user's locale first", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "eng", status: 200, code: "S", msg: "Success", lang: "en"},
			{name: "401", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "zhu-wrong", status: 401, code: "E0", key: KeyUnauthorized, msg: "需要有效的访问令牌", lang: "zh-Hans"},
			{name: "401 asked in en", method: "GET", target: "/api/v1/task/trash/count?projectId=1", accept: "en", status: 401, code: "E0", key: KeyUnauthorized, msg: "a valid bearer token is required", lang: "en"},
		} {
			c.check(t, srv)
		}
	})
}

// An Authenticator that is no LocaleResolver leaves Accept-Language and
// the default; a LocaleResolver's outage is answered as one when it is
// asked, which is when Accept-Language names no language the server has.
func TestLocaleResolverOptional(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		srv := newLocaleAPI(t, db, Config{Authenticator: localeUsers.tokens})
		langCall{name: "no resolver", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "zhu", status: 200, code: "S", msg: "Success", lang: "en"}.check(t, srv)
		langCall{name: "no resolver, zh asked", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "zhu", accept: "zh", status: 200, code: "S", msg: "成功", lang: "zh-Hans"}.check(t, srv)

		failing := localeUsers
		failing.fail = fmt.Errorf("directory: %w", deskkit.ErrUnavailable)
		srv = newLocaleAPI(t, db, Config{Authenticator: failing})
		// Asked only when the request names no language the server has.
		langCall{name: "resolver down", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "zhu", accept: "fr", status: 503, code: "E2", key: KeyServiceUnavailable, msg: "the service is temporarily unavailable; retry after 5 seconds", lang: "en"}.check(t, srv)
		langCall{name: "resolver down, zh asked", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "zhu", accept: "zh", status: 200, code: "S", msg: "成功", lang: "zh-Hans"}.check(t, srv)
	})
}

// The request's language is on the context the service gets
// (deskkit.LanguageOf), for the messages it sends; when nothing names one
// and the server has no default, the context carries none, and the
// service keeps its own default.
func TestLanguageReachesTheService(t *testing.T) {
	lang := func(r *http.Request, _ deskkit.Principal) (any, error) {
		tag, ok := deskkit.LanguageOf(r.Context())
		if !ok {
			return "none", nil
		}
		return tag.String(), nil
	}
	srv, err := New(&Config{Authenticator: localeUsers})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("GET", "/test/lang", lang)
	withDefault, err := New(&Config{Authenticator: localeUsers, DefaultLanguage: "en"})
	if err != nil {
		t.Fatal(err)
	}
	withDefault.Handle("GET", "/test/lang", lang)
	for _, c := range []struct {
		srv                 *Server
		token, accept, want string
	}{
		{srv, "alice", "", `"none"`}, {srv, "alice", "fr", `"none"`}, {srv, "odd", "", `"none"`},
		{srv, "alice", "en", `"en"`}, {srv, "alice", "zh-CN", `"zh-Hans"`}, {srv, "zhu", "", `"zh-Hans"`}, {srv, "ten", "", `"zh-Hans"`}, {srv, "eng", "", `"en"`},
		{withDefault, "alice", "", `"en"`}, {withDefault, "odd", "fr", `"en"`}, {withDefault, "zhu", "", `"zh-Hans"`},
	} {
		srv := c.srv
		req := httptest.NewRequest("GET", "/api/v1/test/lang", nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		if c.accept != "" {
			req.Header.Set("Accept-Language", c.accept)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if !strings.Contains(rec.Body.String(), `"data":`+c.want) {
			t.Errorf("%s %q: %s, want data %s", c.token, c.accept, rec.Body, c.want)
		}
	}
}

// A host's catalogue rewords a message and adds a language, which may be
// the server's default.
func TestHostCatalogue(t *testing.T) {
	msgs, err := deskkit.NewMessages(fstest.MapFS{
		"messages/zh-Hans.json": {Data: []byte(`{"Success": "好了", "the resource does not exist": "没有这个东西"}`)},
		"messages/ja.json":      {Data: []byte(`{"Success": "成功しました", "no route %s %s": "ルートがありません: %s %s"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		srv := newLocaleAPI(t, db, Config{Messages: msgs, DefaultLanguage: "ja"})
		for _, c := range []langCall{
			{name: "zh reworded", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "alice", accept: "zh", status: 200, code: "S", msg: "好了", lang: "zh-Hans"},
			{name: "zh reworded error", method: "GET", target: "/api/v1/task/trash/999999", token: "alice", accept: "zh", status: 404, code: "E1", key: KeyNotFound, msg: "没有这个东西", lang: "zh-Hans"},
			{name: "zh kept", method: "GET", target: "/api/v1/task/trash/count?projectId=abc", token: "alice", accept: "zh", status: 400, code: "E0", key: KeyValidation, msg: "projectId 必须是正整数", lang: "zh-Hans"},
			{name: "ja by default", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "alice", status: 200, code: "S", msg: "成功しました", lang: "ja"},
			{name: "ja route", method: "GET", target: "/api/v1/nowhere", status: 404, code: "E0", key: KeyRouteNotFound, msg: "ルートがありません: GET /api/v1/nowhere", lang: "ja"},
			{name: "ja lacks a message: English", method: "GET", target: "/api/v1/task/trash/count?projectId=abc", token: "alice", status: 400, code: "E0", key: KeyValidation, msg: "projectId must be a positive integer", lang: "ja"},
			{name: "en asked", method: "GET", target: "/api/v1/task/trash/count?projectId=1", token: "alice", accept: "en", status: 200, code: "S", msg: "Success", lang: "en"},
		} {
			c.check(t, srv)
		}
	})
}

func TestDefaultLanguageValidated(t *testing.T) {
	for _, tag := range []string{"en", "zh-CN", "zh", "zh-Hans", "en-GB"} {
		if _, err := New(&Config{Authenticator: users, DefaultLanguage: tag}); err != nil {
			t.Errorf("DefaultLanguage %q: %v", tag, err)
		}
	}
	// Issue 28, fault 8: zh-TW (and what else Match takes for the closest
	// language) started a server whose default is another language.
	for _, tag := range []string{"fr", "ja", "not a tag", "zh-TW", "zh-HK", "zh-Hant", "tlh", "klingon", "zh_CN", "und"} {
		_, err := New(&Config{Authenticator: users, DefaultLanguage: tag})
		if err == nil || !strings.Contains(err.Error(), "DefaultLanguage") || !strings.Contains(err.Error(), "en, zh-Hans") {
			t.Errorf("DefaultLanguage %q: %v, want an error naming DefaultLanguage and the languages", tag, err)
		}
	}
}

// The 413's message, which names the limit, is translated too.
func TestBodyTooLargeTranslated(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		srv := newLocaleAPI(t, db, Config{MaxBodyBytes: 64})
		big := `{"ids":[` + strings.Repeat("1,", 64) + `1]}`
		langCall{name: "413 in zh", method: "POST", target: "/api/v1/test/ids", token: "zhu", body: big,
			status: 413, code: "E0", key: KeyRequestTooLarge, msg: "请求体不得超过 64 字节", lang: "zh-Hans"}.check(t, srv)
		langCall{name: "413 in en", method: "POST", target: "/api/v1/test/ids", token: "alice", body: big,
			status: 413, code: "E0", key: KeyRequestTooLarge, msg: "body must be at most 64 bytes", lang: "en"}.check(t, srv)
	})
}

// localesFunc is a deskkit.LocaleResolver of a function.
type localesFunc func(ctx context.Context, p deskkit.Principal) (string, string, error)

func (f localesFunc) Locales(ctx context.Context, p deskkit.Principal) (string, string, error) {
	return f(ctx, p)
}

// TestLanguagesResolve pins the one choice of a reader's language: the
// request's own choices, then (only when they name none, and only for a
// principal) the user's and the tenant's locales, then the default; a
// lookup's error is the caller's.
func TestLanguagesResolve(t *testing.T) {
	var user, tenant string
	var lookupErr error
	asked := 0
	locales := localesFunc(func(context.Context, deskkit.Principal) (string, string, error) {
		asked++
		return user, tenant, lookupErr
	})
	p := &deskkit.Principal{TenantID: 1, UserID: 2}
	withDefault, err := NewLanguages(nil, "zh-CN", locales)
	if err != nil {
		t.Fatal(err)
	}
	noDefault, err := NewLanguages(nil, "", locales)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		l            *Languages
		p            *deskkit.Principal
		user, tenant string
		choices      []string
		want         string
		from         Origin
		lookups      int
	}{
		{"asked", noDefault, p, "zh-CN", "", []string{"", "en-US,en;q=0.9"}, "en", FromRequest, 0},
		{"first choice first", noDefault, p, "", "", []string{"zh-CN", "en"}, "zh-Hans", FromRequest, 0},
		{"the user's", noDefault, p, "zh", "en", []string{"fr"}, "zh-Hans", FromPrincipal, 1},
		{"the tenant's", noDefault, p, "tlh", "zh-CN", nil, "zh-Hans", FromPrincipal, 1},
		{"zh-TW is no Simplified Chinese", withDefault, p, "zh-TW", "en", []string{"zh-TW"}, "en", FromPrincipal, 1},
		{"the default", withDefault, p, "", "", nil, "zh-Hans", FromDefault, 1},
		{"no principal, no lookup", withDefault, nil, "en", "en", nil, "zh-Hans", FromDefault, 0},
		{"nothing", noDefault, p, "", "", []string{"fr"}, "en", FromNothing, 1},
	} {
		user, tenant, asked = tc.user, tc.tenant, 0
		l, from, err := tc.l.Resolve(t.Context(), tc.p, tc.choices...)
		if err != nil || l.Language().String() != tc.want || from != tc.from || asked != tc.lookups {
			t.Errorf("%s: %s from %d after %d lookups (%v), want %s from %d after %d", tc.name, l.Language(), from, asked, err, tc.want, tc.from, tc.lookups)
		}
		if l.Messages() != tc.l.Messages() {
			t.Errorf("%s: the Localizer writes from other Messages", tc.name)
		}
	}
	lookupErr = fmt.Errorf("directory: %w", deskkit.ErrUnavailable)
	if _, _, err := withDefault.Resolve(t.Context(), p); !errors.Is(err, deskkit.ErrUnavailable) {
		t.Errorf("a failing lookup: %v", err)
	}
	if _, err := NewLanguages(nil, "zh-TW", nil); err == nil {
		t.Errorf("NewLanguages takes a default that names no language")
	}
}
