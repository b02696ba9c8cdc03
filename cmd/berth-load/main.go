// Command berth-load seeds and benchmarks any OpenStack Placement API
// endpoint (Berth or the reference Placement); see cmd/berth-load/load.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthd/berth/cmd/berth-load/load"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := load.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
