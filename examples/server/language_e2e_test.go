package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/database"
)

// langAnswer is an answer as a language test reads it.
type langAnswer struct {
	status int
	lang   string // Content-Language
	code   string
	key    string
	msg    string
}

// callIn sends a request with Accept-Language accept ("" for none) and a
// JSON body (nil: none).
func callIn(t *testing.T, base, token, accept, method, path string, body any) langAnswer {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, base+path, r)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if accept != "" {
		req.Header.Set("Accept-Language", accept)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct {
		Code string         `json:"code"`
		Msg  string         `json:"msg"`
		Ext  map[string]any `json:"ext"`
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	key, _ := env.Ext["eKey"].(string)
	return langAnswer{status: res.StatusCode, lang: res.Header.Get("Content-Language"), code: env.Code, key: key, msg: env.Msg}
}

// robotSink is a DingTalk robot on loopback that records the markdown it
// gets and signals each arrival.
type robotSink struct {
	mu      sync.Mutex
	got     []struct{ Title, Text string }
	arrived chan struct{} // closed at the next message
	*httptest.Server
}

func startRobot(t *testing.T) *robotSink {
	s := &robotSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Markdown struct{ Title, Text string } `json:"markdown"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.got = append(s.got, body.Markdown)
		if s.arrived != nil {
			close(s.arrived)
			s.arrived = nil
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"errcode":0,"errmsg":"ok"}`) //nolint:errcheck // the client reads what it can
	}))
	t.Cleanup(s.Close)
	return s
}

// await waits (at most 20 s) for a message whose title contains want.
func (s *robotSink) await(t *testing.T, want string) (title, text string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		for _, m := range s.got {
			if strings.Contains(m.Title, want) {
				s.mu.Unlock()
				return m.Title, m.Text
			}
		}
		if s.arrived == nil {
			s.arrived = make(chan struct{})
		}
		next := s.arrived
		got := append([]struct{ Title, Text string }(nil), s.got...)
		s.mu.Unlock()
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("no robot message titled %q; got %v", want, got)
			return "", ""
		}
	}
}

