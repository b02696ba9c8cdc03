// Package telemetry installs berthd's OpenTelemetry tracer and meter
// providers as the process-wide globals that instrumented packages read
// (the HTTP middleware in httpapi, and the spans and metrics that claims,
// scheduler and ledger record through the instrument subpackage). It owns
// the choice of exporters (OTLP, stdout, Prometheus), the /metrics
// handler and the flush on shutdown, and the writer of berthd's log
// lines (LogWriter: each at once, or held for a flush interval). It
// imports no package of Berth's domain: those register their own
// instruments (ledger.ObservePool, scriptlet.Observe), and it creates no
// spans itself.
package telemetry
