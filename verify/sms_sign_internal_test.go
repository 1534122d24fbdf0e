package verify

import (
	"strings"
	"testing"
)

// The signing functions against the examples the providers publish.

// Alibaba Cloud's "V3 request structure and signature": RunInstances on
// ECS with two query parameters and no body.
func TestAliyunAuthorizationPublishedExample(t *testing.T) {
	headers := map[string]string{
		"host":                  "ecs.cn-shanghai.aliyuncs.com",
		"x-acs-action":          "RunInstances",
		"x-acs-content-sha256":  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"x-acs-date":            "2023-10-26T10:22:32Z",
		"x-acs-signature-nonce": "3156853299f313e23d1673dc12e1703d",
		"x-acs-version":         "2014-05-26",
	}
	query := canonicalQuery(map[string]string{"RegionId": "cn-shanghai", "ImageId": "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd"})
	if want := "ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai"; query != want {
		t.Fatalf("query %q, want %q", query, want)
	}
	got := aliyunAuthorization("YourAccessKeyId", "YourAccessKeySecret", "POST", "/", query, headers, nil)
	want := "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0"
	if got != want {
		t.Errorf("authorization\n got %s\nwant %s", got, want)
	}
}

// Tencent Cloud's "Signature v3": DescribeInstances on CVM with a JSON
// body, signed over content-type and host.
func TestTC3AuthorizationPublishedExample(t *testing.T) {
	body := `{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}`
	if got, want := sha256Hex([]byte(body)), "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"; got != want {
		t.Fatalf("payload hash %s, want %s", got, want)
	}
	got := tc3Authorization("AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "cvm", 1551113065, "POST", "/", "",
		map[string]string{"content-type": "application/json; charset=utf-8", "host": "cvm.tencentcloudapi.com"}, []byte(body))
	want := "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, SignedHeaders=content-type;host, Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
	if got != want {
		t.Errorf("authorization\n got %s\nwant %s", got, want)
	}
}

func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{
		"AZaz09-_.~":        "AZaz09-_.~",
		" a!*'()+/=&":       "%20a%21%2A%27%28%29%2B%2F%3D%26",
		"短信":                "%E7%9F%AD%E4%BF%A1",
		`{"code":"123456"}`: "%7B%22code%22%3A%22123456%22%7D",
	} {
		if got := percentEncode(in); got != want {
			t.Errorf("percentEncode(%q) = %q, want %q", in, got, want)
		}
	}
	if got := canonicalLocale(" ZH_cn "); got != "zh-CN" {
		t.Errorf("canonicalLocale = %q", got)
	}
	if got := canonicalLocale("zh-hans-cn"); !strings.EqualFold(got, "zh-Hans-CN") || got != "zh-Hans-CN" {
		t.Errorf("canonicalLocale = %q", got)
	}
}
