package core

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestPrimaryFirst: once connections landed on a host of a multi-host
// URL, new connections try it first and the others after, in order.
func TestPrimaryFirst(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://u@127.0.0.1:5001,127.0.0.1:5002,127.0.0.1:5003/db?target_session_attrs=read-write")
	if err != nil {
		t.Fatal(err)
	}
	// Each host once, in the order tried (with sslmode prefer, pgx lists
	// each twice: with TLS, then without).
	hosts := func(c *pgx.ConnConfig) []uint16 {
		out := []uint16{c.Port}
		for _, fb := range c.Fallbacks {
			if fb.Port != out[len(out)-1] {
				out = append(out, fb.Port)
			}
		}
		return out
	}
	p := &PrimaryTracker{Log: slog.New(slog.DiscardHandler)}
	c := cfg.Copy()
	if err := p.BeforeConnect(context.Background(), c); err != nil || len(hosts(c)) != 3 || hosts(c)[0] != 5001 {
		t.Fatalf("before any connection: %v %v", hosts(c), err)
	}
	p.host, p.port = "127.0.0.1", 5003
	c = cfg.Copy()
	if err := p.BeforeConnect(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if got := hosts(c); len(got) != 3 || got[0] != 5003 || got[1] != 5001 || got[2] != 5002 {
		t.Fatalf("after a switch to 5003: %v", got)
	}
	// The original is untouched (each connection gets a copy).
	if got := hosts(cfg); cfg.Port != 5001 || len(got) != 3 || got[2] != 5003 {
		t.Fatalf("the pool's config changed: %d %v", cfg.Port, cfg.Fallbacks)
	}
}
