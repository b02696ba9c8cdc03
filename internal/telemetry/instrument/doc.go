// Package instrument is the small API Berth's packages call to describe
// their work to OpenTelemetry: child spans for the stages of a request
// (candidate generation, scheduler filters, weighers and scriptlet, the
// claim's writes), the claim and candidate metrics (GET
// /allocation_candidates' answer cache's too), and the
// request ID that log lines carry (LogHandler stamps it, with the trace
// and span IDs, on every record logged with a request's context).
//
// It depends on the OpenTelemetry API only. Spans and instruments come
// from the global providers current at each call (instruments are cached
// per meter provider), so they are no-ops until the process
// (internal/telemetry) installs real ones, and a test may install its
// own; until a tracer provider is installed, Start and Stage return
// without building a span or its attributes. Callers hold no
// instrumentation state.
package instrument
