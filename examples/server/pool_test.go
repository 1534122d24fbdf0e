package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit/httpapi"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/smtptest"
)

// poolAtOnce is how many requests of one operation TestPoolOfOne sends at
// once.
const poolAtOnce = 8

// poolUser is one of TestPoolOfOne's users: the admin of a tenant of their
// own (so that no per-tenant limit or quota is what a burst measures), with
// an e-mail address, a mobile number and a webhook to the loopback sink.
type poolUser struct {
	i      int
	token  string
	email  string // e.g. ada3@pool.example
	mobile string // E.164, +8613800138003
	hook   int64  // the webhook channel's id
}

// poolRequest is one request of a burst.
type poolRequest struct {
	path string // with its query, under the server's base URL
	body any    // JSON; nil for none
}

// poolCase is one route of the server: setup prepares, one user at a
// time, what that user's request of the burst needs (entries to restore,
// a code to check...) and returns the request.
type poolCase struct {
	route httpapi.Route
	setup func(t *testing.T, u poolUser) poolRequest
}

// TestPoolOfOne runs the reference server with a pool of ONE database
// connection, a webhook channel per tenant (so that every change publishes
// its event into the outbox) and the workers running, and sends every
// route of the API, deskkit's and the demo host's, poolAtOnce times at
// once: every request must succeed. A code path that holds a connection (a
// transaction) while it asks the pool for another waits for itself until
// the request's deadline and answers 503; the rule (see the root package
// doc, # Transactions) is that none does. The cases are keyed by the
// server's route list, so a new route without a case fails the test.
func TestPoolOfOne(t *testing.T) {
	routes := serverRoutes(t)
	eachURL(t, func(t *testing.T, rawURL string) {
		mail := smtptest.Start(t)
		sms := startGateway(t)
		recv := startSink(t)
		// Deadlines generous enough for a loaded machine: what the test
		// catches is a wait that never ends, which they turn into a 503.
		base, logs := startServer(t, map[string]string{
			envDatabaseURL: rawURL, envDBMaxConns: "1", envRequestTimeout: "30s",
			envSMTPAddr: mail.Addr, envSMTPFrom: "Deskkit <noreply@example.com>",
			envSMSProvider: "http", envSMSHTTPURL: sms.URL + "/send",
			envChannelAllowPrivate: "true", envChannelTestsPerMin: "1000",
		})
		users := make([]poolUser, poolAtOnce)
		for i := range users {
			u := poolUser{i: i, email: fmt.Sprintf("ada%d@pool.example", i), mobile: fmt.Sprintf("+861380013800%d", i)}
			u.token, _ = issue(t, rawURL, "-tenant", fmt.Sprintf("pool%d", i), "-username", "ada", "-admin",
				"-email", u.email, "-mobile", u.mobile, "-country", "cn")
			var added struct{ ID int64 }
			ok(t, base, u.token, http.MethodPost, "/api/v1/event/channel", map[string]any{"channelType": "WEBHOOK", "name": "hook", "address": recv.URL + "/hook"}, &added)
			u.hook = added.ID
			users[i] = u
		}
		for _, c := range poolCases(base, mail, sms, recv) {
			t.Run(c.route.Method+" "+c.route.Path, func(t *testing.T) {
				reqs := make([]poolRequest, len(users))
				for i, u := range users {
					reqs[i] = c.setup(t, u)
				}
				for i, msg := range burst(base, c.route.Method, users, reqs) {
					if msg != "" {
						t.Errorf("request %d of %d: %s", i+1, len(users), msg)
					}
				}
			})
		}
		if t.Failed() {
			t.Logf("server log:\n%s", tail(logs.String(), 4000))
		}
	})
	// Every route has its case, and every case a route.
	have := map[httpapi.Route]bool{}
	for _, c := range poolCases("", nil, nil, nil) {
		if have[c.route] {
			t.Errorf("two cases of %v", c.route)
		}
		have[c.route] = true
		if !slices.Contains(routes, c.route) {
			t.Errorf("a case of %v, which the server does not serve", c.route)
		}
	}
	for _, r := range routes {
		if !have[r] {
			t.Errorf("%s %s has no case in TestPoolOfOne: add one", r.Method, r.Path)
		}
	}
}

