package tencent_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/sms"
	"github.com/deskkit/deskkit/verify/sms/tencent"
)

// A bizKey without a template is refused when the sender is made, not
// when its first code is sent. A refusal by the provider at a send is an
// *sms.Error with the provider's code, which says whether the same
// message may pass later, and after how long when the provider throttled
// it.
func ExampleNew() {
	_, err := tencent.New(tencent.Config{
		SecretID: "AKID-example", SecretKey: "example", SDKAppID: "1400006666", SignName: "深科技",
		Templates: sms.Templates{
			Codes: map[verify.BizKey]map[string]string{
				"SIGNUP": {"zh-CN": "1110"}, "SIGNIN": {"zh-CN": "1111"},
			},
			Notice: map[string]string{"zh-CN": "1120"},
		},
	})
	fmt.Println(err != nil)

	var sendErr error = &sms.Error{Provider: "tencent", Status: 200, Code: "LimitExceeded.PhoneNumberThirtySecondLimit",
		Retryable: true, Throttled: true, RetryAfter: 30 * time.Second}
	if se, ok := errors.AsType[*sms.Error](sendErr); ok && se.Retryable {
		fmt.Println("try again in", se.RetryAfter, "after", se.Code)
	}
	// Output:
	// true
	// try again in 30s after LimitExceeded.PhoneNumberThirtySecondLimit
}
