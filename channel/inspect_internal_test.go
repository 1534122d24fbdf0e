package channel

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/deskkit/deskkit/internal/notify"
)

// signatures finds every signature a request carries: each of
// webhook-signature's, with and without its version, DingTalk's sign in
// the query and Feishu's in the body.
func TestSignatures(t *testing.T) {
	u, _ := url.Parse("https://oapi.dingtalk.com/robot/send?access_token=t&timestamp=1&sign=d1ngS1gn%3D")
	h := http.Header{}
	h.Set("webhook-signature", "v1,aGVsbG8= v1a,d29ybGQ=")
	got := signatures(&notify.Request{URL: u, Header: h, Body: []byte(`{"timestamp":"1","sign":"f3ishuS1gn=","msg_type":"text"}`)})
	for _, want := range []string{"v1,aGVsbG8=", "aGVsbG8=", "v1a,d29ybGQ=", "d29ybGQ=", "d1ngS1gn=", "d1ngS1gn%3D", "f3ishuS1gn="} {
		if !slices.Contains(got, want) {
			t.Errorf("signatures %q lack %q", got, want)
		}
	}
	if signatures(nil) != nil {
		t.Error("a request never sent has signatures")
	}
}

// keptHeaders masks credentials whole and what parts hold elsewhere, and
// keeps at most maxHeaderBytesKept of them.
func TestKeptHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("Webhook-Signature", "v1,abc")
	h.Set("Set-Cookie", "session=1")
	h.Set("X-Echo", "token s3cr3t and more")
	h.Set("Content-Type", "application/json")
	got := keptHeaders(h, []string{"s3cr3t"})
	want := [][2]string{{"Content-Type", "application/json"}, {"Set-Cookie", "***"}, {"Webhook-Signature", "***"}, {"X-Echo", "token *** and more"}}
	if !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	big := http.Header{}
	for i := range 40 {
		big.Set("X-Big-"+string(rune('A'+i)), strings.Repeat("x", 400))
	}
	size := 0
	for _, kv := range keptHeaders(big, nil) {
		size += len(kv[0]) + len(kv[1])
	}
	if size > maxHeaderBytesKept || size == 0 {
		t.Errorf("kept %d bytes of headers", size)
	}
}
