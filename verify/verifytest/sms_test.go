package verifytest

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The fakes' checks accept the providers' published examples, and refuse
// them with one byte changed.

func TestCheckACS3PublishedExample(t *testing.T) {
	r := httptest.NewRequest("POST", "https://ecs.cn-shanghai.aliyuncs.com/?RegionId=cn-shanghai&ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd", nil)
	r.Header.Set("x-acs-action", "RunInstances")
	r.Header.Set("x-acs-version", "2014-05-26")
	r.Header.Set("x-acs-date", "2023-10-26T10:22:32Z")
	r.Header.Set("x-acs-signature-nonce", "3156853299f313e23d1673dc12e1703d")
	r.Header.Set("x-acs-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	r.Header.Set("Authorization", "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0")
	if err := checkACS3(r, nil, "YourAccessKeyId", "YourAccessKeySecret"); err != nil {
		t.Fatalf("the published example: %v", err)
	}
	r.Header.Set("x-acs-date", "2023-10-26T10:22:33Z")
	if err := checkACS3(r, nil, "YourAccessKeyId", "YourAccessKeySecret"); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("a changed date: %v, want a signature mismatch", err)
	}
}

func TestCheckTC3PublishedExample(t *testing.T) {
	body := `{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}`
	r := httptest.NewRequest("POST", "https://cvm.tencentcloudapi.com/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	r.Header.Set("X-TC-Action", "DescribeInstances")
	r.Header.Set("X-TC-Timestamp", "1551113065")
	r.Header.Set("X-TC-Version", "2017-03-12")
	r.Header.Set("X-TC-Region", "ap-guangzhou")
	r.Header.Set("Authorization", "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, SignedHeaders=content-type;host, Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168")
	if err := checkTC3(r, []byte(body), "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "cvm"); err != nil {
		t.Fatalf("the published example: %v", err)
	}
	if err := checkTC3(r, []byte(strings.Replace(body, "1", "2", 1)), "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "cvm"); err == nil {
		t.Fatal("a changed body passed")
	}
}
