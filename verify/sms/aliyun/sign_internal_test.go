package aliyun

import (
	"testing"

	"github.com/deskkit/deskkit/verify/internal/smsprovider"
)

// The signing function against the example Alibaba Cloud publishes.

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
	query := smsprovider.CanonicalQuery(map[string]string{"RegionId": "cn-shanghai", "ImageId": "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd"})
	if want := "ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai"; query != want {
		t.Fatalf("query %q, want %q", query, want)
	}
	got := aliyunAuthorization("YourAccessKeyId", "YourAccessKeySecret", "POST", "/", query, headers, nil)
	want := "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0"
	if got != want {
		t.Errorf("authorization\n got %s\nwant %s", got, want)
	}
}
