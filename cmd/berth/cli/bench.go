package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/berthd/berth/cmd/berth-load/load"
)

const benchHelp = `Usage: berth bench COMMAND [flags]

The load tool (also built as cmd/berth-load): seeds and times any Placement
endpoint, Berth or OpenStack Placement. berth's --url and --token (or
BERTH_URL, BERTH_TOKEN) are passed on; flags after COMMAND override them.
On a terminal the load tool draws a progress bar on standard error.

Examples:
  berth seed --nodes 1000
  berth bench claims --clients 16 --duration 30s --resources VCPU:4,MEMORY_MB:16384
  berth bench claims --mode claims --clients 64 --claims 5000      # POST /claims
  berth bench candidates --iterations 10 --json berth.json --label berth
  berth bench compare berth=berth.json placement=placement.json

`

func benchCommands() []*command {
	return []*command{
		{
			name:    "bench",
			args:    "COMMAND [flags]",
			summary: "The load tool: seed, time candidate queries, concurrent claims, overcommit check",
			example: "berth bench claims --clients 16 --duration 30s",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if len(args) == 0 {
						fmt.Fprint(e.io.Stderr, benchHelp)
						loadHelp(e.ctx, e.io.Stderr, "-h")
						return exitCode(2)
					}
					if isHelp(args[0]) {
						fmt.Fprint(e.io.Stdout, benchHelp)
						loadHelp(e.ctx, e.io.Stdout, "-h")
						return nil
					}
					return runLoad(e, args)
				}
			},
		},
		{
			name:    "seed",
			args:    "[--nodes N] [flags]",
			summary: "Create N benchmark compute nodes (berth bench seed)",
			example: "berth seed --nodes 1000 --workers 8",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if len(args) > 0 && isHelp(args[0]) {
						fmt.Fprint(e.io.Stdout, "Usage: berth seed [flags]\n\n"+
							"Creates --nodes flat compute nodes (VCPU, MEMORY_MB, DISK_GB), 1 in 10 with\n"+
							"CUSTOM_BENCH_TRAIT, in --aggregates aggregates. Rerunning completes a partial seed.\n\n"+
							"Example:\n  berth seed --nodes 1000\n\n")
						loadHelp(e.ctx, e.io.Stdout, "seed", "-h")
						return nil
					}
					return runLoad(e, append([]string{"seed"}, args...))
				}
			},
		},
	}
}

// loadHelp prints the load tool's help for args, naming it as berth does.
func loadHelp(ctx context.Context, w io.Writer, args ...string) {
	var b bytes.Buffer
	load.Main(ctx, args, io.Discard, &b)
	s := strings.ReplaceAll(b.String(), "berth-load seed", "berth seed")
	io.WriteString(w, strings.ReplaceAll(s, "berth-load", "berth bench"))
}

func isHelp(s string) bool { return s == "-h" || s == "--help" || s == "-help" || s == "help" }

// runLoad runs the load tool with berth's endpoint and token put before
// the command's own flags (so those win).
func runLoad(e *env, args []string) error {
	cmd := args[0]
	if cmd != "compare" && !hasHelp(args[1:]) {
		endpoint := e.g.url
		if u, err := EndpointURL(endpoint); err == nil {
			endpoint = u // the load tool takes a URL only
		}
		args = append([]string{cmd, "--url", endpoint, "--token", e.g.token}, args[1:]...)
	}
	// The load tool draws its own progress bar when its log writer is a
	// terminal (an *os.File), so standard error is handed over as is.
	// It names itself berth-load in its report.
	var out bytes.Buffer
	code := load.Main(e.ctx, args, &out, e.io.Stderr)
	io.WriteString(e.io.Stdout, strings.ReplaceAll(out.String(), "berth-load ", "berth bench "))
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

func hasHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}