// serverRoutes lists every route the reference server serves under
// /api/v1, deskkit's and the demo host's, from an app of its own.
func serverRoutes(t *testing.T) []httpapi.Route {
	t.Helper()
	db, err := database.Open("sqlite:"+filepath.Join(t.TempDir(), "routes.db"), database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrateAll(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	a, err := newApp(db, appConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return append(a.api.Routes(), a.api.HostRoutes()...)
}

// burst sends users[i] reqs[i] at once, and returns for each what was
// wrong with its answer ("" for a 2xx with a success envelope).
func burst(base, method string, users []poolUser, reqs []poolRequest) []string {
	client := &http.Client{Timeout: 2 * time.Minute}
	out := make([]string, len(reqs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			var body io.Reader
			if r.body != nil {
				b, err := json.Marshal(r.body)
				if err != nil {
					out[i] = err.Error()
					return
				}
				body = bytes.NewReader(b)
			}
			req, err := http.NewRequest(method, base+r.path, body)
			if err != nil {
				out[i] = err.Error()
				return
			}
			req.Header.Set("Authorization", "Bearer "+users[i].token)
			if r.body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			<-start
			res, err := client.Do(req)
			if err != nil {
				out[i] = err.Error()
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			var env struct{ Code string }
			_ = json.Unmarshal(b, &env)
			// The OpenAPI document is the one answer without an envelope.
			if res.StatusCode/100 != 2 || (env.Code != "S" && !strings.HasSuffix(r.path, "/openapi.json")) {
				out[i] = fmt.Sprintf("%s %s answered %d %.300s", method, r.path, res.StatusCode, b)
			}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// poolCases are TestPoolOfOne's cases, in the order they run: a case may
// rely on what those before it changed (the mobile number changes after the
// SMS cases).
func poolCases(base string, mail *smtptest.Server, sms *gateway, recv *sink) []poolCase {
	route := func(method, path string) httpapi.Route {
		return httpapi.Route{Method: method, Path: httpapi.Prefix + path}
	}
	get, post, put, patch, del := http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	// static is the case of a route every user sends the same request
	// to: path, with query if not "".
	static := func(method, path, query string, body any) poolCase {
		if query != "" {
			query = "?" + query
		}
		return poolCase{route(method, path), func(*testing.T, poolUser) poolRequest {
			return poolRequest{path: httpapi.Prefix + path + query, body: body}
		}}
	}
	// create makes a demo task (in sprint, if not 0) or sprint in project
	// 1 of u's tenant and returns its id.
	create := func(t *testing.T, u poolUser, what string, sprint int64) int64 {
		t.Helper()
		body := map[string]any{"projectId": 1, "name": fmt.Sprintf("%s of %d", what, u.i)}
		if sprint != 0 {
			body["sprintId"] = sprint
		}
		var c struct{ ID int64 }
		ok(t, base, u.token, post, "/api/v1/demo/"+what, body, &c)
		return c.ID
	}
	// trashed deletes a new task of project into the trash and returns
	// its entry's id.
	trashed := func(t *testing.T, u poolUser, project int) int64 {
		t.Helper()
		var c struct{ ID int64 }
		ok(t, base, u.token, post, "/api/v1/demo/task", map[string]any{"projectId": project, "name": "trashed"}, &c)
		var d struct{ TrashID int64 }
		ok(t, base, u.token, del, fmt.Sprintf("/api/v1/demo/task/%d", c.ID), nil, &d)
		return d.TrashID
	}
	// robot adds a WeCom robot to the sink (webhooks have a quota of 5)
	// and returns its id.
	robot := func(t *testing.T, u poolUser, name string) int64 {
		t.Helper()
		var c struct{ ID int64 }
		ok(t, base, u.token, post, "/api/v1/event/channel", map[string]any{"channelType": "ENTERPRISE_CHAT", "name": name, "address": robotURL(recv, u, name)}, &c)
		return c.ID
	}
	// delivery is one of the deliveries to u's webhook (deleting tasks
	// into the trash published their events).
	delivery := func(t *testing.T, u poolUser) int64 {
		t.Helper()
		trashed(t, u, 1)
		var page struct{ List []struct{ ID int64 } }
		ok(t, base, u.token, get, fmt.Sprintf("/api/v1/event/channel/%d/deliveries?pageSize=1", u.hook), nil, &page)
		if len(page.List) == 0 {
			t.Fatalf("no delivery to %d's webhook", u.i)
		}
		return page.List[0].ID
	}
	// smsCode sends u an SMS code for bizKey to mobile (E.164) and returns it.
	smsCode := func(t *testing.T, u poolUser, bizKey, mobile string) string {
		t.Helper()
		ok(t, base, u.token, post, "/api/v1/user/current/sms/send", map[string]any{"bizKey": bizKey, "mobile": mobile, "country": "CN"}, nil)
		return codeIn(t, sms.last(t, mobile))
	}
	smsCheck := func(bizKey, mobile, code string) string {
		return "/api/v1/user/current/sms/check?" + url.Values{"bizKey": {bizKey}, "mobile": {mobile}, "country": {"CN"}, "verificationCode": {code}}.Encode()
	}
	mailCode := func(t *testing.T, u poolUser, bizKey, to string) string {
		t.Helper()
		ok(t, base, u.token, post, "/api/v1/user/current/email/send", map[string]any{"bizKey": bizKey, "toAddress": [][]string{{to}}}, nil)
		subject, _ := lastMail(t, mail, to)
		return codeIn(t, subject)
	}
	mailCheck := func(bizKey, email, code string) string {
		return "/api/v1/user/current/email/check?" + url.Values{"bizKey": {bizKey}, "email": {email}, "verificationCode": {code}}.Encode()
	}
	// link checks code and returns the link secret the check answers.
	link := func(t *testing.T, u poolUser, check string) string {
		t.Helper()
		var l struct{ LinkSecret string }
		ok(t, base, u.token, get, check, nil, &l)
		return l.LinkSecret
	}
	newMobile := func(u poolUser) string { return fmt.Sprintf("+861370013700%d", u.i) }
	newEmail := func(u poolUser) string { return fmt.Sprintf("ada%d@new.pool.example", u.i) }

	return []poolCase{
		// The document and the catalogue.
		static(get, "/openapi.json", "", nil),
		static(get, "/event/types", "", nil),

		// The demo host's tasks and sprints, and the trash.
		static(post, "/demo/sprint", "", map[string]any{"projectId": 1, "name": "sprint"}),
		static(post, "/demo/task", "", map[string]any{"projectId": 1, "name": "task"}),
		{route(get, "/demo/sprint/{id}"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/demo/sprint/%d", create(t, u, "sprint", 0))}
		}},
		{route(get, "/demo/task/{id}"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/demo/task/%d", create(t, u, "task", 0))}
		}},
		{route(del, "/demo/task/{id}"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/demo/task/%d", create(t, u, "task", 0))}
		}},
		{route(del, "/demo/sprint/{id}"), func(t *testing.T, u poolUser) poolRequest {
			s := create(t, u, "sprint", 0)
			create(t, u, "task", s)
			return poolRequest{path: fmt.Sprintf("/api/v1/demo/sprint/%d", s)}
		}},
		static(get, "/task/trash/search", "targetType=TASK&projectId=1", nil),
		static(get, "/task/trash/count", "projectId=1", nil),
		{route(patch, "/task/trash/{id}/back"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/task/trash/%d/back", trashed(t, u, 1))}
		}},
		{route(get, "/task/trash/{id}"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/task/trash/%d", trashed(t, u, 1))}
		}},
		{route(del, "/task/trash/{id}"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/task/trash/%d", trashed(t, u, 1))}
		}},
		{route(patch, "/task/trash/back"), func(t *testing.T, u poolUser) poolRequest {
			trashed(t, u, 2)
			return poolRequest{path: "/api/v1/task/trash/back?projectId=2"}
		}},
		{route(del, "/task/trash"), func(t *testing.T, u poolUser) poolRequest {
			trashed(t, u, 3)
			return poolRequest{path: "/api/v1/task/trash?projectId=3"}
		}},

		// The current user.
		static(get, "/user/current", "", nil),
		static(get, "/user/current/tenant", "", nil),
		static(patch, "/user/current", "", map[string]any{"fullName": "Ada Pool"}),
		{route(post, "/user/current/sms/send"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: "/api/v1/user/current/sms/send", body: map[string]any{"bizKey": "SIGNIN", "mobile": u.mobile, "country": "CN"}}
		}},
		{route(post, "/user/current/email/send"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: "/api/v1/user/current/email/send", body: map[string]any{"bizKey": "SIGNIN", "toAddress": [][]string{{u.email}}}}
		}},
		{route(get, "/user/current/sms/check"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: smsCheck("PASSWORD_UPDATE", u.mobile, smsCode(t, u, "PASSWORD_UPDATE", u.mobile))}
		}},
		{route(get, "/user/current/email/check"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: mailCheck("PASSWORD_UPDATE", u.email, mailCode(t, u, "PASSWORD_UPDATE", u.email))}
		}},
		{route(post, "/demo/link/redeem"), func(t *testing.T, u poolUser) poolRequest {
			secret := link(t, u, mailCheck("SIGN_CANCEL", u.email, mailCode(t, u, "SIGN_CANCEL", u.email)))
			return poolRequest{path: "/api/v1/demo/link/redeem", body: map[string]any{"bizKey": "SIGN_CANCEL", "linkSecret": secret}}
		}},
		{route(patch, "/user/current/mobile"), func(t *testing.T, u poolUser) poolRequest {
			secret := link(t, u, smsCheck("MODIFY_MOBILE", u.mobile, smsCode(t, u, "MODIFY_MOBILE", u.mobile)))
			code := smsCode(t, u, "MODIFY_MOBILE", newMobile(u))
			return poolRequest{path: "/api/v1/user/current/mobile", body: map[string]any{
				"bizKey": "MODIFY_MOBILE", "mobile": strings.TrimPrefix(newMobile(u), "+86"), "country": "CN", "itc": 86, "verificationCode": code, "linkSecret": secret,
			}}
		}},
		{route(patch, "/user/current/email"), func(t *testing.T, u poolUser) poolRequest {
			secret := link(t, u, mailCheck("MODIFY_EMAIL", u.email, mailCode(t, u, "MODIFY_EMAIL", u.email)))
			code := mailCode(t, u, "MODIFY_EMAIL", newEmail(u))
			return poolRequest{path: "/api/v1/user/current/email", body: map[string]any{
				"bizKey": "MODIFY_EMAIL", "email": newEmail(u), "verificationCode": code, "linkSecret": secret,
			}}
		}},

		// Channels, events and deliveries.
		static(get, "/event/channel", "", nil),
		{route(get, "/event/channel/type/{channelType}"), func(*testing.T, poolUser) poolRequest {
			return poolRequest{path: "/api/v1/event/channel/type/WEBHOOK"}
		}},
		{route(post, "/event/channel"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: "/api/v1/event/channel", body: map[string]any{"channelType": "ENTERPRISE_CHAT", "name": "added", "address": robotURL(recv, u, "added")}}
		}},
		{route(put, "/event/channel"), func(t *testing.T, u poolUser) poolRequest {
			id := robot(t, u, "replaced")
			return poolRequest{path: "/api/v1/event/channel", body: map[string]any{"id": id, "channelType": "ENTERPRISE_CHAT", "name": "replaced too", "address": robotURL(recv, u, "replaced")}}
		}},
		{route(get, "/event/channel/{id}"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d", u.hook)}
		}},
		{route(del, "/event/channel/{id}"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d", robot(t, u, "deleted"))}
		}},
		{route(post, "/event/channel/test"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: "/api/v1/event/channel/test", body: map[string]any{"channelType": "WEBHOOK", "name": "hook", "address": recv.URL + "/hook", "id": u.hook}}
		}},
		// A reveal publishes its event, a rotation writes the channel and
		// publishes in one transaction: neither may wait for a second
		// connection.
		{route(post, "/event/channel/{id}/secret/reveal"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d/secret/reveal", u.hook)}
		}},
		{route(post, "/event/channel/{id}/secret/rotate"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d/secret/rotate", u.hook), body: map[string]any{"overlapSeconds": 60}}
		}},
		{route(patch, "/event/channel/{id}/disable"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d/disable", robot(t, u, "disabled"))}
		}},
		{route(patch, "/event/channel/{id}/enable"), func(t *testing.T, u poolUser) poolRequest {
			id := robot(t, u, "enabled")
			ok(t, base, u.token, patch, fmt.Sprintf("/api/v1/event/channel/%d/disable", id), nil, nil)
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d/enable", id)}
		}},
		{route(get, "/event/channel/{id}/deliveries"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d/deliveries", u.hook)}
		}},
		{route(get, "/event/channel/{id}/deliveries/hourly"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d/deliveries/hourly?hours=24", u.hook)}
		}},
		{route(post, "/event/channel/{id}/recover"), func(_ *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/channel/%d/recover?since=2026-01-01T00:00:00Z", u.hook)}
		}},
		{route(get, "/event/delivery/{id}"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/delivery/%d", delivery(t, u))}
		}},
		{route(get, "/event/delivery/{id}/attempts"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/delivery/%d/attempts", delivery(t, u))}
		}},
		{route(post, "/event/delivery/{id}/resend"), func(t *testing.T, u poolUser) poolRequest {
			return poolRequest{path: fmt.Sprintf("/api/v1/event/delivery/%d/resend", delivery(t, u))}
		}},
		static(post, "/demo/event/publish", "", map[string]any{"type": "task.trashed", "title": "Published by hand", "text": "At once with seven others.", "data": map[string]any{}}),
	}
}

// robotURL is the address of a WeCom robot of the sink, one per user and
// name.
func robotURL(recv *sink, u poolUser, name string) string {
	if recv == nil {
		return ""
	}
	return recv.URL + "/cgi-bin/webhook/send?key=" + url.QueryEscape(strconv.Itoa(u.i)+"-"+name)
}
