package tencent

import (
	"testing"

	"github.com/deskkit/deskkit/verify/internal/smsprovider"
)

// The signing function against the example Tencent Cloud publishes.

// Tencent Cloud's "Signature v3": DescribeInstances on CVM with a JSON
// body, signed over content-type and host.
func TestTC3AuthorizationPublishedExample(t *testing.T) {
	body := `{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}`
	if got, want := smsprovider.SHA256Hex([]byte(body)), "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"; got != want {
		t.Fatalf("payload hash %s, want %s", got, want)
	}
	got := tc3Authorization("AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "cvm", 1551113065, "POST", "/", "",
		map[string]string{"content-type": "application/json; charset=utf-8", "host": "cvm.tencentcloudapi.com"}, []byte(body))
	want := "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, SignedHeaders=content-type;host, Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
	if got != want {
		t.Errorf("authorization\n got %s\nwant %s", got, want)
	}
}
