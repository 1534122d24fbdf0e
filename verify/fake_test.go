package verify_test

import "errors"

var errGatewayDown = errors.New("gateway down")
