package trash

import "github.com/deskkit/deskkit/internal/telemetry"

// scope is the instrumentation scope of the trash's meter and tracer.
const scope = "github.com/deskkit/deskkit/trash"

// newOps is the trash's instruments: a span per operation, and the
// counter deskkit.trash.operations by operation, kind and result.
func newOps(c Config) telemetry.Ops {
	return telemetry.Ops{
		Tracer: telemetry.Tracer(c.TracerProvider, scope),
		Counter: telemetry.Counter(telemetry.Meter(c.MeterProvider, scope), "deskkit.trash.operations", "{operation}",
			"Trash operations, by operation, kind of entry (task, sprint; empty when none) and result (ok, or the error key the API answers)."),
	}
}

// kindOf is the deskkit.kind attribute of an entry's type: "task",
// "sprint", or "" for anything else (a bad input must not make a series).
func kindOf(t TargetType) string {
	switch t {
	case TargetTask:
		return "task"
	case TargetSprint:
		return "sprint"
	}
	return ""
}
