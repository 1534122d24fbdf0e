package aliyun_test

import (
	"fmt"

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/sms/aliyun"
)

// A template provider is configured with its approved templates: here one
// template for every bizKey in each language, SIGNUP's own in Chinese,
// and the notice's.
func ExampleNew() {
	sender, err := aliyun.New(aliyun.Config{
		AccessKeyID:     "LTAI-example", // a host reads both from its environment
		AccessKeySecret: "example",
		SignName:        "深科技",
		Templates: sms.Templates{
			DefaultLocale: "zh-CN",
			Codes: map[verify.BizKey]map[string]string{
				sms.AnyBizKey: {"zh-CN": "SMS_100001", "en": "SMS_200001"}, // ${code}
				"SIGNUP":      {"zh-CN": "SMS_100002"},
			},
			Notice: map[string]string{"zh-CN": "SMS_100003", "en": "SMS_200003"}, // ${mobile}
		},
	})
	fmt.Println(sender != nil, err)
	// Output: true <nil>
}
