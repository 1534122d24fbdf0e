//go:build !unix

package channel

import "time"

// cpuTime is 0 where getrusage is not there: the CPU metrics read 0.
func cpuTime() time.Duration { return 0 }
