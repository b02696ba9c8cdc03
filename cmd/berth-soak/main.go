// Command berth-soak is the failover soak benchmark (not a test): claims
// and deletes through three berthd processes on a throwaway Patroni
// cluster, a berthd killed every 20 s, one failover of the primary; see
// cmd/berth-soak/soak and docs/reliability.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthd/berth/cmd/berth-soak/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := soak.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
