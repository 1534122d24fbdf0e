package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// localeDirectory is the fake directory with the host's locale hook: the
// user's and the tenant's locales.
type localeDirectory struct {
	*fakeDirectory
	user, tenant string
	err          error // Locales's error, if not nil
}

func (d *localeDirectory) Locales(context.Context, deskkit.Principal) (string, string, error) {
	return d.user, d.tenant, d.err
}

// get is a GET with an Accept-Language header ("" for none).
func (f *fixture) get(path, acceptLanguage string, cookies ...*http.Cookie) answer {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if acceptLanguage != "" {
		req.Header.Set("Accept-Language", acceptLanguage)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	client := f.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return answer{res, b.String()}
}

// wantPage checks that a's page is in lang and holds every one of texts.
func wantPage(t *testing.T, what string, a answer, status int, lang string, texts ...string) {
	t.Helper()
	if a.StatusCode != status {
		t.Errorf("%s: status %d, want %d\n%s", what, a.StatusCode, status, a.body)
	}
	if !strings.Contains(a.body, `<html lang="`+lang+`"`) || a.Header.Get("Content-Language") != lang {
		t.Errorf("%s: not lang=%q:\n%.300s", what, lang, a.body)
	}
	for _, s := range texts {
		if !strings.Contains(a.body, s) {
			t.Errorf("%s (%s): lacks %q\n%s", what, lang, s, a.body)
		}
	}
}

// TestPagesInBothLanguages renders the pages of the trash, the sign-in
// page, the error page and a confirmation in English and Simplified
// Chinese, chosen by Accept-Language.
func TestPagesInBothLanguages(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, nil, false)
		ck := f.signIn(f.token)
		ada := deskkit.Principal{TenantID: 1, UserID: 1, Admin: true}
		e, err := f.trash.Add(context.Background(), db, ada, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 10, TargetName: "Fix login", CreatedBy: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			header, lang string
			trash        []string
			signin       []string
			missing      []string
			confirm      []string
		}{
			{"en-US,en;q=0.9", "en",
				[]string{"<h1>Trash</h1>", "1 entry matches.", `aria-label="Restore Fix login"`, "kept until cleared", "Deleted tasks, page 1 of 1"},
				[]string{"<h1>Sign in</h1>", "Bearer token"},
				[]string{"There is no such page in the console."},
				[]string{"Restore task “Fix login” to project 1?", "Restore task</button>"}},
			{"zh-CN,zh;q=0.9,en;q=0.5", "zh-CN",
				[]string{"<h1>回收站</h1>", "共 1 条记录。", `aria-label="恢复 Fix login"`, "永久保留", "已删除的任务，第 1 页，共 1 页", `data-label="删除人"`, "2026-11-24 09:00 UTC"},
				[]string{"<h1>登录</h1>", "访问令牌"},
				[]string{"控制台中没有此页面。"},
				[]string{"确定将任务“Fix login”恢复到项目“1”吗？", "恢复任务</button>"}},
			{"zh-Hans", "zh-CN", []string{"<h1>回收站</h1>"}, nil, nil, nil},
			{"zh", "zh-CN", []string{"<h1>回收站</h1>"}, nil, nil, nil},
			{"fr, zh;q=0.4", "zh-CN", []string{"<h1>回收站</h1>"}, nil, nil, nil},
			{"fr", "en", []string{"<h1>Trash</h1>"}, nil, nil, nil},
		} {
			wantPage(t, "trash "+tc.header, f.get("/console/trash", tc.header, ck), http.StatusOK, tc.lang, tc.trash...)
			if tc.signin != nil {
				wantPage(t, "sign-in", f.get("/console/signin", tc.header), http.StatusOK, tc.lang, tc.signin...)
				wantPage(t, "404", f.get("/console/nowhere", tc.header, ck), http.StatusNotFound, tc.lang, tc.missing...)
				wantPage(t, "confirm", f.get("/console/trash/"+strconv.FormatInt(e.ID, 10)+"/restore", tc.header, ck), http.StatusOK, tc.lang, tc.confirm...)
			}
		}
		// A bad search is refused in the page's language.
		wantPage(t, "bad search", f.get("/console/trash?size=1000", "zh-CN", ck), http.StatusBadRequest, "zh-CN", "size 必须是 1 到 100 之间的整数。", `data-ekey="param_validation_error"`)
	})
}

