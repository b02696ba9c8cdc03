package patronitest_test

import (
	"context"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/patronitest"
)

// TestClusterFailsOver starts a cluster, kills the primary and checks
// that the synchronous standby takes over and the old primary comes
// back as the new synchronous standby; then a switchover.
func TestClusterFailsOver(t *testing.T) {
	c := patronitest.New(t, patronitest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.CreateDatabase(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	old, p, err := c.FailOver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d took over in %v", p, time.Since(start).Round(time.Millisecond))
	if out, err := c.Psql(ctx, p, "t", "SELECT pg_is_in_recovery()"); err != nil || out != "f" {
		t.Fatalf("new primary in recovery: %q %v", out, err)
	}
	if err := c.WaitSync(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := c.Switchover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q != old {
		t.Fatalf("switchover went to node %d, want %d", q, old)
	}
}
