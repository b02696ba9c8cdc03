package instrument

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A connect error from pgx spans lines ("...:\n\t127.0.0.1:5432 ..."); the
// log line must not carry a literal \n\t.
func TestLogHandlerOneLineErrors(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewTextHandler(&buf, nil)))
	err := errors.New("failed to connect to `user=berth database=berth`:\n\t127.0.0.1:5432 (127.0.0.1): dial error: connection refused")
	log.ErrorContext(context.Background(), "database unreachable", "error", err, "attempt", 3)
	out := buf.String()
	if strings.Contains(out, `\n`) || strings.Contains(out, `\t`) || strings.Count(out, "\n") != 1 {
		t.Errorf("log line: %q", out)
	}
	if !strings.Contains(out, "berth`: 127.0.0.1:5432 (127.0.0.1): dial error") || !strings.Contains(out, "attempt=3") {
		t.Errorf("log line lost its content: %q", out)
	}
}