// TestLanguageOrder checks the order of the choices: the language switched
// to, Accept-Language, the user's locale, the tenant's, the server's.
func TestLanguageOrder(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	var dir *localeDirectory
	f := setup(t, db, func(c *Config) {
		dir = &localeDirectory{fakeDirectory: c.Authenticator.(*fakeDirectory)}
		c.Authenticator = dir // its Locales is found by assertion
	}, false)
	ck := f.signIn(f.token)
	for _, tc := range []struct {
		user, tenant, header, lang string
	}{
		{"", "", "", "en"},
		{"zh-CN", "", "", "zh-CN"},
		{"", "zh", "", "zh-CN"},
		{"en", "zh-CN", "", "en"},
		{"zh-CN", "", "en", "en"},
		{"", "", "zh-CN", "zh-CN"},
		{"xx-invalid", "zh-Hans", "", "zh-CN"},
	} {
		dir.user, dir.tenant = tc.user, tc.tenant
		wantPage(t, tc.user+"/"+tc.tenant+"/"+tc.header, f.get("/console/trash", tc.header, ck), http.StatusOK, tc.lang)
	}
	// The switch: ?lang= answers in its language and keeps it in a cookie,
	// which comes before Accept-Language.
	dir.user, dir.tenant = "", ""
	a := f.get("/console/trash?lang=zh-CN", "en", ck)
	wantPage(t, "?lang=zh-CN", a, http.StatusOK, "zh-CN", `<span aria-current="true" lang="zh-CN">简体中文</span>`, `href="?lang=en"`)
	var langCookie *http.Cookie
	for _, c := range a.Cookies() {
		if c.Name == LanguageCookie {
			langCookie = c
		}
	}
	if langCookie == nil || langCookie.Value != "zh-CN" || !langCookie.HttpOnly {
		t.Fatalf("the switch kept no cookie: %+v", langCookie)
	}
	wantPage(t, "cookie", f.get("/console/trash", "en", ck, langCookie), http.StatusOK, "zh-CN", "<h1>回收站</h1>")
	wantPage(t, "back to English", f.get("/console/trash?lang=en", "", ck, langCookie), http.StatusOK, "en", "<h1>Trash</h1>")

	// A lookup that fails fails the page, as it fails an API request:
	// an outage is the page "try again" (503), anything else a 500,
	// each with the API's eKey; a page that names its language asks
	// nothing.
	dir.err = fmt.Errorf("directory: %w", deskkit.ErrUnavailable)
	down := f.get("/console/trash", "", ck)
	wantPage(t, "locales unavailable", down, http.StatusServiceUnavailable, "en",
		"The service is temporarily unavailable; retry after 5 seconds.", `data-ekey="service_unavailable"`)
	if got := down.Header.Get("Retry-After"); got != "5" {
		t.Errorf("locales unavailable: Retry-After %q, want 5 as the API's", got)
	}
	dir.err = errors.New("directory: broken")
	wantPage(t, "locales broken", f.get("/console/trash", "", ck), http.StatusInternalServerError, "en",
		"Internal server error.", `data-ekey="internal_error"`)
	wantPage(t, "locales not asked", f.get("/console/trash", "zh-CN", ck), http.StatusOK, "zh-CN", "<h1>回收站</h1>")
	dir.err = nil

	// The server's default, when nothing else tells.
	g := setup(t, dbtest.OpenSQLite(t), func(c *Config) { c.DefaultLanguage = "zh-CN" }, false)
	gck := g.signIn(g.token)
	wantPage(t, "default zh-CN", g.get("/console/trash", "", gck), http.StatusOK, "zh-CN", "<h1>回收站</h1>")
	wantPage(t, "default zh-CN, asked en", g.get("/console/trash", "en", gck), http.StatusOK, "en", "<h1>Trash</h1>")
	if _, err := New(&Config{DB: db, Principals: newFakeDirectory(), DefaultLanguage: "not a tag!"}); err == nil || !strings.Contains(err.Error(), "DefaultLanguage") {
		t.Errorf("a bad DefaultLanguage: %v", err)
	}
	// A valid tag of no catalogue's language: zh-TW is not zh-Hans.
	if _, err := New(&Config{DB: db, Principals: newFakeDirectory(), DefaultLanguage: "zh-TW"}); err == nil || !strings.Contains(err.Error(), `DefaultLanguage "zh-TW" names no language of the console's messages (en, zh-Hans)`) {
		t.Errorf("DefaultLanguage zh-TW: %v", err)
	}
}

