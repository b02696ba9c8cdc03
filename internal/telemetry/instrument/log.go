package instrument

import (
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps h so that every record logged with a context carries
// that context's request ID (request_id) and, when the context holds a
// valid span, its trace and span IDs (trace_id, span_id), which join log
// lines to traces. Given a handler LogHandler returned (or derived from
// one with WithAttrs or WithGroup), it returns h unchanged, so wrapping
// twice does not log the IDs twice.
func LogHandler(h slog.Handler) slog.Handler {
	if lh, ok := h.(logHandler); ok {
		return lh
	}
	return logHandler{h}
}

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	var buf [3]slog.Attr
	r.AddAttrs(contextAttrs(buf[:0], ctx)...)
	return h.Handler.Handle(ctx, oneLineErrors(r))
}

// contextAttrs appends to dst the attributes LogHandler adds to a record
// logged with ctx: request_id, then trace_id and span_id.
func contextAttrs(dst []slog.Attr, ctx context.Context) []slog.Attr {
	if ctx == nil {
		return dst
	}
	if id := RequestID(ctx); id != "" {
		dst = append(dst, slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		dst = append(dst, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return dst
}

// Log hands h the record r with attrs added, as r.AddAttrs(attrs...)
// then h.Handle(ctx, r) would. When h is a handler LogHandler returned,
// attrs and the attributes it adds from ctx are added to r at once: the
// attributes past the record's inline ones then take one allocation,
// not one per addition.
func Log(ctx context.Context, h slog.Handler, r slog.Record, attrs ...slog.Attr) error {
	lh, ok := h.(logHandler)
	if !ok {
		r.AddAttrs(attrs...)
		return h.Handle(ctx, r)
	}
	var buf [10]slog.Attr
	all := contextAttrs(append(buf[:0], attrs...), ctx)
	r.AddAttrs(all...)
	return lh.Handler.Handle(ctx, oneLineErrors(r))
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(attrs)}
}

func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }

// oneLineErrors returns r with every error attribute whose message spans
// lines (pgx joins a connect error's per-host causes with "\n\t") as one
// line, its whitespace runs made single spaces: a text log would quote
// the newlines and tabs as \n\t inside the one-line record. Records
// without such an error are returned as they are.
func oneLineErrors(r slog.Record) slog.Record {
	multiline := false
	r.Attrs(func(a slog.Attr) bool {
		// Kind first: Any boxes a string, number or duration value.
		if a.Value.Kind() != slog.KindAny {
			return true
		}
		if err, ok := a.Value.Any().(error); ok && err != nil && strings.ContainsAny(err.Error(), "\n\t") {
			multiline = true
			return false
		}
		return true
	})
	if !multiline {
		return r
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() != slog.KindAny {
			out.AddAttrs(a)
			return true
		}
		if err, ok := a.Value.Any().(error); ok && err != nil {
			a = slog.String(a.Key, strings.Join(strings.Fields(err.Error()), " "))
		}
		out.AddAttrs(a)
		return true
	})
	return out
}
