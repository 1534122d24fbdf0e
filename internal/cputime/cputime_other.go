//go:build !unix

// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU beside wall time.
package cputime

import "time"

// Process is 0 where getrusage is not there: CPU metrics read 0.
func Process() time.Duration { return 0 }
