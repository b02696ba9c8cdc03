// Package telemetry installs berthd's OpenTelemetry tracer and meter
// providers as the process-wide globals that instrumented packages (the
// HTTP middleware in httpapi) read. It owns the choice of exporter and the
// flush on shutdown; it creates no spans or instruments itself.
package telemetry