// TestLanguagesEndToEnd runs the reference server as a user runs it, with
// locales set by the token command, and checks answers, a code SMS and a
// DingTalk event message in English and Simplified Chinese, on both
// databases.
func TestLanguagesEndToEnd(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		sms := startGateway(t)
		robot := startRobot(t)
		base, _ := startServer(t, map[string]string{
			envDatabaseURL: rawURL, envSMSProvider: "http", envSMSHTTPURL: sms.URL + "/send", envChannelAllowPrivate: "true",
		})
		ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann", "-mobile", "138 0013 8000", "-country", "cn")
		li, logs := issue(t, rawURL, "-tenant", "acme", "-username", "li", "-locale", "zh-cn")
		if !strings.Contains(logs, `"locale":"zh-CN"`) {
			t.Errorf("token -locale logged %q, want the canonical locale zh-CN", logs)
		}
		wei, _ := issue(t, rawURL, "-tenant", "huaxia", "-tenant-locale", "zh-CN", "-username", "wei", "-admin")
		wen, _ := issue(t, rawURL, "-tenant", "huaxia", "-username", "wen", "-locale", "en")

		const current = "/api/v1/user/current"
		for _, c := range []struct {
			name, token, accept, method, path string
			body                              any
			want                              langAnswer
		}{
			{"en by default", ann, "", "GET", current, nil, langAnswer{200, "en", "S", "", "Success"}},
			{"zh-CN asked", ann, "zh-CN", "GET", current, nil, langAnswer{200, "zh-Hans", "S", "", "成功"}},
			{"zh asked", ann, "zh", "GET", current, nil, langAnswer{200, "zh-Hans", "S", "", "成功"}},
			{"zh-Hans asked", ann, "zh-Hans", "GET", current, nil, langAnswer{200, "zh-Hans", "S", "", "成功"}},
			{"quality values", ann, "en;q=0.2, zh-CN;q=0.8", "GET", current, nil, langAnswer{200, "zh-Hans", "S", "", "成功"}},
			{"the user's locale", li, "", "GET", current, nil, langAnswer{200, "zh-Hans", "S", "", "成功"}},
			{"Accept-Language over the user's", li, "en-US", "GET", current, nil, langAnswer{200, "en", "S", "", "Success"}},
			{"the tenant's locale", wei, "", "GET", current, nil, langAnswer{200, "zh-Hans", "S", "", "成功"}},
			{"the user's over the tenant's", wen, "", "GET", current, nil, langAnswer{200, "en", "S", "", "Success"}},
			{"400 in zh", ann, "zh-CN", "POST", current + "/sms/send", map[string]any{"bizKey": "MODIFY_MOBILE", "mobile": "13800138000"},
				langAnswer{400, "zh-Hans", "E0", "param_validation_error", "country 为必填项"}},
			{"400 in en", ann, "", "POST", current + "/sms/send", map[string]any{"bizKey": "MODIFY_MOBILE", "mobile": "13800138000"},
				langAnswer{400, "en", "E0", "param_validation_error", "country is required"}},
			{"404 in zh", li, "zh", "GET", "/api/v1/nowhere", nil, langAnswer{404, "zh-Hans", "E0", "route_not_found", "没有路由 GET /api/v1/nowhere"}},
			{"405 in zh", ann, "zh", "DELETE", "/api/v1/task/trash/search", nil,
				langAnswer{405, "zh-Hans", "E0", "method_not_allowed", "/api/v1/task/trash/search 不允许方法 DELETE；允许：GET"}},
			{"401 in zh", "not-a-token", "zh-CN", "GET", current, nil, langAnswer{401, "zh-Hans", "E0", "unauthorized", "需要有效的访问令牌"}},
			{"401 has no user locale", "not-a-token", "", "GET", current, nil, langAnswer{401, "en", "E0", "unauthorized", "a valid bearer token is required"}},
		} {
			if got := callIn(t, base, c.token, c.accept, c.method, c.path, c.body); got != c.want {
				t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
			}
		}

		// A code SMS in the language the request asked for.
		send := map[string]any{"bizKey": "MODIFY_MOBILE", "mobile": "13800138000", "country": "CN"}
		if got := callIn(t, base, ann, "zh-CN", "POST", current+"/sms/send", send); got.status != 200 || got.msg != "成功" {
			t.Fatalf("send in zh-CN: %+v", got)
		}
		text := sms.last(t, "+8613800138000")
		if !strings.Contains(text, "验证码") || !strings.Contains(text, codeIn(t, text)) {
			t.Errorf("the code SMS asked for in zh-CN: %q", text)
		}

		// deskkit's own event, task.trashed, reaches the DingTalk robot of
		// a tenant whose locale is zh-CN in Simplified Chinese.
		ok(t, base, wei, http.MethodPost, "/api/v1/event/channel", map[string]any{
			"channelType": "WORKPLACE_CHAT", "name": "钉钉", "address": robot.URL + "/robot/send?access_token=t-zh", "events": []string{"task.*"},
		}, nil)
		var task struct{ ID int64 }
		ok(t, base, wei, http.MethodPost, "/api/v1/demo/task", map[string]any{"projectId": 1, "name": "登录页"}, &task)
		ok(t, base, wei, http.MethodDelete, "/api/v1/demo/task/"+strconv.FormatInt(task.ID, 10), nil, nil)
		title, body := robot.await(t, "已移入回收站")
		if !strings.Contains(title, "任务") || !strings.Contains(body, "移入了回收站") {
			t.Errorf("the robot got %q | %q", title, body)
		}
	})
}

