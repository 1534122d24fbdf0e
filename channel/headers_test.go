package channel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestCustomHeaders: a webhook's custom headers arrive with every attempt
// of a delivery (a failed one and its retry) and with tests, beside the
// signature headers; an admin sees them whole, a user who sees addresses
// masked sees each value as ***; a replace replaces them (the worker's
// cached channel too); a test that gives none sends the stored channel's
// only to its own address; they are stored encrypted; on both databases.
func TestCustomHeaders(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		token := "Bearer 0f9e8d7c6b5a49382716aabbccddeeff"
		added, err := f.r.Add(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/hook",
			Headers: []channel.Header{{Name: "Authorization", Value: token}, {Name: "x-tenant", Value: "  acme  "}}})
		if err != nil {
			t.Fatal(err)
		}
		want := []channel.Header{{Name: "Authorization", Value: token}, {Name: "x-tenant", Value: "acme"}}
		if !sameHeaders(added.Headers, want) {
			t.Errorf("added: %+v", added.Headers)
		}
		// arrived checks that the last request carried hs, and the
		// signature headers still.
		arrived := func(what string, hs []channel.Header) {
			t.Helper()
			req, _ := f.recv.last(t)
			for _, h := range hs {
				if got := req.Header.Values(h.Name); len(got) != 1 || got[0] != h.Value {
					t.Errorf("%s: %s is %q, want %q", what, h.Name, got, h.Value)
				}
			}
			if req.Header.Get("webhook-signature") == "" || req.Header.Get("webhook-id") == "" || req.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: the webhook's own headers are missing: %v", what, req.Header)
			}
		}

		// Every attempt: one that fails, and its retry.
		f.recv.answer(500, "echo "+token)
		f.publish(t, 10, newEvent("task.trashed"))
		if n := f.run(t); n != 1 {
			t.Fatalf("first attempt: claimed %d", n)
		}
		arrived("first attempt", want)
		f.clock.Advance(2 * time.Minute)
		f.recv.answer(200, "ok")
		if n := f.run(t); n != 1 {
			t.Fatalf("second attempt: claimed %d", n)
		}
		arrived("second attempt", want)
		d := f.only(t, added.ID)
		atts, err := f.r.Attempts(ctx, f.ann, d.ID)
		if err != nil || len(atts) != 2 {
			t.Fatalf("attempts: %+v %v", atts, err)
		}
		if strings.Contains(atts[0].Response, "0f9e8d7c6b5a49382716aabbccddeeff") {
			t.Errorf("the reply that echoed the token was stored with it: %q", atts[0].Response)
		}

		// Tests: of the stored channel (its headers), with headers of
		// their own, and to another address (none of the stored ones).
		if _, err := f.r.Test(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/hook"}); err != nil {
			t.Fatal(err)
		}
		arrived("test of the stored channel", want)
		own := []channel.Header{{Name: "X-Trial", Value: "yes"}}
		if _, err := f.r.Test(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/hook", Headers: own}); err != nil {
			t.Fatal(err)
		}
		arrived("test with its own headers", own)
		if req, _ := f.recv.last(t); req.Header.Get("Authorization") != "" {
			t.Error("a test with headers of its own carried the stored ones too")
		}
		if _, err := f.r.Test(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/other"}); err != nil {
			t.Fatal(err)
		}
		if req, _ := f.recv.last(t); req.Header.Get("Authorization") != "" || req.Header.Get("X-Tenant") != "" {
			t.Errorf("the stored headers went to another address: %v", req.Header)
		}

		// Shown whole to the admin, masked to another user.
		max := deskkit.Principal{UserID: 3, TenantID: 10}
		for _, c := range []struct {
			p    deskkit.Principal
			want []channel.Header
		}{
			{f.ann, want},
			{max, []channel.Header{{Name: "Authorization", Value: "***"}, {Name: "x-tenant", Value: "***"}}},
		} {
			got, err := f.r.Get(ctx, c.p, added.ID)
			if err != nil || !sameHeaders(got.Headers, c.want) {
				t.Errorf("get as %d: %+v %v", c.p.UserID, got.Headers, err)
			}
			list, err := f.r.ListAll(ctx, c.p)
			if err != nil || len(list) != 1 || !sameHeaders(list[0].Headers, c.want) {
				t.Errorf("list as %d: %+v %v", c.p.UserID, list, err)
			}
		}

		// Stored encrypted: the row holds neither the token nor the name.
		var raw string
		if err := db.NewSelect().Table("deskkit_channels").Column("headers_enc").Where("id = ?", added.ID).Scan(ctx, &raw); err != nil {
			t.Fatal(err)
		}
		if raw == "" || strings.Contains(raw, "0f9e8d7c") || strings.Contains(raw, "Authorization") {
			t.Errorf("headers_enc is not sealed: %q", raw)
		}

		// A replace replaces them, for the worker too.
		next := []channel.Header{{Name: "X-Api-Key", Value: "k-2"}}
		rep, err := f.r.Replace(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/hook", Headers: next})
		if err != nil || !sameHeaders(rep.Headers, next) {
			t.Fatalf("replace: %+v %v", rep.Headers, err)
		}
		f.publish(t, 10, newEvent("task.trashed"))
		if n := f.run(t); n != 1 {
			t.Fatalf("after the replace: claimed %d", n)
		}
		arrived("after the replace", next)
		if req, _ := f.recv.last(t); req.Header.Get("Authorization") != "" {
			t.Error("a replaced header was still sent")
		}
		// Replaced with none.
		rep, err = f.r.Replace(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "hook", Address: f.recv.URL + "/hook"})
		if err != nil || rep.Headers == nil || len(rep.Headers) != 0 {
			t.Fatalf("replace without headers: %+v %v", rep.Headers, err)
		}
		if got, err := f.r.Get(ctx, f.ann, added.ID); err != nil || got.Headers == nil || len(got.Headers) != 0 {
			t.Errorf("after a replace without headers: %+v %v", got.Headers, err)
		}
	})
}

