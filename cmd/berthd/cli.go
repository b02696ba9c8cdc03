package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/berthd/berth/cmd/berthd/daemon"
)

// logPlacementConf says which Placement configuration files were read,
// and names in one warning the options of theirs that Berth does not use.
func logPlacementConf(log *slog.Logger, files []string, pc daemon.PlacementConf) {
	if len(files) == 0 {
		return
	}
	log.Info("read Placement's configuration", "files", files)
	if len(pc.Unused) > 0 {
		log.Warn("options of the configuration file that Berth does not use", "options", strings.Join(pc.Unused, " "))
	}
	for _, note := range pc.Notes {
		log.Warn(note)
	}
}

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// run executes the command in args and returns the exit status.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	command := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		command, args = args[0], args[1:]
	}
	switch command {
	case "serve", "migrate":
		cfg, pc, err := loadConfig(args, getenv, stdout)
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		if err != nil {
			fmt.Fprintf(stderr, "berthd: %v\nRun 'berthd --help' for usage.\n", err)
			return exitUsage
		}
		logOut := cfg.NewLogWriter(stderr)
		defer logOut.Close()
		log := cfg.NewLogger(logOut)
		logPlacementConf(log, cfg.ConfigFiles, pc)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if command == "migrate" {
			err = daemon.Migrate(ctx, cfg, log)
		} else {
			setGCPercent(getenv)
			daemon.ApplyMemoryLimit(daemon.MemoryLimitParams{Getenv: getenv}, log)
			err = serve(ctx, cfg, log)
		}
		if err != nil {
			log.Error("berthd failed", "command", command, "error", err)
			return exitError
		}
		return exitOK
	case "devdb":
		return devdb(args, stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "berthd %s (%s)\n", versionString(), runtime.Version())
		return exitOK
	case "help":
		printUsage(stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "berthd: unknown command %q\nRun 'berthd --help' for usage.\n", command)
		return exitUsage
	}
}

// defaultGCPercent is the server's GOGC unless the environment sets
// GOGC. berthd's live heap is small (the provider snapshot and the
// requests in flight: tens of MiB at 1,000 nodes) and a claim allocates a
// few hundred KiB that die with it, so at Go's default of 100 the garbage
// collector ran about every few dozen claims and took 16% of berthd's CPU
// under POST /claims at 64 clients. At 400 it runs a quarter as often,
// for a heap that may grow to five times the live one. Where the live
// heap is large (the snapshot of 100,000 providers) that growth is capped
// at defaultHeapHeadroom (daemon.StartHeapHeadroom), and the soft memory
// limit daemon.ApplyMemoryLimit sets (GOMEMLIMIT, or 90% of the cgroup's
// limit) bounds the heap too: near it the collector runs as often as
// needed.
const defaultGCPercent = 400

// defaultHeapHeadroom is the most the heap grows above the live heap
// between two collections unless GOGC is set (but never less than the
// live heap: GOGC 100). At 100,000 providers (a live heap of about 62
// MiB) it is GOGC 206 instead of 400; up to 32 MiB of live heap it is
// GOGC 400 (docs/performance.md, "Memory per provider").
const defaultHeapHeadroom = 128 << 20

// setGCPercent applies defaultGCPercent, capped by defaultHeapHeadroom,
// when GOGC is not set.
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		daemon.StartHeapHeadroom(daemon.HeapHeadroom{MaxPercent: defaultGCPercent, Headroom: defaultHeapHeadroom})
	}
}

// serve builds the daemon and runs it until ctx ends.
func serve(ctx context.Context, cfg daemon.Config, log *slog.Logger) error {
	d, err := daemon.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// devdb runs the hidden `berthd devdb` command: a throwaway PostgreSQL
// cluster for scripts and tests, whose URL it prints on standard output.
func devdb(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("berthd devdb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "", "directory for the cluster (default: a new temporary directory, removed on exit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: berthd devdb [--data-dir DIR]\n\n"+
			"Starts a throwaway PostgreSQL cluster (fsync off, unix socket only), prints the\n"+
			"superuser URL of its postgres database and runs until SIGINT or SIGTERM.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.DevDB(ctx, *dataDir, stdout, log); err != nil {
		log.Error("devdb failed", "error", err)
		return exitError
	}
	return exitOK
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
