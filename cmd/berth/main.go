// Command berth is the operator's client of a Berth placement service:
// capacity, usage, provider trees, dry-run claims, scriptlets, scheduling
// policies and the load tool. See cmd/berth/cli and docs/cli.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthd/berth/cmd/berth-load/load"
	"github.com/berthd/berth/cmd/berth/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		StderrTTY: load.IsTerminal(os.Stderr),
	})
	stop()
	os.Exit(code)
}