// TestCustomHeadersRefused: every bad header is a 4xx input error naming
// headers[i].name or .value (or headers) and its rule, and nothing is
// stored; types other than WEBHOOK refuse headers, naming the types that
// take them.
func TestCustomHeadersRefused(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		eleven := make([]channel.Header, channel.MaxHeaders+1)
		for i := range eleven {
			eleven[i] = channel.Header{Name: fmt.Sprintf("X-H%d", i), Value: "v"}
		}
		ok := channel.Header{Name: "X-Ok", Value: "fine"}
		for _, c := range []struct {
			name    string
			headers []channel.Header
			field   string
			says    string
		}{
			{"eleven", eleven, "headers", "at most 10"},
			{"empty name", []channel.Header{ok, {Name: "", Value: "v"}}, "headers[1].name", "is required"},
			{"space in name", []channel.Header{{Name: "X Api", Value: "v"}}, "headers[0].name", "HTTP header name"},
			{"colon in name", []channel.Header{{Name: "X-Api:", Value: "v"}}, "headers[0].name", "HTTP header name"},
			{"backquote in name", []channel.Header{{Name: "X`Api", Value: "v"}}, "headers[0].name", "HTTP header name"},
			{"non-ASCII name", []channel.Header{{Name: "X-Clé", Value: "v"}}, "headers[0].name", "HTTP header name"},
			{"long name", []channel.Header{{Name: strings.Repeat("x", 101), Value: "v"}}, "headers[0].name", "at most 100 bytes"},
			{"host", []channel.Header{{Name: "host", Value: "evil.example"}}, "headers[0].name", "cannot be given"},
			{"same name twice", []channel.Header{ok, ok}, "headers[1].name", "again"},
			{"connection", []channel.Header{{Name: "Connection", Value: "close"}}, "headers[0].name", "cannot be given"},
			{"proxy-authorization", []channel.Header{{Name: "Proxy-Authorization", Value: "Basic x"}}, "headers[0].name", "cannot be given"},
			{"hop-by-hop", []channel.Header{{Name: "Transfer-Encoding", Value: "chunked"}}, "headers[0].name", "cannot be given"},
			{"keep-alive", []channel.Header{{Name: "Keep-Alive", Value: "1"}}, "headers[0].name", "cannot be given"},
			{"te", []channel.Header{{Name: "TE", Value: "trailers"}}, "headers[0].name", "cannot be given"},
			{"content-type", []channel.Header{{Name: "content-type", Value: "text/plain"}}, "headers[0].name", "cannot be given"},
			{"webhook-signature", []channel.Header{{Name: "Webhook-Signature", Value: "v1,x"}}, "headers[0].name", "webhook-*"},
			{"webhook-other", []channel.Header{{Name: "webhook-anything", Value: "x"}}, "headers[0].name", "webhook-*"},
			{"duplicate without case", []channel.Header{{Name: "X-Key", Value: "a"}, {Name: "x-key", Value: "b"}}, "headers[1].name", "again (headers[0])"},
			{"newline in value", []channel.Header{{Name: "X-A", Value: "a\r\nHost: evil"}}, "headers[0].value", "control characters"},
			{"tab in value", []channel.Header{{Name: "X-A", Value: "a\tb"}}, "headers[0].value", "control characters"},
			{"NUL in value", []channel.Header{{Name: "X-A", Value: "a\x00"}}, "headers[0].value", "control characters"},
			{"DEL in value", []channel.Header{{Name: "X-A", Value: "a\x7f"}}, "headers[0].value", "control characters"},
			{"bad UTF-8", []channel.Header{{Name: "X-A", Value: "a\xff"}}, "headers[0].value", "UTF-8"},
			{"long value", []channel.Header{{Name: "X-A", Value: strings.Repeat("v", 1001)}}, "headers[0].value", "at most 1000 bytes"},
		} {
			_, err := f.r.Add(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "hook " + c.name, Address: "https://hooks.example.com/x", Headers: c.headers})
			var ie *deskkit.InputError
			if !errors.As(err, &ie) || ie.Field != c.field || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: %v; want an input error for %s saying %q", c.name, err, c.field, c.says)
			}
			if _, err := f.r.Test(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "t", Address: f.recv.URL, Headers: c.headers}); !isInputError(err, c.field) {
				t.Errorf("test %s: %v", c.name, err)
			}
		}
		if list, err := f.r.ListAll(ctx, f.ann); err != nil || len(list) != 0 {
			t.Errorf("refused adds stored channels: %+v %v", list, err)
		}
		_, err := f.r.Add(ctx, f.ann, channel.Input{Type: "EMAIL", Name: "mail", Address: "ann@example.com", Headers: []channel.Header{ok}})
		if !isInputError(err, "headers") || !strings.Contains(err.Error(), "taken only by channels of type WEBHOOK") {
			t.Errorf("e-mail with headers: %v", err)
		}
		// An empty list is no headers, for any type.
		if _, err := f.r.Add(ctx, f.ann, channel.Input{Type: "EMAIL", Name: "mail", Address: "ann@example.com", Headers: []channel.Header{}}); err != nil {
			t.Errorf("e-mail with an empty list: %v", err)
		}
		infos := channel.TypeInfos()
		for _, ti := range infos {
			if ti.Headers != (ti.Type == channel.Webhook) {
				t.Errorf("%s: TypeInfo.Headers is %v", ti.Type, ti.Headers)
			}
		}
	})
}

func sameHeaders(a, b []channel.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}