// -default-language (or its variable) is the language when nothing else
// names one; a language the server lacks stops it at start.
func TestDefaultLanguageFlag(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base, _ := startServer(t, map[string]string{envDatabaseURL: rawURL, envDefaultLanguage: "zh-CN"})
		ann, _ := issue(t, rawURL, "-tenant", "acme", "-username", "ann")
		for _, c := range []struct {
			name, token, accept string
			want                langAnswer
		}{
			{"the default", ann, "", langAnswer{200, "zh-Hans", "S", "", "成功"}},
			{"en asked", ann, "en", langAnswer{200, "en", "S", "", "Success"}},
			{"401", "", "", langAnswer{401, "zh-Hans", "E0", "unauthorized", "需要有效的访问令牌"}},
		} {
			if got := callIn(t, base, c.token, c.accept, "GET", "/api/v1/user/current", nil); got != c.want {
				t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
			}
		}
	})
	// Issue 28, fault 8: zh-TW started a server that answered in
	// Simplified Chinese, the closest language it has.
	// The context is cancelled before run: a server that starts anyway
	// stops at once rather than serving for ever.
	for _, bad := range []string{"fr", "not a language", "zh-TW", "zh-Hant", "zh_CN", "klingon"} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := run(ctx, []string{"-addr", "127.0.0.1:0", "-demo=false", "-default-language", bad}, io.Discard, io.Discard,
			env(map[string]string{envDatabaseURL: "sqlite:" + t.TempDir() + "/d.db"}))
		if err == nil || !strings.Contains(err.Error(), "-default-language") || !strings.Contains(err.Error(), envDefaultLanguage) || !strings.Contains(err.Error(), "en, zh-Hans") {
			t.Errorf("-default-language %q: %v, want an error naming it, its variable and the languages", bad, err)
		}
	}
	// The variable is checked as the flag is.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, []string{"-addr", "127.0.0.1:0", "-demo=false"}, io.Discard, io.Discard,
		env(map[string]string{envDatabaseURL: "sqlite:" + t.TempDir() + "/d.db", envDefaultLanguage: "zh-TW"}))
	if err == nil || !strings.Contains(err.Error(), envDefaultLanguage) {
		t.Errorf("%s=zh-TW: %v, want an error naming it", envDefaultLanguage, err)
	}
}

// token refuses a locale that is no language tag.
func TestTokenLocaleValidated(t *testing.T) {
	rawURL := "sqlite:" + t.TempDir() + "/d.db"
	for _, args := range [][]string{
		{"-tenant", "acme", "-username", "ann", "-locale", "not a tag"},
		{"-tenant", "acme", "-username", "ann", "-tenant-locale", "zh_CN!"},
	} {
		var stderr strings.Builder
		err := run(context.Background(), append([]string{"token", "-database-url", rawURL}, args...), io.Discard, &stderr, env(nil))
		if err == nil || !strings.Contains(err.Error(), "BCP 47") {
			t.Errorf("%q: %v, want a BCP 47 error", args, err)
		}
	}
}

// token refuses a time zone that is no IANA zone name, naming the flag,
// and stores one that is, which the directory then gives the console.
func TestTokenTimeZoneValidated(t *testing.T) {
	rawURL := "sqlite:" + t.TempDir() + "/d.db"
	for _, c := range []struct{ flag, zone string }{
		{"-time-zone", "Mars/Olympus_Mons"}, {"-time-zone", "Local"}, {"-tenant-time-zone", "../../etc/passwd"}, {"-tenant-time-zone", "UTC+8"},
	} {
		var stderr strings.Builder
		err := run(context.Background(), []string{"token", "-database-url", rawURL, "-tenant", "acme", "-username", "ann", c.flag, c.zone}, io.Discard, &stderr, env(nil))
		if err == nil || !strings.Contains(err.Error(), c.flag+":") || !strings.Contains(err.Error(), "IANA time zone") {
			t.Errorf("%s %q: %v, want an error naming the flag and the rule", c.flag, c.zone, err)
		}
	}
	issueFor(t, rawURL, "-tenant", "acme", "-username", "ann", "-time-zone", "Asia/Shanghai", "-tenant-time-zone", "Europe/Paris")
	issueFor(t, rawURL, "-tenant", "acme", "-username", "bob")
	db, err := database.Open(rawURL, database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir, err := directory.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user         int64
		want, tenant string
	}{{1, "Asia/Shanghai", "Europe/Paris"}, {2, "", "Europe/Paris"}} {
		user, tenant, err := dir.TimeZones(context.Background(), deskkit.Principal{TenantID: 1, UserID: c.user})
		if err != nil || user != c.want || tenant != c.tenant {
			t.Errorf("user %d: %q, %q, %v; want %q, %q", c.user, user, tenant, err, c.want, c.tenant)
		}
	}
}
