package console

import (
	"net/http"
	"time"
)

// zoneOf is the time zone r's reader reads and writes times in.
//
// replaced by the lead's zone.go at merge
func (c *Console) zoneOf(r *http.Request) *time.Location { return time.UTC }
