package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// echoReceiver is a webhook that fails, answering with a JSON body and
// headers that echo the request's signature and URI back, as a careless
// receiver's error page does; and that takes everything once told to.
type echoReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	ok   bool
	sigs []string
}

func startEchoReceiver(t *testing.T) *echoReceiver {
	t.Helper()
	e := &echoReceiver{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sig := r.Header.Get("webhook-signature")
		e.mu.Lock()
		e.sigs = append(e.sigs, sig)
		ok := e.ok
		e.mu.Unlock()
		w.Header().Set("X-Seen-Signature", sig)
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		b, _ := json.Marshal(map[string]any{"error": "queue full", "uri": r.RequestURI, "signature": sig})
		_, _ = w.Write(b)
	}))
	t.Cleanup(e.Close)
	return e
}

// TestConsoleDeliveryInspection publishes an event to a webhook that fails
// and echoes its request's signature and token back; its delivery's page,
// in English and in Chinese, at 390 and 1440 px, shows the payload
// pretty-printed, each attempt's request beside its answer (stacked on a
// phone), links back to its channel, and shows no signature or token; a
// test of the channel shows the reply; GET /api/v1/event/delivery/{id} and
// the server's log show neither; on both databases.
func TestConsoleDeliveryInspection(t *testing.T) {
	eachURL(t, func(t *testing.T, rawURL string) {
		base, logs := startServer(t, map[string]string{
			envDatabaseURL: rawURL, envChannelAllowPrivate: "true", envEventRetrySchedule: "0,0,0",
		})
		recv := startEchoReceiver(t)
		admin := issueFor(t, rawURL, "-tenant", "demo", "-username", "ada", "-admin")
		const token = "tok3nQWERTYUIOPASDFGH"
		var added struct {
			ID     int64
			Secret string
		}
		ok(t, base, admin, http.MethodPost, "/api/v1/event/channel",
			map[string]any{"channelType": "WEBHOOK", "name": "echo", "address": recv.URL + "/hook/" + token}, &added)
		ok(t, base, admin, http.MethodPost, "/api/v1/demo/event/publish", map[string]any{"type": "demo.hello", "title": "hello"}, nil)

		tb := newTab(t, base)
		tb.signIn(admin)
		chPath := fmt.Sprintf("/console/channels/%d", added.ID)
		tb.waitPage(chPath, "#deliveries", deliveryStatus(1, "FAILED"), "the delivery to fail")
		var page struct {
			List []struct{ ID int64 }
		}
		ok(t, base, admin, http.MethodGet, fmt.Sprintf("/api/v1/event/channel/%d/deliveries", added.ID), nil, &page)
		if len(page.List) != 1 {
			t.Fatalf("deliveries: %+v", page)
		}
		id := page.List[0].ID

		// The test of the stored channel shows the reply.
		tb.submit("#test-result", chromedp.Click(chromedp.CSS("#test")))
		if got := tb.text("#test-status"); !strings.Contains(got, "503") {
			t.Errorf("the test's status: %q", got)
		}
		if got := tb.text("#test-reply"); !strings.Contains(got, "queue full") || !strings.Contains(got, `"signature":"***`) {
			t.Errorf("the test's reply: %q", got)
		}

		// The API's answer.
		status, env := call(t, base, admin, http.MethodGet, fmt.Sprintf("/api/v1/event/delivery/%d", id), nil)
		if status != http.StatusOK {
			t.Fatalf("inspect: %d %s", status, env.Msg)
		}
		var d struct {
			Event struct {
				Payload json.RawMessage
			}
			Attempts []struct {
				Request  struct{ URL, Body string }
				Response struct{ StatusCode int }
			}
		}
		if err := json.Unmarshal(env.Data, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Attempts) != 3 || d.Attempts[0].Response.StatusCode != 503 || d.Attempts[0].Request.URL != recv.URL+"/***" ||
			d.Attempts[0].Request.Body != string(d.Event.Payload) {
			t.Errorf("inspected: %s", env.Data)
		}

		for _, lang := range []string{"en", "zh-CN"} {
			tb := tb
			if lang != "en" {
				tb = newTabIn(t, base, "zh-CN,zh;q=0.9")
				tb.signIn(admin)
			}
			tb.open(fmt.Sprintf("/console/deliveries/%d", id), "#attempts")
			if href := evalIn[string](tb, `document.querySelector("#back").getAttribute("href")`); href != fmt.Sprintf("%s#delivery-%d", chPath, id) {
				t.Errorf("%s: the way back: %q", lang, href)
			}
			if lang == "en" {
				if h := tb.text("h1"); h != fmt.Sprintf("Delivery %d: demo.hello", id) {
					t.Errorf("the title: %q", h)
				}
				if b := tb.text("#back"); b != "Back to the channel “echo”" {
					t.Errorf("the way back says %q", b)
				}
			} else {
				tb.wantChinese("h1", fmt.Sprintf("推送 %d：demo.hello", id))
				tb.wantChinese("#back", "返回通道“echo”")
				tb.wantChinese("#attempt-1 .request h4", "请求")
				tb.wantChinese("#attempt-1 .answer h4", "响应")
				tb.wantChinese("#attempt-1 .code", "状态码：503")
			}
			// Pretty-printed: one member a line, indented.
			if p := evalIn[string](tb, `document.querySelector("#payload").textContent`); !strings.Contains(p, "\n  \"type\": \"demo.hello\",\n") {
				t.Errorf("%s: the payload is not pretty-printed: %q", lang, p)
			}
			if n := evalIn[int](tb, `document.querySelectorAll("#attempts article.attempt").length`); n != 3 {
				t.Errorf("%s: %d attempts shown, want 3", lang, n)
			}
			html := evalIn[string](tb, `document.body.innerHTML`)
			for _, s := range append(recv.signatures(), token, added.Secret) {
				if s != "" && strings.Contains(html, s) {
					t.Errorf("%s: the page shows %q", lang, s)
				}
			}
			// Side by side at 1440 px; stacked at 390.
			const layout = `(function () { var q = document.querySelector("#attempt-1 .request").getBoundingClientRect(), a = document.querySelector("#attempt-1 .answer").getBoundingClientRect();
  return a.left >= q.right ? "side" : a.top >= q.bottom ? "stacked" : "overlap"; })()`
			tb.do(chromedp.EmulateViewport(1440, 900))
			if got := evalIn[string](tb, layout); got != "side" {
				t.Errorf("%s at 1440 px: request and answer are %s", lang, got)
			}
			tb.do(chromedp.EmulateViewport(390, 844))
			if got := evalIn[string](tb, layout); got != "stacked" {
				t.Errorf("%s at 390 px: request and answer are %s", lang, got)
			}
			if overflow := evalIn[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
				t.Errorf("%s at 390 px: the page is %d px wider than the window", lang, overflow)
			}
			tb.do(chromedp.EmulateViewport(1440, 900))
			tb.inspect("channels-inspect-" + lang)
		}

		// No signature, token or secret in the API's answer or the log.
		for _, s := range append(recv.signatures(), token, added.Secret) {
			if s == "" {
				continue
			}
			if strings.Contains(string(env.Data), s) {
				t.Errorf("the API's answer shows %q", s)
			}
			if strings.Contains(logs.String(), s) {
				t.Errorf("the log shows %q", s)
			}
		}
	})
}

// signatures are every signature the receiver got, whole and without
// their "v1," prefixes.
func (e *echoReceiver) signatures() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, h := range e.sigs {
		for sig := range strings.FieldsSeq(h) {
			_, b64, _ := strings.Cut(sig, ",")
			out = append(out, sig, b64)
		}
	}
	return out
}
