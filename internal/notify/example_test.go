package notify_test

import (
	"fmt"
	"time"

	"github.com/deskkit/deskkit/internal/notify"
)

// A receiver recomputes the webhook-signature header from the webhook-id
// and webhook-timestamp headers and the body, with the channel's secret.
func ExampleSign() {
	secret := "whsec_ZGVza2tpdC1leGFtcGxlLXNlY3JldC0zMi1ieXRlcyE="
	sig, err := notify.Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0),
		[]byte(`{"test": 2432232314}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(sig)
	// Output: v1,ynqD/ysQNftUqvtBqgDg8Y7bwW+RjL58/d3yur16bFc=
}