// TestHostMessages checks that a host's catalogues reword a console text,
// in English and in Chinese, and that the console's own texts fill the
// rest.
func TestHostMessages(t *testing.T) {
	m, err := deskkit.NewMessages(fstest.MapFS{
		"en.json":      {Data: []byte(`{"Trash": "Recycle bin"}`)},
		"zh-Hans.json": {Data: []byte(`{"Trash": "废纸篓"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, dbtest.OpenSQLite(t), func(c *Config) { c.Messages = m }, false)
	ck := f.signIn(f.token)
	wantPage(t, "host en", f.get("/console/trash", "en", ck), http.StatusOK, "en", "<h1>Recycle bin</h1>", "Name contains")
	wantPage(t, "host zh", f.get("/console/trash", "zh-CN", ck), http.StatusOK, "zh-CN", "<h1>废纸篓</h1>", "名称包含")
}

// TestServiceErrorsLocalized checks that a service's error on a page is
// its LocalizedMessage in the page's language.
func TestServiceErrorsLocalized(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t), nil, false)
	r := httptest.NewRequest(http.MethodGet, "/console/", nil)
	r = r.WithContext(deskkit.WithLanguage(r.Context(), f.c.i18n.messages().Match("zh-CN")))
	err := deskkit.Invalid("projectId", "must be a positive integer")
	en := err.LocalizedMessage(nil, language.English)
	zh := err.LocalizedMessage(f.c.i18n.messages(), f.c.i18n.messages().Match("zh-CN"))
	if zh == en {
		t.Fatalf("the root catalogue does not translate %q", en)
	}
	if p := f.c.problem(r, err); p.Status != http.StatusBadRequest || p.Message != sentence(zh, false) {
		t.Errorf("invalid: %d %q, want %q", p.Status, p.Message, zh)
	}
	if p := f.c.problem(r, deskkit.ErrForbidden); p.Status != http.StatusForbidden || p.Message != sentence(f.c.i18n.messages().Sprintf(f.c.lang(r), "you may not do this"), true) || p.Key != "forbidden" {
		t.Errorf("forbidden: %d %q %s", p.Status, p.Message, p.Key)
	}
}

// TestStoredValuesInWords: a delivery's status and a user's gender are
// shown in the page's language, never as their stored values (PENDING,
// MALE), and a limit's wait follows a Chinese sentence without a space, as
// the glossary has it.
func TestStoredValuesInWords(t *testing.T) {
	f := setup(t, dbtest.OpenSQLite(t), nil, false)
	zh := f.c.i18n.messages().Match("zh-CN")
	want := map[string]string{
		channel.DeliveryPending: "待推送", channel.DeliverySucceeded: "推送成功", channel.DeliveryFailed: "推送失败",
		"MALE": "男", "FEMALE": "女", "UNKNOWN": "保密",
	}
	for _, g := range verify.Genders() {
		if got := f.c.i18n.sprintf(zh, genderLabel(g)); got != want[g] {
			t.Errorf("gender %s in Chinese: %q, want %q", g, got, want[g])
		}
	}
	for _, s := range []string{channel.DeliveryPending, channel.DeliverySucceeded, channel.DeliveryFailed} {
		if got := f.c.i18n.sprintf(zh, deliveryStatusLabel(s)); got != want[s] {
			t.Errorf("status %s in Chinese: %q, want %q", s, got, want[s])
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/console/", nil)
	r = r.WithContext(deskkit.WithLanguage(r.Context(), zh))
	p := f.c.problem(r, deskkit.RateLimited(time.Minute, deskkit.Textf("at most %d codes an hour", 5)))
	if p.Status != http.StatusTooManyRequests || strings.Contains(p.Message, "。 ") || !strings.Contains(p.Message, "后重试。") {
		t.Errorf("rate limited in Chinese: %d %q, want no space after 。 and the wait", p.Status, p.Message)
	}
	r = httptest.NewRequest(http.MethodGet, "/console/", nil)
	if p := f.c.problem(r, deskkit.RateLimited(time.Minute, deskkit.Textf("at most %d codes an hour", 5))); !strings.Contains(p.Message, ". Try again in 1 minute.") {
		t.Errorf("rate limited in English: %q, want a space before Try again", p.Message)
	}
}
