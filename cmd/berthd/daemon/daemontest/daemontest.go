package daemontest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/berthd/berth/cmd/berthd/daemon"
)

// stopTimeout bounds how long a stopping berthd may take; only a hung
// shutdown reaches it.
const stopTimeout = time.Minute

// Serve builds berthd from cfg, logging to log, serves it until the test
// ends and returns its base URL (http://ADDR). At the end of the test it
// stops berthd and fails the test if Run returned an error or berthd did
// not stop within a minute. cfg.Listen should name a free port
// (127.0.0.1:0).
func Serve(t testing.TB, cfg daemon.Config, log *slog.Logger) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.New(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatalf("berthd: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("berthd: %v", err)
			}
		case <-time.After(stopTimeout):
			t.Error("berthd did not stop")
		}
	})
	return "http://" + d.Addr().String()
}
